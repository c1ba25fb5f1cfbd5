// float16 / bfloat16 for every elementwise, reduction and cumulative op and the
// composites users call on floats (issue 4 item 6). Each case computes the op on
// half inputs and compares it with the float32 op on the same (already
// half-rounded) inputs, rounded to the half type: bit-exact for ops computed in
// float and rounded once, within one half ulp for float32-accumulating reductions,
// and within a few half epsilons for composites that JAX itself evaluates step by
// step in the half dtype (softmax, logsumexp, ...). Every case runs eagerly, under
// jit, and sharded P("x") on a 2x4 mesh. Then dtype promotion and special values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using Fn = std::function<Array(const std::vector<Array>&)>;

// Input domains.
enum class Dom { Any, Pos, Unit, Small };

// How close the half result must be to the rounded float32 one.
struct Tol {
  int ulps = 0;    // half ulps (0: identical bits, so the sign of zero too)
  double eps = 0;  // or: |got - want| <= eps * half epsilon * max(1, |want|)
};
constexpr Tol kExact{0, 0};
constexpr Tol kOneUlp{1, 0};  // reductions: float32 partial sums in another order
constexpr Tol kSteps{0, 4};   // composites with half-rounded steps (as JAX)

struct Case {
  std::string name;
  int nin;
  Dom dom;
  Tol tol;
  Fn fn;
};

// 64 values for an {8, 8} input: special values of the domain, then a fixed
// pseudo-random fill.
std::vector<float> values(DType dt, Dom dom, int seed) {
  bool f16 = dt == DType::Float16;
  float sub = f16 ? 5.9604645e-8f : 9.2e-41f;  // a subnormal of the type
  float big = f16 ? 60000.f : 3.0e38f;
  std::vector<float> v;
  switch (dom) {
    case Dom::Any:
      v = {kNaN, kInf, -kInf, -0.f, 0.f,  sub,   -3 * sub, 1e-5f, big, -big,
           2049, 2051, 257,   259,  0.5f, -2.5f, 1,        -1,    3,   65520};
      break;
    case Dom::Pos:
      v = {kNaN, kInf, 0.f, sub, 3 * sub, 1e-5f, big, 2049, 257, 0.5f, 1, 3, 100};
      break;
    case Dom::Unit:
      v = {kNaN, 1, -1, -0.f, 0.f, sub, 0.999f, -0.9999f, 1.5f, 0.5f, -0.25f};
      break;
    case Dom::Small:
      v = {kNaN, -0.f, 0.f, sub, 0.5f, -1.5f, 2, -2, 1};
      break;
  }
  // Rotate so that the inputs of a binary op pair different specials.
  std::rotate(v.begin(), v.begin() + (3 * seed) % static_cast<int>(v.size()), v.end());
  uint32_t s = 12345u + 977u * static_cast<uint32_t>(seed);
  while (v.size() < 64) {
    s = s * 1664525u + 1013904223u;
    float u = static_cast<float>(s >> 8) / 16777216.f;  // [0, 1)
    switch (dom) {
      case Dom::Any:
        v.push_back(16 * u - 8);
        break;
      case Dom::Pos:
        v.push_back(10 * u + 1e-3f);
        break;
      case Dom::Unit:
        v.push_back(2 * u - 1);
        break;
      case Dom::Small:
        v.push_back(4 * u - 2);
        break;
    }
  }
  return v;
}

std::vector<uint16_t> bits_of(const Array& a) {
  std::vector<uint16_t> b;
  if (a.dtype() == DType::Float16) {
    for (auto h : a.to_vector<float16_t>()) b.push_back(h.bits);
  } else {
    for (auto h : a.to_vector<bfloat16_t>()) b.push_back(h.bits);
  }
  return b;
}

bool nan_bits(uint16_t b, DType dt) {
  return dt == DType::Float16 ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff)
                              : (b & 0x7f80) == 0x7f80 && (b & 0x7f);
}

// Position on the number line in ulps (-0 and +0 both 0).
int64_t ordinal(uint16_t b) { return (b & 0x8000) ? -int64_t(b & 0x7fff) : int64_t(b); }

double half_eps(DType dt) { return dt == DType::Float16 ? 0x1p-10 : 0x1p-7; }

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

