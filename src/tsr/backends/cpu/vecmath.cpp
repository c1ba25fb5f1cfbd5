// The SSE2 (x86-64 baseline) vector kernels, and the run-time choice between them
// and the AVX2+FMA ones in vecmath_avx2.cpp. The transcendental functions are
// SLEEF's (libsleef-dev, 1.0-ulp "u10" variants; erfc 1.5 ulp).
#include <emmintrin.h>
#include <sleef.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tsr/backends/cpu/vecmath.h"
#include "tsr/error.h"
#include "tsr/runtime/env.h"

namespace tsr::detail::cpu {
namespace {

struct Isa {
  using VF = __m128;
  using VD = __m128d;
  static constexpr CpuIsa kIsa = CpuIsa::Baseline;
#define TSR_SLEEF1(name, f4, d2)                 \
  static VF name(VF x) { return Sleef_##f4(x); } \
  static VD name(VD x) { return Sleef_##d2(x); }
#define TSR_SLEEF2(name, f4, d2)                          \
  static VF name(VF x, VF y) { return Sleef_##f4(x, y); } \
  static VD name(VD x, VD y) { return Sleef_##d2(x, y); }
  TSR_SLEEF1(exp, expf4_u10sse2, expd2_u10sse2)
  TSR_SLEEF1(exp2, exp2f4_u10sse2, exp2d2_u10sse2)
  TSR_SLEEF1(log, logf4_u10sse2, logd2_u10sse2)
  TSR_SLEEF1(log1p, log1pf4_u10sse2, log1pd2_u10sse2)
  TSR_SLEEF1(expm1, expm1f4_u10sse2, expm1d2_u10sse2)
  TSR_SLEEF1(sin, sinf4_u10sse2, sind2_u10sse2)
  TSR_SLEEF1(cos, cosf4_u10sse2, cosd2_u10sse2)
  TSR_SLEEF1(tan, tanf4_u10sse2, tand2_u10sse2)
  TSR_SLEEF1(tanh, tanhf4_u10sse2, tanhd2_u10sse2)
  TSR_SLEEF1(erf, erff4_u10sse2, erfd2_u10sse2)
  TSR_SLEEF1(floor, floorf4_sse2, floord2_sse2)
  TSR_SLEEF1(ceil, ceilf4_sse2, ceild2_sse2)
  TSR_SLEEF1(rint, rintf4_sse2, rintd2_sse2)
  TSR_SLEEF2(pow, powf4_u10sse2, powd2_u10sse2)
  TSR_SLEEF2(atan2, atan2f4_u10sse2, atan2d2_u10sse2)
#undef TSR_SLEEF1
#undef TSR_SLEEF2
  static VD erfc(VD x) { return Sleef_erfcd2_u15sse2(x); }
  static VF sqrt(VF x) { return _mm_sqrt_ps(x); }  // correctly rounded, as std::sqrt
  static VD sqrt(VD x) { return _mm_sqrt_pd(x); }
};

}  // namespace

#include "tsr/backends/cpu/vecmath_kernels.inc"

namespace {

// Avx2 if the CPU has AVX2 and FMA, unless TSR_CPU_ISA=baseline.
CpuIsa initial_isa() {
  std::optional<size_t> v = env_choice(
      "TSR_CPU_ISA", "init", "the vector instruction set of the CPU kernels", {"best", "baseline"});
  if (v && *v == 1) return CpuIsa::Baseline;
  return cpu_supports(CpuIsa::Avx2) ? CpuIsa::Avx2 : CpuIsa::Baseline;
}

std::atomic<const VecMath*>& current() {
  static std::atomic<const VecMath*> t{initial_isa() == CpuIsa::Avx2 ? &vecmath_avx2()
                                                                     : &vecmath_baseline()};
  return t;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) { return isa == CpuIsa::Avx2 ? "avx2" : "baseline"; }

const VecMath& vecmath_baseline() { return kTable; }

const VecMath& vecmath() { return *current().load(std::memory_order_relaxed); }

CpuIsa cpu_isa() { return vecmath().isa; }

bool cpu_supports(CpuIsa isa) {
  if (isa == CpuIsa::Baseline) return true;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

CpuIsa set_cpu_isa(CpuIsa isa) {
  if (!cpu_supports(isa))
    throw ValueError(std::string("set_cpu_isa: this CPU cannot run the ") + cpu_isa_name(isa) +
                     " kernels");
  const VecMath* t = isa == CpuIsa::Avx2 ? &vecmath_avx2() : &vecmath_baseline();
  return current().exchange(t)->isa;
}

}  // namespace tsr::detail::cpu
