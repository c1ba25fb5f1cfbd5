#pragma once
// Which GEMM dot_general uses for few rows: a switch for tests and benchmarks, so
// both kernels (and both instruction sets of ours) run on any machine.

namespace tsr::detail::cpu {

/** How dot_general chooses between small_gemm and OpenBLAS. */
enum class SmallGemmMode {
  Auto,     /**< small_gemm when prefer_small_gemm's size and thread test says so */
  Never,    /**< always OpenBLAS */
  Always,   /**< small_gemm for every float32/float64 product, best instruction set */
  Avx2,     /**< as Always, with at most AVX2/FMA code */
  Portable, /**< small_gemm for every float32/float64 product, baseline (SSE2) code */
};

/** Sets the process-wide mode (Auto at start). */
void set_small_gemm_mode(SmallGemmMode mode);

}  // namespace tsr::detail::cpu