void expect_match(const Array& got, const Array& want, Tol tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (!is_half(want.dtype())) {  // bool, int32, float32: exact
    auto g = got.to_vector<double>(), w = want.to_vector<double>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
      } else {
        EXPECT_EQ(g[i], w[i]) << what << " at " << i;
      }
    }
    return;
  }
  DType dt = want.dtype();
  auto g = bits_of(got), w = bits_of(want);
  auto gf = got.to_vector<double>(), wf = want.to_vector<double>();
  int64_t worst = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (nan_bits(w[i], dt) || nan_bits(g[i], dt)) {
      EXPECT_TRUE(nan_bits(w[i], dt) && nan_bits(g[i], dt))
          << what << " at " << i << ": got " << gf[i] << ", want " << wf[i];
      continue;
    }
    int64_t d = std::abs(ordinal(g[i]) - ordinal(w[i]));
    worst = std::max(worst, d);
    if (tol.eps > 0) {
      if (std::isinf(wf[i])) {
        EXPECT_EQ(gf[i], wf[i]) << what << " at " << i;
      } else {
        EXPECT_LE(std::fabs(gf[i] - wf[i]),
                  tol.eps * half_eps(dt) * std::max(1.0, std::fabs(wf[i])))
            << what << " at " << i << ": got " << gf[i] << ", want " << wf[i];
      }
    } else if (tol.ulps == 0) {
      EXPECT_EQ(g[i], w[i]) << what << " at " << i << ": got " << gf[i] << ", want " << wf[i];
    } else {
      EXPECT_LE(d, tol.ulps) << what << " at " << i << ": got " << gf[i] << ", want " << wf[i];
    }
  }
  if (worst > 0)
    std::printf("[ half ulps ] %s: %lld ulp\n", what.c_str(), static_cast<long long>(worst));
}

const Mesh& mesh() {
  static const Mesh m = make_mesh({2, 4}, {"x", "y"});
  return m;
}

void run_case(const Case& c, DType dt) {
  std::string what = c.name + " " + dtype_name(dt);
  std::vector<Array> h, f;
  for (int k = 0; k < c.nin; ++k) {
    Array a = array<float>(values(dt, c.dom, k), {8, 8}).astype(dt);
    h.push_back(a);
    f.push_back(a.astype(float32));
  }
  Array want = c.fn(f);
  if (want.dtype() == DType::Float32) want = want.astype(dt);

  expect_match(c.fn(h), want, c.tol, what + " (eager)");
  auto j = jit([fn = c.fn](const std::vector<Array>& a) { return std::vector<Array>{fn(a)}; });
  expect_match(j(h)[0], want, c.tol, what + " (jit)");
  MeshScope scope(mesh());
  std::vector<Array> hs;
  for (const Array& a : h) hs.push_back(device_put(a, P("x")));
  expect_match(c.fn(hs), want, c.tol, what + " (sharded P(x))");
}

Case un(const std::string& name, Array (*f)(const Array&), Dom dom = Dom::Any) {
  return {name, 1, dom, kExact, [f](const std::vector<Array>& a) { return f(a[0]); }};
}
Case bin(const std::string& name, Array (*f)(const ArrayLike&, const ArrayLike&),
         Dom dom = Dom::Any) {
  return {name, 2, dom, kExact, [f](const std::vector<Array>& a) { return f(a[0], a[1]); }};
}
Case one(const std::string& name, Dom dom, Tol tol, std::function<Array(const Array&)> f) {
  return {name, 1, dom, tol, [f](const std::vector<Array>& a) { return f(a[0]); }};
}

