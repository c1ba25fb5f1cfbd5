#pragma once
// The CUDA kernels' launchers: plain parameters (pointers, dtypes, sizes, a stream),
// so the .cu files include no primitive headers (nvcc's front end compiles only the
// kernels) and the .cpp files decode each primitive's parameters on the host.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "tsr/backends/common/gather_scatter_plan.h"
#include "tsr/backends/common/threefry.h"
#include "tsr/backends/common/window_ops.h"
#include "tsr/backends/cuda/cuda_util.h"
#include "tsr/dtype.h"
#include "tsr/prims/elementwise_ops.h"
#include "tsr/shape.h"

namespace tsr::detail::cuda {

/** The most dims a strided kernel takes (reshape to merge dims beyond). */
constexpr int kMaxDims = 16;
/** Cases one select_n launch takes by value (more run as several launches). */
constexpr int kMaxSelectCases = 64;

/** An output shape with each operand's element strides (0 along broadcast dims). */
struct Strides {
  int rank = 0;            /**< dims used */
  int64_t size[kMaxDims];  /**< output sizes */
  int64_t in[3][kMaxDims]; /**< per operand (up to 3): strides */
};

/** A 16-byte item (complex128) for the kernels that only move bytes. */
struct alignas(16) Item16 {
  uint64_t lo, hi; /**< the bytes */
};

/** NotImplementedError "[prim] the CUDA kernel does not support dtype ...": reached only
 *  when a rule accepted what no kernel computes (a bug in the rule). */
[[noreturn]] void unsupported(const char* prim, DType got);
/** NotImplementedError: a strided CUDA kernel takes at most kMaxDims dims. */
[[noreturn]] void too_many_dims(const char* prim, size_t rank);

/** Calls f(S{}) with the stored type of a real dtype (float16_t / bfloat16_t for the
 *  half types); unsupported() for complex. */
template <typename F>
void dispatch_real(DType t, const char* prim, F&& f) {
  if (is_complex(t)) unsupported(prim, t);
  dispatch_dtype(t, f);
}

/** The output's sizes with each operand's element strides, 0 along dims it
 *  broadcasts (size 1, or a rank-0 operand). */
Strides broadcast_strides(const Shape& out, std::initializer_list<const Shape*> operands);
/** A strided read of operand 0: output `extent`, source `strides`. */
Strides read_strides(const Shape& extent, const std::vector<int64_t>& strides, const char* prim);

/** dst = op(a, b) over n elements of dt (op: a comm ReduceOp; comm_reduce.cu). */
void combine_launch(void* dst, const void* a, const void* b, int64_t n, DType dt, int op,
                    cudaStream_t s);
/** y = op(x) over n elements of dtype t. */
void unary_launch(prim::UnaryOp op, DType t, const void* x, void* y, int64_t n, cudaStream_t s);
/** z = op(x, y): flat (st null; av / bv: the operand advances, else a scalar) or strided. */
void binary_launch(prim::BinaryOp op, DType t, const void* x, const void* y, void* z, int64_t n,
                   const Strides* st, bool av, bool bv, cudaStream_t s);
/** y = x ** p. */
void integer_pow_launch(DType t, const void* x, void* y, int64_t n, int p, cudaStream_t s);
/** y = x converted from `from` to `to` (the CPU's rounding). */
void convert_launch(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t s);
/** out[i] = cases[clamp(which[i])][i], items of `item` bytes. */
void select_launch(DType which_t, size_t item, const void* which, bool which_scalar,
                   const void* const* cases, int ncases, void* out, int64_t n, cudaStream_t s);
/** out = min(max(x, lo), hi), NaN propagating; lo / hi arrays or scalars. */
void clamp_launch(DType t, const void* lo, bool lo_arr, const void* x, const void* hi, bool hi_arr,
                  void* out, int64_t n, cudaStream_t s);
/** out (row-major over st's sizes) = src[sum idx * st.in[0]], items of `item` bytes. */
void strided_read_launch(size_t item, const void* src, const Strides& st, void* out, int64_t n,
                         cudaStream_t s);
/** dst[sum idx * st.in[1]] = src[sum idx * st.in[0]] over st's sizes (n elements),
 *  items of `item` bytes; dst and src point at the box's first elements. */
void strided_copy_launch(size_t item, void* dst, const void* src, const Strides& st, int64_t n,
                         cudaStream_t s);
/** dynamic_slice / dynamic_update_slice's start indices, read on the device: per dim
 *  the index scalar (null: the dim is covered whole, start 0), its dtype, and the
 *  largest start (starts clamp to [0, max], as the CPU kernel). */
struct DynamicStarts {
  int rank = 0;                     /**< dims */
  const void* index[kMaxDims] = {}; /**< the index scalars (device), or null */
  DType dtype[kMaxDims] = {};       /**< each index's dtype */
  int64_t max_start[kMaxDims] = {}; /**< big - small per dim */
};
/** out (row-major over st's sizes) = src at (index + start) * st.in[0] per dim
 *  (dynamic_slice), or, with `update`, dst at (index + start) * st.in[1] = src at
 *  index * st.in[0] (dynamic_update_slice's write of the update). */
void dynamic_copy_launch(size_t item, bool update, const void* src, void* dst, const Strides& st,
                         const DynamicStarts& starts, int64_t n, cudaStream_t s);
/** out[0..n) = *value, an `item`-byte element in device memory. */
void fill_from_launch(size_t item, const void* value, void* out, int64_t n, cudaStream_t s);
/** out[0..n) = the `item`-byte value. */
void fill_launch(size_t item, const void* value, void* out, int64_t n, cudaStream_t s);
/** out[i] = base + sum idx * st.in[0] (as int64, converted to t). */
void iota_launch(DType t, const Strides& st, int64_t base, void* out, int64_t n, cudaStream_t s);

/** Kept and reduced dims of a reduction's input, with their strides. */
struct ReduceSplit {
  int nk = 0, nr = 0;                         /**< kept / reduced dims */
  int64_t ksize[kMaxDims], kstride[kMaxDims]; /**< kept sizes and strides */
  int64_t rsize[kMaxDims], rstride[kMaxDims]; /**< reduced sizes and strides */
  int64_t rcount = 1;                         /**< reduced elements per output */
};
/** out = reduce(x) (kind: prim::ReduceKind's value) for nout outputs. */
void reduce_launch(int kind, DType t, const void* x, void* out, const ReduceSplit& sp, int64_t nout,
                   cudaStream_t s);

/** out[o, k] = the first index of x[o, :, k]'s max (or min), a NaN first; x is
 *  [no, n, ni]; index dtype index_t. */
void arg_reduce_launch(bool is_max, DType t, DType index_t, const void* x, void* out, int64_t no,
                       int64_t n, int64_t ni, cudaStream_t s);

/** The cumulative scan (kind: prim::CumKind's value) of every [n] line of x, viewed
 *  as [no, n, ni]. */
void scan_launch(int kind, DType t, const void* x, void* out, int64_t no, int64_t n, int64_t ni,
                 bool reverse, cudaStream_t s);

/** dst (compute dtype ct, row-major) = src (dtype t) read through st.in[0]. */
void gather_convert_launch(DType ct, DType t, const void* src, const Strides& st, void* dst,
                           int64_t n, cudaStream_t s);
/** out (dtype t) = c (compute dtype ct) converted. */
void store_convert_launch(DType t, DType ct, const void* c, void* out, int64_t n, cudaStream_t s);
/** c[b] = a[b] @ bm[b] for int64 [nb, m, k] x [nb, k, n], wrapping. */
void gemm_int_launch(const int64_t* a, const int64_t* bm, int64_t* c, int64_t nb, int64_t m,
                     int64_t n, int64_t k, cudaStream_t s);

/** real (kind 0), imag (1) or conj (2) of n elements of complex dtype zt: out is the
 *  real part type for real / imag, zt for conj. */
void complex_part_launch(int kind, DType zt, const void* z, void* out, int64_t n, cudaStream_t s);
/** out (complex dtype zt) = x + i y, the parts read through st.in[0] / st.in[1]. */
void make_complex_launch(DType zt, const void* x, const void* y, void* out, const Strides& st,
                         int64_t n, cudaStream_t s);

/** gather: out (n elements of `item` bytes) from src through the plan; `fill` (one
 *  element, host memory) where FillOrDrop finds a start out of bounds. */
void gather_launch(size_t item, const void* src, const void* ind, const GatherPlan& p,
                   const void* fill, void* out, int64_t n, cudaStream_t s);
/** scatter (kind: ScatterKind's value) of nupd update elements into out (nout elements
 *  of dtype t, already holding the operand). */
void scatter_launch(int kind, DType t, const ScatterPlan& p, const void* ind, const void* upd,
                    void* out, int64_t nupd, int64_t nout, cudaStream_t s);

/** sort: nops operands of dtypes[k], each viewed as [no, n, ni], sorted along n by the
 *  first num_keys (lexicographically, stable) into out. */
void sort_launch(int nops, int num_keys, const DType* dtypes, const void* const* in,
                 void* const* out, int64_t no, int64_t n, int64_t ni, cudaStream_t s);
/** top_k of every [n] row of x ([no, n]): the k largest values and their int32 indices. */
void top_k_launch(DType t, const void* x, void* vals, int32_t* idx, int64_t no, int64_t n,
                  int64_t k, cudaStream_t s);
/** out[q] = the insertion position of v[q] (m values) into sorted[0..n). */
void searchsorted_launch(DType t, const void* sorted, int64_t n, const void* v, int64_t m,
                         bool right, int32_t* out, cudaStream_t s);

/** reduce_window (op: prim::WindowOp's value) of x into the n window positions of p. */
void reduce_window_launch(int op, DType t, const void* x, void* out, const WindowPlan& p, int64_t n,
                          cudaStream_t s);
/** select_and_gather_add: out[i] (n window positions, float dtype st) = the tangent at
 *  the element of x (dtype t) window i selects, else 0. */
void select_and_gather_add_launch(bool is_max, DType st, DType t, const void* tangent,
                                  const void* x, void* out, const WindowPlan& p, int64_t n,
                                  cudaStream_t s);
/** select_and_scatter_add: out (nout elements shaped like x, float dtype st) = zeros
 *  plus each of the nsrc window positions' src value at the element it selects. */
void select_and_scatter_add_launch(bool is_max, DType st, DType t, const void* src, const void* x,
                                   void* out, const WindowPlan& p, int64_t nsrc, int64_t nout,
                                   cudaStream_t s);

/** cholesky: the row-major lower factor of each of `batch` n x n matrices of x (NaN
 *  where one is not positive definite), the upper triangle zero. */
void cholesky_launch(DType t, const void* x, void* out, int64_t batch, int64_t n, cudaStream_t s);

/** The most spatial dims a CUDA convolution takes. */
constexpr int kConvMaxSpatial = 8;
/** conv_general_dilated's operands as (dim 0, dim 1, spatial...) in their specs'
 *  orders: element strides and sizes, the window, and the groups (the CPU's direct
 *  loop's names). */
struct ConvPlan {
  int ns = 0;                     /**< spatial dims */
  int64_t O = 0, I = 0;           /**< out features; in features per group */
  int64_t og = 1, ob = 1, nb = 1; /**< O / feature groups, O / batch groups, N / batch groups */
  int64_t K = 1;                  /**< kernel taps */
  int64_t l_stride[2 + kConvMaxSpatial] = {}; /**< lhs (N, C, spatial...) strides */
  int64_t r_stride[2 + kConvMaxSpatial] = {}; /**< rhs (O, I, spatial...) strides */
  int64_t o_stride[2 + kConvMaxSpatial] = {}; /**< out (N, O, spatial...) strides */
  int64_t l_size[kConvMaxSpatial] = {};       /**< lhs spatial sizes */
  int64_t r_size[kConvMaxSpatial] = {};       /**< kernel spatial sizes */
  int64_t o_size[kConvMaxSpatial] = {};       /**< out spatial sizes */
  int64_t stride[kConvMaxSpatial] = {};       /**< window strides */
  int64_t rhs_dilation[kConvMaxSpatial] = {}; /**< tap spacing */
  int64_t lhs_dilation[kConvMaxSpatial] = {}; /**< lhs spacing */
  int64_t pad_lo[kConvMaxSpatial] = {};       /**< low padding (may be negative) */
};
/** conv_general_dilated of lhs and rhs (dtype t) into out, n elements of the
 *  accumulation dtype acc_t (float64, float32 or int64) in the output's layout. */
void conv_launch(DType t, DType acc_t, const void* lhs, const void* rhs, void* out,
                 const ConvPlan& p, int64_t n, cudaStream_t s);

/** lu: each of `batch` row-major m x n matrices of x factored (unit lower and upper
 *  in one matrix), its min(m, n) pivot rows and its row permutation (int32). */
void lu_launch(DType t, const void* x, void* lu, int32_t* piv, int32_t* perm, int64_t batch,
               int64_t m, int64_t n, cudaStream_t s);

/** qr: each of `batch` row-major m x n matrices of x as q (m x qc, orthonormal
 *  columns) times r (qc x n, upper), qc = m (full_matrices) or min(m, n). */
void qr_launch(DType t, const void* x, void* q, void* r, int64_t batch, int64_t m, int64_t n,
               int64_t qc, cudaStream_t s);

/** eigh: eigenvectors (columns of v) and ascending eigenvalues w of each of `batch`
 *  symmetric n x n matrices, read from x's lower (else upper) triangle; NaN outputs for
 *  a matrix holding a NaN. */
void eigh_launch(DType t, const void* x, void* v, void* w, int64_t batch, int64_t n, bool lower,
                 cudaStream_t s);

/** svd: the singular values s (min(m, n), descending) of each of `batch` m x n
 *  matrices of x and, with uv, u (m x ku) and vt (kv x n) (ku = m, kv = n when full,
 *  else min(m, n)); NaN outputs for a matrix holding a NaN. */
void svd_launch(DType t, const void* x, void* s_out, void* u, void* vt, int64_t batch, int64_t m,
                int64_t n, bool uv, bool full, cudaStream_t s);

/** One fft pass: dst's lines along an axis (count lines of len, element stride
 *  `stride`, complex dtype c) = the (inverse) DFTs of src's, times scale. */
void fft_pass_launch(DType c, const void* src, void* dst, int64_t count, int64_t len,
                     int64_t stride, bool inverse, double scale, cudaStream_t s);
/** RFFT's last axis: out (lines x m, complex dtype c) = the first m bins of the DFT of
 *  each real line of n. */
void rfft_last_launch(DType c, const void* x, void* out, int64_t lines, int64_t n, int64_t m,
                      cudaStream_t s);
/** IRFFT's last axis: out (lines x n, real) = scale times the real part of the inverse
 *  DFT of each line of m bins extended to its Hermitian spectrum of n. */
void irfft_last_launch(DType c, const void* h, void* out, int64_t lines, int64_t m, int64_t n,
                       double scale, cudaStream_t s);

/** One random primitive's launch: each local element i hashes the global flat index
 *  base + sum(index * global.in[0]) (global.size: the local shape). */
struct RandomCall {
  int kind = 0;                  /**< 0 bits, 1 uniform, 2 randint */
  DType t = DType::UInt32;       /**< output dtype */
  const uint32_t* key = nullptr; /**< the 2-word key (device) */
  void* out = nullptr;           /**< the local block */
  Strides global;                /**< local sizes, global row-major strides */
  uint64_t base = 0;             /**< the block origin's global flat index */
  int64_t n = 0;                 /**< local elements */
  double lo = 0, span = 0;       /**< uniform: the bounds (the half types: rounded) */
  rng::RandIntPlan plan;         /**< randint */
};
/** random_bits / random_uniform / random_randint. */
void random_launch(const RandomCall& c, cudaStream_t s);
/** (y0, y1) = threefry2x32(key, (x0, x1)) elementwise. */
void threefry_launch(const uint32_t* key, const uint32_t* x0, const uint32_t* x1, uint32_t* y0,
                     uint32_t* y1, int64_t n, cudaStream_t s);

}  // namespace tsr::detail::cuda
