// Accuracy of the vectorised math (backends/cpu/vecmath.h) through the public ops,
// on every instruction-set path this CPU can run. float32 results are compared with
// libm's double result (error in float ulps of the exact value, fractional), over
// log-uniform samples and edge inputs (±0, ±inf, NaN, subnormals, huge values,
// poles, C99 Annex F cases of pow and atan2); float64 results with long double
// libm. The bounds are the documented ones (docs/PERFORMANCE.md, "Vectorised
// math"); TSR_VECMATH_REPORT=1 prints the measured maxima. Then the float sums:
// pairwise accuracy on adversarial inputs, and identical bits on both paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tsr/backends/cpu/vecmath.h"
#include "tsr/tsr.h"

using namespace tsr;
using detail::cpu::CpuIsa;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Switches the kernels for one test and restores the previous choice.
struct IsaScope {
  CpuIsa prev;
  explicit IsaScope(CpuIsa isa) : prev(detail::cpu::set_cpu_isa(isa)) {}
  ~IsaScope() { detail::cpu::set_cpu_isa(prev); }
};

// The paths to test: baseline always, AVX2 where the CPU has it.
std::vector<CpuIsa> isas() {
  std::vector<CpuIsa> v{CpuIsa::Baseline};
  if (detail::cpu::cpu_supports(CpuIsa::Avx2)) v.push_back(CpuIsa::Avx2);
  return v;
}

bool report() {
  const char* e = std::getenv("TSR_VECMATH_REPORT");
  return e && *e == '1';
}

// Error of `got` against the exact value `ref` in units of the last place of the
// result type F at ref (a subnormal's ulp below F's normal range). Infinities and
// NaN must match exactly (else: infinite error); a zero ref must keep its sign.
// Beyond F's largest finite value the ulp is the top binade's, and an infinite
// `got` counts as 2^(max_exponent) there, so a rounding at the overflow threshold
// measures as a fraction of an ulp rather than as a mismatch.
template <typename F, typename R>
double ulp_error(F got, R ref) {
  using L = std::numeric_limits<F>;
  if (std::isnan(ref)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  const R top = std::ldexp(R(1), L::max_exponent);
  if (std::isinf(ref)) return got == ref ? 0 : INFINITY;
  if (std::isinf(static_cast<F>(ref)) && got == static_cast<F>(ref)) return 0;  // overflow
  if (ref == 0 && got == 0) return std::signbit(ref) == std::signbit(got) ? 0 : INFINITY;
  R g = std::isinf(got) ? std::copysign(top, R(got)) : R(got);
  R a = std::fabs(ref);
  int e = a == 0 ? L::min_exponent : std::ilogb(a) + 1;
  e = std::max(e, L::min_exponent);
  e = std::min(e, L::max_exponent);
  R ulp = std::ldexp(R(1), e - L::digits);
  return static_cast<double>(std::fabs(g - ref) / ulp);
}

// ---- inputs -----------------------------------------------------------------

struct Sampler {
  std::mt19937_64 rng{12345};
  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng); }
  // |x| log-uniform in [lo, hi], random sign if `sign`.
  double log_uniform(double lo, double hi, bool sign) {
    double v = std::exp(uniform(std::log(lo), std::log(hi)));
    return sign && (rng() & 1) ? -v : v;
  }
};

template <typename F>
std::vector<F> edge_values() {
  using L = std::numeric_limits<F>;
  std::vector<F> v;
  for (F s : {F(1), F(-1)})
    for (F m : {F(0),
                L::infinity(),
                L::denorm_min(),
                F(3) * L::denorm_min(),
                L::min(),
                F(0.99) * L::min(),
                L::max(),
                F(1),
                F(0.5),
                F(2),
                F(1) + L::epsilon(),
                F(1) - L::epsilon() / 2,
                L::epsilon(),
                F(1e-10),
                F(10),
                F(20),
                F(88.72),
                F(89),
                F(103.9),
                F(104),
                F(709.7),
                F(710),
                F(1e4),
                F(1e10),
                F(1e30),
                F(1.5707963267948966),
                F(3.141592653589793),
                F(6.283185307179586),
                F(1.0e5) * F(3.141592653589793)})
      v.push_back(s * m);
  v.push_back(L::quiet_NaN());
  v.push_back(-L::quiet_NaN());
  return v;
}

// Samples of a domain for result type F: `ranges` of (lo, hi, log-uniform, signed).
struct Range {
  double lo, hi;
  bool log, sign;
};