std::vector<Case> elementwise_cases() {
  return {
      un("neg", neg),
      un("abs", abs),
      un("sign", sign),
      un("floor", floor),
      un("ceil", ceil),
      un("round", round),
      un("exp", exp),
      un("exp2", exp2),
      un("log", log, Dom::Pos),
      un("log1p", log1p, Dom::Pos),
      un("expm1", expm1),
      un("sqrt", sqrt, Dom::Pos),
      un("rsqrt", rsqrt, Dom::Pos),
      un("square", square),
      un("sin", sin),
      un("cos", cos),
      un("tan", tan, Dom::Small),
      un("tanh", tanh),
      un("logistic", logistic),
      un("sigmoid", sigmoid),
      un("erf", erf),
      un("erf_inv", erfinv, Dom::Unit),
      un("is_finite", isfinite),
      one("integer_pow 2", Dom::Any, kExact, [](const Array& x) { return integer_pow(x, 2); }),
      one("integer_pow 3", Dom::Any, kExact, [](const Array& x) { return integer_pow(x, 3); }),
      one("integer_pow -2", Dom::Any, kExact, [](const Array& x) { return integer_pow(x, -2); }),
      one("integer_pow 0", Dom::Any, kExact, [](const Array& x) { return integer_pow(x, 0); }),
      bin("add", add),
      bin("sub", subtract),
      bin("mul", multiply),
      bin("div", divide),
      bin("rem", rem),
      bin("pow", power),
      bin("pow pos", power, Dom::Pos),
      bin("max", maximum),
      bin("min", minimum),
      bin("atan2", atan2),
      bin("eq", equal),
      bin("ne", not_equal),
      bin("lt", less),
      bin("le", less_equal),
      bin("gt", greater),
      bin("ge", greater_equal),
      // Weak scalars (exact in both half types, so converting them first is exact).
      one("x + 1.5", Dom::Any, kExact, [](const Array& x) { return x + 1.5; }),
      one("2 - x", Dom::Any, kExact, [](const Array& x) { return 2 - x; }),
      one("x / 3.0", Dom::Any, kExact, [](const Array& x) { return x / 3.0; }),
      one("x * 0.25", Dom::Any, kExact, [](const Array& x) { return x * 0.25; }),
      one("x < 0.5", Dom::Any, kExact, [](const Array& x) { return x < 0.5; }),
      // Broadcast rows and columns (the inner loop's scalar variants).
      {"mul row", 2, Dom::Any, kExact,
       [](const std::vector<Array>& a) { return a[0] * max(a[1], 0, {.keepdims = true}); }},
      {"sub column", 2, Dom::Any, kExact,
       [](const std::vector<Array>& a) { return a[0] - min(a[1], 1, {.keepdims = true}); }},
      {"where", 2, Dom::Any, kExact,
       [](const std::vector<Array>& a) { return where(a[0] > a[1], a[0], a[1]); }},
      {"select_n int32", 3, Dom::Any, kExact,
       [](const std::vector<Array>& a) {
         Array which = astype(a[0] > 0, int32) + astype(a[1] > 0, int32);
         return select_n(which, {a[0], a[1], a[2]});
       }},
      {"clamp arrays", 3, Dom::Any, kExact,
       [](const std::vector<Array>& a) { return clamp(a[1], a[0], a[2]); }},
      one("clamp scalars", Dom::Any, kExact, [](const Array& x) { return clamp(-1.5, x, 2.5); }),
      one("clip", Dom::Any, kExact, [](const Array& x) { return clip(x, -1.0, 1.0); }),
      // isclose rounds rtol/atol to the half type (as jnp), so only inputs away from
      // the threshold compare with float32 here; HalfSpecials checks the threshold.
      bin("isclose", [](const ArrayLike& x, const ArrayLike& y) { return isclose(x, y); }),
      // The default posinf is the half type's own max (HalfSpecials).
      one("nan_to_num", Dom::Any, kExact,
          [](const Array& x) { return nan_to_num(x, 7.0, 100.0, -100.0); }),
  };
}

