#pragma once
// SIMD kernels for the float elementwise math and the float sums, compiled once per
// instruction set and chosen at run time (docs/design/0014-vectorised-math.md).
// The shipped flags stay generic: vecmath_avx2.cpp compiles its functions for
// AVX2+FMA through a target pragma and only runs where CPUID reports both.
#include <cstdint>

#include "tsr/prims/elementwise.h"

namespace tsr::detail::cpu {

/** Instruction sets the vector kernels are built for. */
enum class CpuIsa : uint8_t {
  Baseline, /**< SSE2: every x86-64 CPU */
  Avx2,     /**< AVX2 + FMA (Haswell, Zen and later) */
};

/** "baseline" or "avx2". */
const char* cpu_isa_name(CpuIsa isa);

/** y[0..n) = f(x[0..n)); y may alias x. */
using VecUnaryF32 = void (*)(const float* x, float* y, int64_t n);
/** y[0..n) = f(x[0..n)) in double; y may alias x. */
using VecUnaryF64 = void (*)(const double* x, double* y, int64_t n);
/** y[i] = f(a[a_step * i], b[b_step * i]); a step of 0 broadcasts one value. */
using VecBinaryF32 = void (*)(const float* a, int a_step, const float* b, int b_step, float* y,
                              int64_t n);
/** The double version of VecBinaryF32. */
using VecBinaryF64 = void (*)(const double* a, int a_step, const double* b, int b_step, double* y,
                              int64_t n);

/** One instruction set's kernels. A null entry means the op has no vector kernel
 *  (the caller runs its scalar loop). */
struct VecMath {
  CpuIsa isa;                                    /**< what these kernels need */
  VecUnaryF32 unary_f32[prim::kNumUnaryOps];     /**< indexed by UnaryOp */
  VecUnaryF64 unary_f64[prim::kNumUnaryOps];     /**< indexed by UnaryOp */
  VecBinaryF32 pow_f32, atan2_f32;               /**< lax.pow (null: libm), lax.atan2 */
  VecBinaryF64 pow_f64, atan2_f64;               /**< lax.pow (null: libm), lax.atan2 */
  float (*sum_f32)(const float* x, int64_t n);   /**< blocked pairwise sum, in float */
  double (*sum_f64)(const double* x, int64_t n); /**< blocked pairwise sum, in double */
  float (*max_f32)(const float* x, int64_t n);   /**< NaN-propagating max (-inf if n == 0) */
  float (*min_f32)(const float* x, int64_t n);   /**< NaN-propagating min (+inf if n == 0) */
  void (*accumulate_f32_f64)(double* acc, const float* x, int64_t m); /**< acc[j] += x[j] */
};

/** The kernels of the instruction set in use: AVX2 when the CPU has AVX2 and FMA,
 *  unless TSR_CPU_ISA=baseline (read once) or set_cpu_isa says otherwise. */
const VecMath& vecmath();

/** The instruction set vecmath() uses now. */
CpuIsa cpu_isa();

/** Whether this CPU can run the given instruction set's kernels. */
bool cpu_supports(CpuIsa isa);

/** Switches the kernels every later call uses (tests run both paths); returns the
 *  previous choice. Throws InvalidArgument if the CPU lacks the instruction set. */
CpuIsa set_cpu_isa(CpuIsa isa);

/** The SSE2 kernels (vecmath.cpp). */
const VecMath& vecmath_baseline();
/** The AVX2+FMA kernels (vecmath_avx2.cpp); call only when cpu_supports(Avx2). */
const VecMath& vecmath_avx2();

}  // namespace tsr::detail::cpu
