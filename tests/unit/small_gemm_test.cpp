// small_gemm (the few-row GEMM dot_general uses on a busy device) against a
// double-accumulating loop over many shapes, both stored orders of each operand and
// both instruction sets; then dot_general through it, sharded over several meshes,
// against the one-device OpenBLAS oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tsr/backends/cpu/small_gemm.h"
#include "tsr/backends/cpu/small_gemm_mode.h"
#include "tsr/tsr.h"
#include "unit/oracle_harness.h"

using namespace tsr;
using detail::cpu::SmallGemmMode;

namespace {

// Restores Auto when a test ends, passed or not.
struct ModeScope {
  explicit ModeScope(SmallGemmMode m) { detail::cpu::set_small_gemm_mode(m); }
  ~ModeScope() { detail::cpu::set_small_gemm_mode(SmallGemmMode::Auto); }
};

// Values in [-1, 1) that are not all multiples of a power of two, so rounding shows.
template <class T>
std::vector<T> values(size_t n, uint32_t seed) {
  std::vector<T> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<T>(static_cast<double>(s >> 8) / (1 << 23) - 1.0);
  }
  return v;
}

// One product with leading dimensions `pad` wider than needed, checked element by
// element within a bound on the rounding error of a sum of k products.
template <class T>
void check_shape(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t pad) {
  int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
  std::vector<T> a = values<T>((ta ? k : m) * lda, 1), b = values<T>((tb ? n : k) * ldb, 2);
  std::vector<T> c(m * ldc, T(7));
  detail::cpu::small_gemm(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  double eps = sizeof(T) == 4 ? 1e-6 : 1e-15;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = ta ? a[p * lda + i] : a[i * lda + p];
        double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        want += x * y;
        mag += std::fabs(x * y);
      }
      ASSERT_NEAR(c[i * ldc + j], want, 4 * eps * (mag + 1) * std::sqrt(double(k) + 1))
          << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k << " pad=" << pad
          << " at (" << i << ", " << j << ")";
    }
  // Padding between rows is the caller's: never written.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], T(7)) << "wrote past column n";
}

template <class T>
void check_many_shapes() {
  const int64_t ms[] = {1, 2, 5, 6, 7, 13, 32, 64};
  const int64_t ns[] = {1, 3, 8, 15, 16, 17, 33, 100, 300};
  const int64_t ks[] = {0, 1, 2, 7, 255, 256, 257, 600};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : ms)
        for (int64_t n : ns)
          for (int64_t k : ks) {
            check_shape<T>(ta, tb, m, n, k, 0);
            if (::testing::Test::HasFatalFailure()) return;
          }
  check_shape<T>(false, false, 13, 33, 257, 5);
  check_shape<T>(true, true, 7, 300, 600, 3);
}

TEST(SmallGemm, Float32MatchesReferenceOnManyShapes) {
  ModeScope best(SmallGemmMode::Always);
  check_many_shapes<float>();
}

TEST(SmallGemm, Float64MatchesReferenceOnManyShapes) {
  ModeScope best(SmallGemmMode::Always);
  check_many_shapes<double>();
}

TEST(SmallGemm, Avx2CodeMatchesReferenceOnManyShapes) {
  ModeScope avx2(SmallGemmMode::Avx2);
  check_many_shapes<float>();
  check_many_shapes<double>();
}

TEST(SmallGemm, PortableCodeMatchesReferenceOnManyShapes) {
  ModeScope portable(SmallGemmMode::Portable);
  check_many_shapes<float>();
  check_many_shapes<double>();
}

TEST(SmallGemm, ChosenOnlyForFewRowsOnOneThread) {
  EXPECT_TRUE(detail::cpu::prefer_small_gemm(32, 1024, 784, 1));
  EXPECT_FALSE(detail::cpu::prefer_small_gemm(32, 1024, 784, 2));
  EXPECT_FALSE(detail::cpu::prefer_small_gemm(256, 1024, 784, 1));
  EXPECT_FALSE(detail::cpu::prefer_small_gemm(32, 10, 1024, 1));
}

// dot_general with every stored order and batch placement that reaches the kernel,
// float32 and float64, sharded over the harness's meshes (1, 2, 4, 2x2, 8, 2x4)
// with small_gemm forced, against one device on OpenBLAS.
struct DotCase {
  std::string what;
  Shape lhs, rhs;
  DotDimensionNumbers dims;
  PartitionSpec lspec, rspec;
};

std::vector<DotCase> dot_cases() {
  return {
      {"[m,k]@[k,n], rows sharded", {40, 33}, {33, 17}, {{1}, {0}}, P("x"), P()},
      {"[m,k]@[k,n], rows over x,y", {48, 70}, {70, 20}, {{1}, {0}}, P(Axes{"x", "y"}), P()},
      {"[k,m] (lhs transposed)", {33, 40}, {33, 17}, {{0}, {0}}, P(nullptr, "x"), P()},
      {"[n,k] (rhs transposed)", {40, 33}, {17, 33}, {{1}, {1}}, P("x"), P()},
      {"both transposed", {33, 40}, {17, 33}, {{0}, {1}}, P(nullptr, "x"), P()},
      {"columns sharded", {8, 33}, {33, 48}, {{1}, {0}}, P(), P(nullptr, "x")},
      {"batch first", {4, 8, 19}, {4, 19, 24}, {{2}, {1}, {0}, {0}}, P("x"), P("x")},
      {"batch last", {8, 19, 4}, {19, 24, 4}, {{1}, {0}, {2}, {2}}, P(), P()},
      {"rows sharded, batch replicated",
       {2, 16, 19},
       {2, 19, 18},
       {{2}, {1}, {0}, {0}},
       P(nullptr, "x"),
       P()},
      {"contraction over two dims", {16, 5, 7}, {5, 7, 18}, {{1, 2}, {0, 1}}, P("x"), P()},
  };
}

TEST(SmallGemm, DotGeneralShardedMatchesOneDeviceOracle) {
  for (DType t : {float32, float64})
    for (SmallGemmMode mode : {SmallGemmMode::Always, SmallGemmMode::Avx2, SmallGemmMode::Portable})
      for (const DotCase& dc : dot_cases()) {
        ModeScope scope(mode);
        std::vector<oracle::Input> in = {oracle::ramp(dc.lhs, 0, t), oracle::ramp(dc.rhs, 1, t)};
        // ramp's values are small multiples of 1/4: most sums are exact, so perturb
        // them to make rounding (and a wrong stored order) visible.
        for (auto& v : in[0].values) v += 1e-3 * std::sin(v * 17 + 1);
        for (auto& v : in[1].values) v += 1e-3 * std::cos(v * 13 + 2);
        DotDimensionNumbers dims = dc.dims;
        oracle::Fn fn = [dims](const std::vector<Array>& a) {
          return dot_general(a[0], a[1], dims);
        };
        oracle::Fn blas = [&](const std::vector<Array>& a) {
          detail::cpu::set_small_gemm_mode(SmallGemmMode::Never);
          Array r = fn(a);
          r.block_until_ready();  // the kernel reads the mode when it runs
          detail::cpu::set_small_gemm_mode(mode);
          return r;
        };
        std::string label = dc.what + (t == float32 ? " f32" : " f64") +
                            (mode == SmallGemmMode::Portable ? " portable"
                             : mode == SmallGemmMode::Avx2   ? " avx2"
                                                             : "");
        oracle::check(label, in, {dc.lspec, dc.rspec}, fn, blas);
        if (::testing::Test::HasFailure()) return;
      }
}

}  // namespace