std::vector<Case> reduction_cases() {
  return {
      one("sum all", Dom::Any, kOneUlp, [](const Array& x) { return sum(x); }),
      one("sum axis0", Dom::Any, kOneUlp, [](const Array& x) { return sum(x, 0); }),
      one("sum axis1", Dom::Any, kOneUlp, [](const Array& x) { return sum(x, 1); }),
      one("sum axis0 keepdims", Dom::Small, kOneUlp,
          [](const Array& x) { return sum(x, 0, {.keepdims = true}); }),
      one("prod axis1", Dom::Small, kOneUlp, [](const Array& x) { return prod(x, 1); }),
      one("prod axis0", Dom::Small, kOneUlp, [](const Array& x) { return prod(x, 0); }),
      one("max axis0", Dom::Any, kExact, [](const Array& x) { return max(x, 0); }),
      one("max all", Dom::Any, kExact, [](const Array& x) { return max(x); }),
      one("min axis1", Dom::Any, kExact, [](const Array& x) { return min(x, 1); }),
      one("argmax axis0", Dom::Any, kExact, [](const Array& x) { return argmax(x, 0); }),
      one("argmax axis1", Dom::Small, kExact, [](const Array& x) { return argmax(x, 1); }),
      one("argmin axis1", Dom::Any, kExact, [](const Array& x) { return argmin(x, 1); }),
      one("argmin flat", Dom::Pos, kExact, [](const Array& x) { return argmin(x); }),
      one("mean all", Dom::Small, kOneUlp, [](const Array& x) { return mean(x); }),
      one("mean axis0", Dom::Any, kOneUlp, [](const Array& x) { return mean(x, 0); }),
      one("var axis1", Dom::Small, kOneUlp, [](const Array& x) { return var(x, 1); }),
      one("var ddof1", Dom::Pos, kOneUlp, [](const Array& x) { return var(x, 0, 1); }),
      one("trace", Dom::Small, kOneUlp, [](const Array& x) { return trace(x); }),
      one("logsumexp axis1", Dom::Small, kSteps, [](const Array& x) { return logsumexp(x, 1); }),
      one("logsumexp axis0", Dom::Any, kSteps, [](const Array& x) { return logsumexp(x, 0); }),
      one("softmax", Dom::Small, kSteps, [](const Array& x) { return softmax(x); }),
      one("log_softmax axis0", Dom::Small, kSteps,
          [](const Array& x) { return log_softmax(x, 0); }),
      // Cumulative ops accumulate in float and round each output once.
      one("cumsum", Dom::Any, kExact, [](const Array& x) { return cumsum(x, 1); }),
      one("cumsum reverse", Dom::Small, kExact,
          [](const Array& x) { return cumsum(x, 1, {.reverse = true}); }),
      one("cumprod", Dom::Small, kExact, [](const Array& x) { return cumprod(x, 1); }),
      one("cummax", Dom::Any, kExact, [](const Array& x) { return cummax(x, 1); }),
      one("cummin reverse", Dom::Any, kExact,
          [](const Array& x) { return cummin(x, -1, {.reverse = true}); }),
      one("cumlogsumexp", Dom::Small, kExact, [](const Array& x) { return cumlogsumexp(x, 1); }),
      // Sorting compares as float; NaN last.
      one("sort", Dom::Any, kExact, [](const Array& x) { return sort(x, -1); }),
      one("sort descending", Dom::Any, kExact,
          [](const Array& x) { return sort(x, -1, true, true); }),
      one("argsort", Dom::Small, kExact, [](const Array& x) { return argsort(x, -1); }),
      one("top_k values", Dom::Any, kExact, [](const Array& x) { return top_k(x, 3).first; }),
      one("top_k indices", Dom::Any, kExact, [](const Array& x) { return top_k(x, 3).second; }),
      {"searchsorted", 2, Dom::Small, kExact,
       [](const std::vector<Array>& a) { return searchsorted(sort(max(a[0], 0)), a[1]); }},
  };
}

class HalfOps : public ::testing::TestWithParam<DType> {};

TEST_P(HalfOps, ElementwiseMatchRoundedFloat32) {
  for (const Case& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    run_case(c, GetParam());
  }
}