template <typename F>
std::vector<F> samples(const std::vector<Range>& ranges, int per_range) {
  Sampler s;
  std::vector<F> v = edge_values<F>();
  for (const Range& r : ranges)
    for (int i = 0; i < per_range; ++i) {
      double x = r.log ? s.log_uniform(r.lo, r.hi, r.sign) : s.uniform(r.lo, r.hi);
      v.push_back(static_cast<F>(x));
    }
  return v;
}

// ---- references -------------------------------------------------------------

// erf^-1 in long double by bisection of erf (erfc in the tail, where 1 - y is
// exact): slow and independent of the kernel's method.
long double erfinv_ref(long double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return NAN;
  if (std::fabs(y) == 1) return std::copysign(INFINITY, y);
  // Below 1e-20 the series y sqrt(pi) / 2 (1 + pi y^2 / 12) is exact to 1e-40, and
  // bisection from [0, 30] would need more than 200 steps to reach subnormals.
  if (std::fabs(y) < 1e-20L) return y * 0.88622692545275801364908374167057259L;
  long double ay = std::fabs(y), lo = 0, hi = 30;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    bool below = mid > 1 ? std::erfc(mid) > 1 - ay : std::erf(mid) < ay;
    (below ? lo : hi) = mid;
  }
  return std::copysign((lo + hi) / 2, y);
}

long double logistic_ref(long double x) { return 1 / (1 + std::exp(-x)); }

struct UnaryCase {
  const char* name;
  Array (*op)(const Array&);
  long double (*ref)(long double);  // evaluated in double for float32, long double for float64
  std::vector<Range> ranges;
  double bound_f32, bound_f64;  // max ulp error allowed (the documented figure)
};

#define TSR_REF(fn) [](long double x) -> long double { return std::fn(x); }

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"exp", tsr::exp, TSR_REF(exp), {{-110, 90, false, false}, {1e-30, 1, true, true}}, 1.0, 1.0},
      {"exp2",
       tsr::exp2,
       TSR_REF(exp2),
       {{-160, 130, false, false}, {1e-30, 1, true, true}},
       1.0,
       1.0},
      {"expm1",
       tsr::expm1,
       TSR_REF(expm1),
       {{-20, 90, false, false}, {1e-30, 1, true, true}},
       1.0,
       1.0},
      {"log",
       tsr::log,
       TSR_REF(log),
       {{1e-45, 3e38, true, false}, {0.5, 2, false, false}},
       1.0,
       1.0},
      {"log1p",
       tsr::log1p,
       TSR_REF(log1p),
       {{1e-30, 1, true, true}, {1e-7, 1e30, true, false}, {-1, -0.5, false, false}},
       1.0,
       1.0},
      {"tanh",
       tsr::tanh,
       TSR_REF(tanh),
       // float: dense around 0.625, where the kernel switches formula
       {{1e-40, 100, true, true}, {-4, 4, false, false}, {0.55, 0.7, false, false}},
       1.5,  // float: own formula, 1.3 ulp just above 0.625 (SLEEF's: 1.0, 1.9x slower)
       1.0},
      {"logistic",
       tsr::logistic,
       logistic_ref,
       {{-110, 110, false, false}, {1e-30, 50, true, true}},
       2.0,
       2.0},
      {"erf", tsr::erf, TSR_REF(erf), {{1e-40, 10, true, true}}, 1.0, 1.0},
      {"erf_inv",
       tsr::erfinv,
       erfinv_ref,
       {{1e-40, 1, true, true}, {-1, 1, false, false}, {0.9, 1, false, true}},
       0.6,
       2.0},  // double: Halley steps on SLEEF's erf (1 ulp) leave 1.4
      {"sin",
       tsr::sin,
       TSR_REF(sin),
       {{1e-40, 1e4, true, true}, {1e4, 1e38, true, true}},
       1.0,
       1.0},
      {"cos",
       tsr::cos,
       TSR_REF(cos),
       {{1e-40, 1e4, true, true}, {1e4, 1e38, true, true}},
       1.0,
       1.0},
      {"tan",
       tsr::tan,
       TSR_REF(tan),
       {{1e-40, 1e4, true, true}, {1e4, 1e38, true, true}},
       1.0,
       1.0},
      {"sqrt", tsr::sqrt, TSR_REF(sqrt), {{1e-45, 3e38, true, false}}, 0.5, 0.5},
      {"rsqrt",
       tsr::rsqrt,
       [](long double x) -> long double { return 1 / std::sqrt(x); },
       {{1e-45, 3e38, true, false}},
       1.5,  // 1 / sqrt(x): two roundings, as the scalar loop before
       1.5},
      {"floor", tsr::floor, TSR_REF(floor), {{1e-3, 1e9, true, true}}, 0, 0},
      {"ceil", tsr::ceil, TSR_REF(ceil), {{1e-3, 1e9, true, true}}, 0, 0},
      {"round",
       tsr::round,
       TSR_REF(nearbyint),
       {{1e-3, 1e9, true, true}, {-8, 8, false, false}},
       0,
       0},
  };
  return cases;
}

