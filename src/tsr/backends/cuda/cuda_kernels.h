#pragma once
// The CUDA kernel table's functions (host side, g++): each decodes its primitive's
// parameters and calls a launcher of launch.h.
#include "tsr/backends/cuda/launch.h"
#include "tsr/backends/kernel.h"

namespace tsr::detail::cuda {

/** The stream a kernel call runs on (KernelArgs::stream). */
inline cudaStream_t stream_of(const KernelArgs& a) { return static_cast<cudaStream_t>(a.stream); }

void unary(const KernelArgs& a);                /**< every UnaryOp on real dtypes */
void binary(const KernelArgs& a);               /**< every BinaryOp, broadcasting */
void integer_pow(const KernelArgs& a);          /**< x ** y, static integer y */
void convert_element_type(const KernelArgs& a); /**< every real dtype pair */
void select_n(const KernelArgs& a);             /**< select_n(which, case0, ...) */
void clamp(const KernelArgs& a);                /**< clamp(lo, x, hi) */
void copy_input(const KernelArgs& a);           /**< reshape, squeeze, reshard: a copy */
void full(const KernelArgs& a);                 /**< a constant fill */
void iota(const KernelArgs& a);                 /**< 0, 1, 2, ... along one dimension */
void transpose(const KernelArgs& a);            /**< any permutation */
void broadcast_in_dim(const KernelArgs& a);     /**< operand dims mapped into the output */
void slice(const KernelArgs& a);                /**< static strided slice */
void rev(const KernelArgs& a);                  /**< reversal along dims */
void pad(const KernelArgs& a);                  /**< lax.pad (low, high, interior) */
void concatenate(const KernelArgs& a);          /**< along one dim */
void split(const KernelArgs& a);                /**< into sizes along one axis */
void dynamic_slice(const KernelArgs& a);        /**< start indices read on the device */
void dynamic_update_slice(const KernelArgs& a); /**< start indices read on the device */
void reduce(const KernelArgs& a);               /**< reduce_sum/prod/max/min/and/or */
void arg_reduce(const KernelArgs& a);           /**< argmax / argmin */
void cumulative(const KernelArgs& a);           /**< cumsum/cumprod/cummax/cummin/cumlogsumexp */
void dot_general(const KernelArgs& a);          /**< batched GEMM through cuBLAS */
void fused_elementwise(const KernelArgs& a);    /**< a jit-fused chain, one NVRTC kernel */
void random_bits(const KernelArgs& a);          /**< random_bits / uniform / randint */
void threefry2x32(const KernelArgs& a);         /**< the hash over counter arrays */
void complex_part(const KernelArgs& a);         /**< real / imag / conj */
void make_complex(const KernelArgs& a);         /**< complex(x, y), broadcasting */
void gather(const KernelArgs& a);               /**< lax.gather, every mode */
void scatter(const KernelArgs& a);       /**< scatter / scatter_add / sub / mul / min / max */
void sort(const KernelArgs& a);          /**< lax.sort, several operands and keys */
void top_k(const KernelArgs& a);         /**< the k largest along the last axis */
void searchsorted(const KernelArgs& a);  /**< insertion positions, left or right */
void reduce_window(const KernelArgs& a); /**< reduce_window_sum / max / min */
void select_and_gather_add(const KernelArgs& a);  /**< max / min pooling's jvp */
void select_and_scatter_add(const KernelArgs& a); /**< max / min pooling's gradient */
void triangular_solve(const KernelArgs& a);       /**< cuBLAS trsm per matrix */
void cholesky(const KernelArgs& a);               /**< one block per matrix */
void lu(const KernelArgs& a);                     /**< partial pivoting, one block per matrix */
void qr(const KernelArgs& a);                     /**< Householder, one block per matrix */
void eigh(const KernelArgs& a);                   /**< Jacobi rotations, one block per matrix */
void svd(const KernelArgs& a);                    /**< one-sided Jacobi, one block per matrix */
void fft(const KernelArgs& a);                    /**< FFT / IFFT / RFFT / IRFFT, direct DFTs */
void conv_general_dilated(const KernelArgs& a);   /**< the CPU's direct loop per output */

}  // namespace tsr::detail::cuda
