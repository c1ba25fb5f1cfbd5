// The AVX2+FMA vector kernels. The library is built for generic x86-64; only the
// code after the target pragma below is compiled for AVX2+FMA, and vecmath.cpp
// calls it only when CPUID reports both. Standard headers are included before the
// pragma, so no inline function they define is compiled for AVX2 (a COMDAT copy
// of one could otherwise be picked for baseline code by the linker).
#include <immintrin.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "tsr/backends/cpu/vecmath.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// SLEEF's AVX2 entry points. sleef.h declares them only when the whole file is
// built with -mavx (a target pragma does not define __AVX__ for it), so they are
// declared here: (op, float entry, double entry).
#define TSR_SLEEF_UNARY(X)                   \
  X(exp, expf8_u10avx2, expd4_u10avx2)       \
  X(exp2, exp2f8_u10avx2, exp2d4_u10avx2)    \
  X(log, logf8_u10avx2, logd4_u10avx2)       \
  X(log1p, log1pf8_u10avx2, log1pd4_u10avx2) \
  X(expm1, expm1f8_u10avx2, expm1d4_u10avx2) \
  X(sin, sinf8_u10avx2, sind4_u10avx2)       \
  X(cos, cosf8_u10avx2, cosd4_u10avx2)       \
  X(tan, tanf8_u10avx2, tand4_u10avx2)       \
  X(tanh, tanhf8_u10avx2, tanhd4_u10avx2)    \
  X(erf, erff8_u10avx2, erfd4_u10avx2)       \
  X(floor, floorf8_avx2, floord4_avx2)       \
  X(ceil, ceilf8_avx2, ceild4_avx2)          \
  X(rint, rintf8_avx2, rintd4_avx2)
#define TSR_SLEEF_BINARY(X)            \
  X(pow, powf8_u10avx2, powd4_u10avx2) \
  X(atan2, atan2f8_u10avx2, atan2d4_u10avx2)

extern "C" {
#define TSR_DECL1(op, f8, d4) \
  __m256 Sleef_##f8(__m256);  \
  __m256d Sleef_##d4(__m256d);
#define TSR_DECL2(op, f8, d4)        \
  __m256 Sleef_##f8(__m256, __m256); \
  __m256d Sleef_##d4(__m256d, __m256d);
TSR_SLEEF_UNARY(TSR_DECL1)
TSR_SLEEF_BINARY(TSR_DECL2)
__m256d Sleef_erfcd4_u15avx2(__m256d);
#undef TSR_DECL1
#undef TSR_DECL2
}

namespace tsr::detail::cpu {
namespace {

struct Isa {
  using VF = __m256;
  using VD = __m256d;
  static constexpr CpuIsa kIsa = CpuIsa::Avx2;
#define TSR_WRAP1(op, f8, d4)                  \
  static VF op(VF x) { return Sleef_##f8(x); } \
  static VD op(VD x) { return Sleef_##d4(x); }
#define TSR_WRAP2(op, f8, d4)                           \
  static VF op(VF x, VF y) { return Sleef_##f8(x, y); } \
  static VD op(VD x, VD y) { return Sleef_##d4(x, y); }
  TSR_SLEEF_UNARY(TSR_WRAP1)
  TSR_SLEEF_BINARY(TSR_WRAP2)
#undef TSR_WRAP1
#undef TSR_WRAP2
  static VD erfc(VD x) { return Sleef_erfcd4_u15avx2(x); }
  static VF sqrt(VF x) { return _mm256_sqrt_ps(x); }  // correctly rounded, as std::sqrt
  static VD sqrt(VD x) { return _mm256_sqrt_pd(x); }
};

}  // namespace

#include "tsr/backends/cpu/vecmath_kernels.inc"

const VecMath& vecmath_avx2() { return kTable; }

}  // namespace tsr::detail::cpu

#pragma GCC pop_options