// Max ulp error of one op over its samples, on the path in use; fails on a
// mismatched NaN / infinity / zero sign at once.
template <typename F>
double max_error(const UnaryCase& c, const std::vector<F>& xs, F* worst_x) {
  std::vector<F> got = c.op(array(xs, {static_cast<int64_t>(xs.size())})).template to_vector<F>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double e;
    if constexpr (std::is_same_v<F, float>) {
      e = ulp_error<float, double>(got[i], static_cast<double>(c.ref(xs[i])));
    } else {
      e = ulp_error<double, long double>(got[i], c.ref(xs[i]));
    }
    EXPECT_TRUE(std::isfinite(e)) << c.name << "(" << xs[i] << ") = " << got[i] << ", want "
                                  << static_cast<double>(c.ref(xs[i]));
    if (!(e <= worst)) {
      worst = e;
      *worst_x = xs[i];
    }
  }
  return worst;
}

template <typename F>
void check_unary(int per_range) {
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    for (const UnaryCase& c : unary_cases()) {
      std::vector<F> xs = samples<F>(c.ranges, per_range);
      F at = 0;
      double e = max_error(c, xs, &at);
      double bound = std::is_same_v<F, float> ? c.bound_f32 : c.bound_f64;
      EXPECT_LE(e, bound) << c.name << " " << detail::cpu::cpu_isa_name(isa) << " at x = " << at;
      if (report())
        std::printf("[vecmath] %-8s %-8s %s max %.3f ulp (x = %.9g)\n",
                    detail::cpu::cpu_isa_name(isa), c.name,
                    std::is_same_v<F, float> ? "f32" : "f64", e, static_cast<double>(at));
    }
  }
}

TEST(VecMath, UnaryFloat32WithinUlpBounds) { check_unary<float>(6000); }

TEST(VecMath, UnaryFloat64WithinUlpBounds) { check_unary<double>(1500); }

// ---- pow and atan2 ----------------------------------------------------------

struct BinaryCase {
  const char* name;
  Array (*op)(const ArrayLike&, const ArrayLike&);
  long double (*ref)(long double, long double);
  double bound;
};

// The grid of special operands (C99 Annex F lists pow's and atan2's cases over
// these) crossed with itself, then random pairs.
template <typename F>
void binary_inputs(const char* name, std::vector<F>* a, std::vector<F>* b) {
  using L = std::numeric_limits<F>;
  std::vector<F> special;
  for (F s : {F(1), F(-1)})
    for (F m : {F(0), L::infinity(), F(1), F(0.5), F(2), F(3), F(2.5), F(0.75), F(1.5), L::max(),
                L::denorm_min(), L::min(), F(1) + L::epsilon(), F(1) - L::epsilon() / 2})
      special.push_back(s * m);
  special.push_back(L::quiet_NaN());
  for (F x : special)
    for (F y : special) a->push_back(x), b->push_back(y);
  Sampler s;
  for (int i = 0; i < 20000; ++i) {
    if (std::string(name) == "pow") {
      // Positive bases over the range, exponents that keep many results finite;
      // negative bases with integer exponents.
      F x = static_cast<F>(s.log_uniform(1e-30, 1e30, false));
      F y = static_cast<F>(s.uniform(-40, 40));
      if (i % 4 == 0) x = static_cast<F>(s.uniform(-10, 10)), y = std::round(y);
      if (i % 4 == 1)
        x = static_cast<F>(s.uniform(0.5, 2)), y = static_cast<F>(s.uniform(-300, 300));
      a->push_back(x), b->push_back(y);
    } else {
      a->push_back(static_cast<F>(s.log_uniform(1e-40, 1e38, true)));
      b->push_back(static_cast<F>(s.log_uniform(1e-40, 1e38, true)));
    }
  }
}