TEST_P(HalfOps, ReductionsMatchRoundedFloat32) {
  for (const Case& c : reduction_cases()) {
    SCOPED_TRACE(c.name);
    run_case(c, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Half, HalfOps, ::testing::Values(DType::Float16, DType::BFloat16),
                         [](const auto& i) { return std::string(dtype_name(i.param)); });

// ---- dtypes ---------------------------------------------------------------------------

std::string t(const Array& a) { return typeof(a).str(); }

TEST(HalfPromotion, FollowsJax) {
  Array h = zeros({4}, float16), b = zeros({4}, bfloat16);
  EXPECT_EQ(t(h + 1.5), "f16[4]");  // weak float scalar keeps the half type
  EXPECT_EQ(t(b * 2), "bf16[4]");   // so does a weak int
  EXPECT_EQ(t(h + b), "f32[4]");    // f16 + bf16 -> f32
  EXPECT_EQ(t(h + zeros({4})), "f32[4]");
  EXPECT_EQ(t(b + zeros({4}, int32)), "bf16[4]");  // int + half stays half
  EXPECT_EQ(t(h + zeros({4}, float64)), "f64[4]");
  EXPECT_EQ(t(h < b), "bool[4]");
  EXPECT_EQ(t(equal(b, 0.5)), "bool[4]");
  EXPECT_EQ(t(isfinite(h)), "bool[4]");
  EXPECT_EQ(t(argmax(b)), "i32[]");
  EXPECT_EQ(t(argmin(h, 0)), "i32[]");
  EXPECT_EQ(t(sum(h)), "f16[]");
  EXPECT_EQ(t(prod(b, 0)), "bf16[]");
  EXPECT_EQ(t(mean(h)), "f16[]");
  EXPECT_EQ(t(mean(b, 0, {.keepdims = true})), "bf16[1]");
  EXPECT_EQ(t(mean(h, {}, {.dtype = float32})), "f32[]");
  EXPECT_EQ(t(var(b)), "bf16[]");
  EXPECT_EQ(t(logsumexp(h)), "f16[]");
  EXPECT_EQ(t(softmax(b)), "bf16[4]");
  EXPECT_EQ(t(cumsum(h)), "f16[4]");
  EXPECT_EQ(t(cumlogsumexp(b)), "bf16[4]");
  EXPECT_EQ(t(sort(h)), "f16[4]");
  EXPECT_EQ(t(top_k(b, 2).second), "i32[2]");
  EXPECT_EQ(t(where(h > 0, h, 0.0)), "f16[4]");
  EXPECT_EQ(t(clip(b, 0.0, 1.0)), "bf16[4]");
  EXPECT_EQ(t(isclose(h, h)), "bool[4]");
  EXPECT_EQ(t(nan_to_num(b)), "bf16[4]");
  EXPECT_EQ(t(integer_pow(h, 3)), "f16[4]");
  EXPECT_EQ(t(erfinv(b)), "bf16[4]");
}

// ---- special values, checked against hand-computed bits -------------------------------

Array f16(std::vector<float> v) { return array<float>(v).astype(float16); }
Array bf16(std::vector<float> v) { return array<float>(v).astype(bfloat16); }
std::vector<uint16_t> b(const Array& a) { return bits_of(a); }
using Bits = std::vector<uint16_t>;

TEST(HalfSpecials, ConversionRoundsToNearestEven) {
  // f16: 65520 is halfway to the next (missing) binade step and overflows; 65519 does not.
  EXPECT_EQ(b(f16({65504, 65519, 65520, -65520, 1e6f})),
            (Bits{0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x7c00}));
  // Ties: 2049 -> 2048, 2051 -> 2052; subnormals 2^-24, 2^-25 -> 0, 3 * 2^-25 -> 2^-23.
  EXPECT_EQ(b(f16({2049, 2051, 0x1p-24f, 0x1p-25f, 0x3p-25f, -0.f})),
            (Bits{0x6800, 0x6802, 0x0001, 0x0000, 0x0002, 0x8000}));
  // bf16: 257 -> 256, 259 -> 260, FLT_MAX -> inf, a float subnormal stays subnormal.
  EXPECT_EQ(b(bf16({257, 259, 3.4028235e38f, 9.183549e-41f, -0.f})),
            (Bits{0x4380, 0x4382, 0x7f80, 0x0001, 0x8000}));
  EXPECT_TRUE(nan_bits(b(f16({kNaN}))[0], float16));
  EXPECT_TRUE(nan_bits(b(bf16({kNaN}))[0], bfloat16));
  // Half -> other types: exact widening; NaN -> 0 for ints; to bool is x != 0.
  EXPECT_EQ(f16({-2.75f, 65504, kNaN}).astype(int32).to_vector<int32_t>(),
            (std::vector<int32_t>{-2, 65504, 0}));
  EXPECT_EQ(bf16({kInf, -kInf}).astype(int32).to_vector<int32_t>(),
            (std::vector<int32_t>{2147483647, -2147483647 - 1}));
  EXPECT_EQ(bf16({-0.f, kNaN, 0x1p-130f}).astype(bool_).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(f16({0x1p-24f}).astype(float64).item<double>(), 0x1p-24);
}

TEST(HalfSpecials, WideSourcesRoundOnce) {
  // 1 + 2^-11 + 2^-40 lies just above an f16 tie: via float it would become the tie
  // 1 + 2^-11 and round down to 1.
  double d = 1 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(b(array<double>({d, -d}).astype(float16)), (Bits{0x3c01, 0xbc01}));
  double e = 1 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(b(array<double>({e}).astype(bfloat16)), (Bits{0x3f81}));
  // 2^24 + 2^16 + 1 (int32) is just above a bf16 tie; float would round it onto the tie.
  EXPECT_EQ(b(array<int32_t>({16842753}).astype(bfloat16)), (Bits{0x4b81}));
  EXPECT_EQ(b(array<int64_t>({16842753}).astype(bfloat16)), (Bits{0x4b81}));
  // Exact and overflowing cases, NaN and inf.
  EXPECT_EQ(b(array<double>({65520, 65519.99, 0x1p-25, 1e300, -1e300}).astype(float16)),
            (Bits{0x7c00, 0x7bff, 0x0000, 0x7c00, 0xfc00}));
  EXPECT_EQ(b(array<double>({1e300, 0x1p-140, 0.0}).astype(bfloat16)),
            (Bits{0x7f80, 0x0000, 0x0000}));
  EXPECT_TRUE(nan_bits(b(array<double>({std::nan("")}).astype(float16))[0], float16));
  EXPECT_EQ(b(array<int32_t>({65519, 65520, -70000}).astype(float16)),
            (Bits{0x7bff, 0x7c00, 0xfc00}));
}

TEST(HalfSpecials, ArithmeticRoundsOnceToNearestEven) {
  // 2048 + 1 is a tie (-> 2048); 2048 + 3 -> 2052; 256 + 1 in bf16 -> 256.
  EXPECT_EQ(b(f16({2048, 2048}) + f16({1, 3})), (Bits{0x6800, 0x6802}));
  EXPECT_EQ(b(bf16({256, 256}) + bf16({1, 3})), (Bits{0x4380, 0x4382}));
  // Subnormal results: 2^-24 / 2 ties to 0, 3 * 2^-24 / 2 ties to 2^-23.
  EXPECT_EQ(b(f16({0x1p-24f, 0x3p-24f, 0x1p-24f}) * f16({0.5f, 0.5f, 2})),
            (Bits{0x0000, 0x0002, 0x0002}));
  // Overflow to inf: 300^2, e^12, 60000 + 60000.
  EXPECT_EQ(b(square(f16({300, -300}))), (Bits{0x7c00, 0x7c00}));
  EXPECT_EQ(b(exp(f16({12}))), (Bits{0x7c00}));
  EXPECT_EQ(b(f16({60000}) + f16({60000})), (Bits{0x7c00}));
  // Signed zeros.
  EXPECT_EQ(b(neg(f16({0.f, -0.f}))), (Bits{0x8000, 0x0000}));
  EXPECT_EQ(b(sqrt(bf16({-0.f}))), (Bits{0x8000}));
  EXPECT_EQ(b(sign(f16({-0.f, -3, 5}))), (Bits{0x8000, 0xbc00, 0x3c00}));
  EXPECT_EQ(b(bf16({-0.f}) * 1), (Bits{0x8000}));
  EXPECT_EQ(b(round(f16({0.5f, 1.5f, 2.5f, -0.5f}))), (Bits{0x0000, 0x4000, 0x4000, 0x8000}));
  // NaN propagates through max/min and the comparisons are false.
  Array n = f16({kNaN, 1}), one = f16({1, kNaN});
  for (const Array& r :
       {maximum(n, one), minimum(n, one), maximum(one, n), clip(n + one, 0.0, 2.0)}) {
    auto v = b(r);
    EXPECT_TRUE(nan_bits(v[0], float16) && nan_bits(v[1], float16));
  }
  EXPECT_EQ(less(n, one).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(not_equal(n, n).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(isfinite(bf16({kInf, kNaN, 3e38f})).to_vector<bool>(),
            (std::vector<bool>{false, false, true}));
}

TEST(HalfSpecials, ThresholdsInTheHalfType) {
  // isclose: rtol = 1e-3 becomes the f16 0.0010004 (atol 1e-8 becomes 0).
  Array x = f16({1, 1, kInf, kNaN, 0}), y = f16({1 + 0x1p-10f, 1 + 0x1p-9f, kInf, kNaN, 1e-8f});
  EXPECT_EQ(isclose(x, y, 1e-3).to_vector<bool>(),
            (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(isclose(x, y, 1e-3, 1e-8, true).to_vector<bool>(),
            (std::vector<bool>{true, false, true, true, true}));
  // nan_to_num: the largest finite value of the half type, not of float32.
  EXPECT_EQ(b(nan_to_num(f16({kNaN, kInf, -kInf}))), (Bits{0x0000, 0x7bff, 0xfbff}));
  EXPECT_EQ(b(nan_to_num(bf16({kNaN, kInf, -kInf}))), (Bits{0x0000, 0x7f7f, 0xff7f}));
}

TEST(HalfSpecials, ReductionsAccumulateInFloat32) {
  // Partial sums beyond f16's range do not overflow: float32 accumulation, one rounding.
  EXPECT_EQ(b(sum(f16({60000, 60000, -60000}))), (Bits{0x7b53}));  // 60000
  EXPECT_EQ(b(mean(f16({60000, 60000}))), (Bits{0x7b53}));
  EXPECT_EQ(b(mean(f16({60000, 60000}), 0, {.keepdims = true})), (Bits{0x7b53}));
  EXPECT_EQ(b(var(f16({300, -300}))), (Bits{0x7c00}));  // 90000 is not an f16
  // Mean 1002 is no bf16 (a bf16 mean, 1000, would give 8 instead of 4).
  EXPECT_EQ(b(var(bf16({1000, 1004}))), (Bits{0x4080}));
  EXPECT_EQ(b(prod(f16({1000, 1000, 0.001f}))), (Bits{0x63d1}));  // 1000.5 (1000.40), not inf
  // 2048 + 1 + 1 is 2050 (not 2048 twice rounded).
  EXPECT_EQ(b(sum(f16({2048, 1, 1}))), (Bits{0x6801}));
  EXPECT_EQ(b(cumsum(f16({2048, 1, 1}))), (Bits{0x6800, 0x6800, 0x6801}));
  // NaN and infinities.
  EXPECT_TRUE(nan_bits(b(sum(bf16({1, kNaN, 2})))[0], bfloat16));
  EXPECT_TRUE(nan_bits(b(sum(f16({kInf, -kInf})))[0], float16));
  EXPECT_TRUE(nan_bits(b(max(f16({1, kNaN, 2})))[0], float16));
  EXPECT_EQ(argmax(f16({1, kNaN, 2, kNaN})).item<int32_t>(), 1);
  EXPECT_EQ(argmin(bf16({3, -kInf, -kInf})).item<int32_t>(), 1);
  // Empty reductions give the identity.
  EXPECT_EQ(b(sum(zeros({0}, float16))), (Bits{0x0000}));
  EXPECT_EQ(b(max(zeros({0}, bfloat16))), (Bits{0xff80}));
}

TEST(HalfSpecials, ShardedSumRoundsOnce) {
  // Per-device bf16 partial sums would be 257.25 -> 258 and 1.25, then 259.25 -> 260;
  // the exact 258.5 rounds to 258. Partials stay float32 across devices (as jnp.sum).
  Array x = bf16({256, 1.25f, 0, 1.25f});
  EXPECT_EQ(b(sum(x)), (Bits{0x4381}));
  MeshScope scope(mesh());
  Array xs = device_put(x, P("x"));
  EXPECT_EQ(b(sum(xs)), (Bits{0x4381}));
  EXPECT_EQ(b(mean(xs)), b(mean(x)));
  auto j = jit([](const std::vector<Array>& a) { return std::vector<Array>{sum(a[0])}; });
  EXPECT_EQ(b(j(std::vector<Array>{xs})[0]), (Bits{0x4381}));
  // An unreduced result is a bf16 partial per device (float32 sum, then rounded), so
  // reducing it later rounds twice: 258 + 1.25 -> 260. Keep it unreduced only in float32.
  Array u = sum(xs, 0, {.out_sharding = P(Unreduced{{"x"}})});
  EXPECT_EQ(typeof(u).str(), "bf16[]{U:x}");
  EXPECT_EQ(b(reshard(u, P())), (Bits{0x4382}));
}

}  // namespace