template <typename F>
void check_binary(const BinaryCase& c) {
  std::vector<F> a, b;
  binary_inputs(c.name, &a, &b);
  auto n = static_cast<int64_t>(a.size());
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    std::vector<F> got = c.op(array(a, {n}), array(b, {n})).template to_vector<F>();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      double e;
      if constexpr (std::is_same_v<F, float>) {
        e = ulp_error<float, double>(got[i], static_cast<double>(c.ref(a[i], b[i])));
      } else {
        e = ulp_error<double, long double>(got[i], c.ref(a[i], b[i]));
      }
      EXPECT_TRUE(std::isfinite(e)) << c.name << "(" << a[i] << ", " << b[i] << ") = " << got[i]
                                    << ", want " << static_cast<double>(c.ref(a[i], b[i]));
      if (!(e <= worst)) worst = e, at = i;
    }
    EXPECT_LE(worst, c.bound) << c.name << " " << detail::cpu::cpu_isa_name(isa) << " at (" << a[at]
                              << ", " << b[at] << ")";
    if (report())
      std::printf("[vecmath] %-8s %-8s %s max %.3f ulp (at %.9g, %.9g)\n",
                  detail::cpu::cpu_isa_name(isa), c.name, std::is_same_v<F, float> ? "f32" : "f64",
                  worst, static_cast<double>(a[at]), static_cast<double>(b[at]));
    // A broadcast scalar operand takes the same path as a full one.
    std::vector<F> row =
        c.op(array(a, {n}), array(std::vector<F>{b[7]}, {1})).template to_vector<F>();
    for (size_t i = 0; i < a.size(); i += 97) {
      F want = c.op(array(std::vector<F>{a[i]}, {1}), array(std::vector<F>{b[7]}, {1}))
                   .template to_vector<F>()[0];
      EXPECT_TRUE(row[i] == want || (std::isnan(row[i]) && std::isnan(want))) << c.name << " " << i;
    }
  }
}

const BinaryCase kPow{"pow", tsr::power,
                      [](long double x, long double y) -> long double { return std::pow(x, y); },
                      1.0};
const BinaryCase kAtan2{
    "atan2", tsr::atan2,
    [](long double y, long double x) -> long double { return std::atan2(y, x); }, 1.0};

TEST(VecMath, PowFloat32) { check_binary<float>(kPow); }
TEST(VecMath, Atan2Float32) { check_binary<float>(kAtan2); }
TEST(VecMath, PowFloat64) { check_binary<double>(kPow); }
TEST(VecMath, Atan2Float64) { check_binary<double>(kAtan2); }

// ---- both paths, large arrays, half types -----------------------------------

// Results split between kernel threads and vector tails equal one call per element.
TEST(VecMath, LargeArraysMatchSmallCalls) {
  const int64_t n = (int64_t{1} << 18) + 13;  // above the kernels' threading threshold
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i)) * 5;
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    std::vector<float> y = tanh(array(x, {n})).to_vector<float>();
    for (int64_t i = 0; i < n; i += 4099)
      EXPECT_EQ(y[i], tanh(array(std::vector<float>{x[i]}, {1})).to_vector<float>()[0]) << i;
    EXPECT_EQ(y[n - 1], tanh(array(std::vector<float>{x[n - 1]}, {1})).to_vector<float>()[0]);
  }
}

// float16 computes through the float kernels and rounds once.
TEST(VecMath, HalfTypesComputeThroughFloat) {
  std::vector<float> x;
  for (int i = -40; i <= 40; ++i) x.push_back(static_cast<float>(i) / 8);
  Array h = array(x, {static_cast<int64_t>(x.size())}).astype(float16);
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    std::vector<float> got = tanh(h).astype(float32).to_vector<float>();
    std::vector<float> want =
        tanh(h.astype(float32)).astype(float16).astype(float32).to_vector<float>();
    EXPECT_EQ(got, want);
  }
}

TEST(VecMath, EnvironmentSelectsBaseline) {
  const char* e = std::getenv("TSR_CPU_ISA");
  if (e && std::string(e) == "baseline") {
    EXPECT_EQ(detail::cpu::cpu_isa(), CpuIsa::Baseline);
  } else {
    EXPECT_EQ(detail::cpu::cpu_isa(),
              detail::cpu::cpu_supports(CpuIsa::Avx2) ? CpuIsa::Avx2 : CpuIsa::Baseline);
  }
  if (!detail::cpu::cpu_supports(CpuIsa::Avx2)) {
    EXPECT_THROW(detail::cpu::set_cpu_isa(CpuIsa::Avx2), ValueError);
  }
}

// ---- sums -------------------------------------------------------------------

long double exact_sum(const std::vector<float>& v) {
  long double s = 0;
  for (float f : v) s += f;
  return s;
}

// |error| of tsr::sum against the long double sum, over eps * sum|x|.
double relative_error(const std::vector<float>& v) {
  float got = sum(array(v, {static_cast<int64_t>(v.size())})).item<float>();
  long double abs = 0;
  for (float f : v) abs += std::fabs(f);
  return static_cast<double>(std::fabs(got - exact_sum(v)) / (abs * FLT_EPSILON));
}

double naive_relative_error(const std::vector<float>& v) {
  float s = 0;
  for (float f : v) s += f;
  long double abs = 0;
  for (float f : v) abs += std::fabs(f);
  return static_cast<double>(std::fabs(s - exact_sum(v)) / (abs * FLT_EPSILON));
}

// Adversarial inputs for a running sum: many positive terms (error grows with
// n), a large head then small terms (absorbed), and exact cancellation.
std::vector<std::vector<float>> adversarial_sums() {
  std::vector<std::vector<float>> out;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t n : {int64_t{1000}, int64_t{1} << 16, (int64_t{1} << 22) + 5}) {
    std::vector<float> v(n);
    for (auto& f : v) f = u(rng);
    out.push_back(v);
  }
  std::vector<float> head(1 << 20, 1.0f / (1 << 24));
  head[0] = 1;
  out.push_back(head);
  std::vector<float> cancel;
  for (int i = 0; i < 100000; ++i)
    cancel.push_back(u(rng) * 1e6f), cancel.push_back(-cancel.back());
  out.push_back(cancel);
  return out;
}

TEST(VecMath, Float32SumIsPairwiseAccurate) {
  auto cases = adversarial_sums();
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    for (const auto& v : cases) {
      // Our bound: 8 terms per lane, 5 levels of lanes, log2(n / 256) + 1 of leaves.
      double n = static_cast<double>(v.size());
      double bound = 7 + 5 + std::max(0.0, std::ceil(std::log2(n / 256))) + 2;
      double e = relative_error(v);
      EXPECT_LE(e, bound) << "n = " << v.size();
      if (v.size() >= (size_t{1} << 16)) {
        EXPECT_LT(e, naive_relative_error(v) / 4 + 1) << "n = " << v.size();
      }
    }
    // Exact past 2^24, where a float running sum of ones stops.
    EXPECT_EQ(sum(ones({(int64_t{1} << 24) + 1024})).item<float>(), 16778240.0f);
  }
}

TEST(VecMath, SumsAreIdenticalOnBothPaths) {
  if (isas().size() < 2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0, 1);
  for (int64_t n : {1, 7, 31, 32, 255, 256, 257, 1000, 100003}) {
    std::vector<float> v(n);
    for (auto& f : v) f = g(rng) * 100;
    std::vector<double> d(v.begin(), v.end());
    Array x = array(v, {n}), xd = array(d, {n});
    Array m = array(v, {1, n});
    float base, base_max;
    double base_d;
    {
      IsaScope s(CpuIsa::Baseline);
      base = sum(x).item<float>();
      base_d = sum(xd).item<double>();
      base_max = max(m, 1).to_vector<float>()[0];
    }
    IsaScope s(CpuIsa::Avx2);
    EXPECT_EQ(sum(x).item<float>(), base) << n;
    EXPECT_EQ(sum(xd).item<double>(), base_d) << n;
    EXPECT_EQ(max(m, 1).to_vector<float>()[0], base_max) << n;
  }
}

TEST(VecMath, MaxMinPropagateNaN) {
  for (CpuIsa isa : isas()) {
    IsaScope scope(isa);
    for (int64_t n : {5, 64, 1000}) {
      for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> v(n);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 17) - 8;
        EXPECT_EQ(max(array(v, {n})).item<float>(), *std::max_element(v.begin(), v.end()));
        EXPECT_EQ(min(array(v, {n})).item<float>(), -8.0f);
        v[pos] = kNaN;
        EXPECT_TRUE(std::isnan(max(array(v, {n})).item<float>())) << n << " " << pos;
        EXPECT_TRUE(std::isnan(min(array(v, {n})).item<float>())) << n << " " << pos;
      }
    }
    std::vector<float> neg(40, -kInf);
    EXPECT_EQ(max(array(neg, {40})).item<float>(), -kInf);
    std::vector<float> s{1.0f, kInf, -kInf, 2.0f};
    EXPECT_TRUE(std::isnan(sum(array(s, {4})).item<float>()));
  }
}

}  // namespace
