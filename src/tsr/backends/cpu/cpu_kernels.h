#pragma once
// Declarations shared by the CPU kernel files. Each kernel works on one device's
// local blocks (row-major, contiguous); register.cpp maps primitive names to them.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/core/half_bits.h"
#include "tsr/dtype.h"
#include "tsr/shape.h"

namespace tsr::detail::cpu {

// ---- kernels (one per primitive family; the primitive's parameters pick the op)

void unary(const KernelArgs& a);                /**< every UnaryOp */
void integer_pow(const KernelArgs& a);          /**< x ** y, static integer y */
void binary(const KernelArgs& a);               /**< every BinaryOp, with broadcasting */
void select_n(const KernelArgs& a);             /**< select_n(which, case0, ...) */
void clamp(const KernelArgs& a);                /**< clamp(lo, x, hi) */
void convert_element_type(const KernelArgs& a); /**< dtype conversion */
void fused_elementwise(const KernelArgs& a);    /**< a fused elementwise chain, blocked */
void complex_part(const KernelArgs& a);         /**< real / imag / conj of complex */
void make_complex(const KernelArgs& a);         /**< complex(x, y), broadcasting */
void unary_complex(const KernelArgs& a);        /**< the UnaryOps lax defines on complex */
void integer_pow_complex(const KernelArgs& a);  /**< integer_pow of complex */
void reduce_complex(const KernelArgs& a);       /**< reduce_sum / reduce_prod of complex */
void cumulative_complex(const KernelArgs& a);   /**< cumsum / cumprod of complex */
void fft(const KernelArgs& a);                  /**< lax.fft (KISS FFT) */

void reduce(const KernelArgs& a);     /**< reduce_sum/prod/max/min/and/or */
void arg_reduce(const KernelArgs& a); /**< argmax / argmin */

void dot_general(const KernelArgs& a); /**< batched contraction (GEMM) */

void cumulative(const KernelArgs& a);            /**< cumsum/cumprod/cummax/cummin/cumlogsumexp */
void sort(const KernelArgs& a);                  /**< multi-operand sort along one dimension */
void top_k(const KernelArgs& a);                 /**< k largest along the last axis, with indices */
void searchsorted(const KernelArgs& a);          /**< insertion indices into a whole 1-D table */
void cholesky(const KernelArgs& a);              /**< LAPACK potrf, lower factor */
void triangular_solve(const KernelArgs& a);      /**< BLAS trsm */
void lu(const KernelArgs& a);                    /**< LAPACK getrf, zero-based pivots */
void qr(const KernelArgs& a);                    /**< LAPACK geqrf + orgqr */
void eigh(const KernelArgs& a);                  /**< LAPACK syevd */
void svd(const KernelArgs& a);                   /**< LAPACK gesdd */
void reduce_window(const KernelArgs& a);         /**< windowed sum / max / min */
void select_and_gather_add(const KernelArgs& a); /**< tangent at each window's pick */
void select_and_scatter_add(const KernelArgs& a); /**< source added at each window's pick */
void conv_general_dilated(const KernelArgs& a);   /**< convolution (oneDNN, or the direct loop) */

void copy_input(const KernelArgs& a); /**< reshape, squeeze, reshard: the bytes unchanged */
void transpose(const KernelArgs& a);
void broadcast_in_dim(const KernelArgs& a);
void slice(const KernelArgs& a);
void dynamic_slice(const KernelArgs& a);
void dynamic_update_slice(const KernelArgs& a);
void pad(const KernelArgs& a);
void concatenate(const KernelArgs& a);
void split(const KernelArgs& a);
void rev(const KernelArgs& a);

void gather(const KernelArgs& a);  /**< lax.gather, in global coordinates */
void scatter(const KernelArgs& a); /**< every scatter kind, in global coordinates */

void iota(const KernelArgs& a);
void full(const KernelArgs& a);

void random_bits(const KernelArgs& a);  /**< random_bits / random_uniform / random_randint */
void threefry2x32(const KernelArgs& a); /**< the threefry2x32 hash over counter arrays */

// ---- integer arithmetic that wraps

/** The unsigned type integer T computes in so that +, -, * wrap instead of
 *  overflowing: at least `unsigned`, since narrower types promote to signed int. */
template <typename T>
using WrapUnsigned =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// ---- float16 / bfloat16

/** A 16-byte item (complex128) for the kernels that only move bytes. */
struct alignas(8) Bytes16 {
  uint64_t lo, hi; /**< the bytes */
};

/** True for the 16-bit float storage types, which compute through float. */
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// The branch-free bit conversions live in core/half_bits.h (shared with comm).

/** The float value of a float16 / bfloat16 element. */
inline float to_float(float16_t v) { return half_bits_to_float(v.bits); }
inline float to_float(bfloat16_t v) { return bf16_bits_to_float(v.bits); }

/** An element read into accumulator type A (half types through float). */
template <typename A, typename T>
inline A load(T v) {
  if constexpr (kIsHalf<T>) {
    return to_float(v);
  } else {
    return static_cast<A>(v);
  }
}

/** An accumulator value stored as element type T (half types rounded once). */
template <typename T, typename A>
inline T store(A v) {
  if constexpr (kIsHalf<T>) {
    T t;
    t.bits = std::is_same_v<T, float16_t> ? float_to_half_bits(v) : float_to_bf16_bits(v);
    return t;
  } else {
    return static_cast<T>(v);
  }
}

/** Widens n half values to float (vectorised). */
void to_float(const float16_t* src, float* dst, int64_t n);
void to_float(const bfloat16_t* src, float* dst, int64_t n);
/** Rounds n floats to a half type (vectorised). */
void from_float(const float* src, float16_t* dst, int64_t n);
void from_float(const float* src, bfloat16_t* dst, int64_t n);

// ---- threads inside kernels (parallel.cpp)

/** Threads one kernel may use: the cores shared among the devices busy at once
 *  (DESIGN §8: more than one only when fewer devices than cores are busy). */
int kernel_threads(int busy_devices);

/** Runs fn(ctx, i) for every i in [0, parts) on the calling thread and the kernel
 *  pool's workers; returns when all are done. */
void parallel_parts(int parts, void (*fn)(void*, int), void* ctx);

/** Elements below which a kernel stays on one thread: 128K floats take ~25 us, a
 *  fork-join to a parked worker up to ~30 us. */
inline constexpr int64_t kParallelMin = int64_t{1} << 17;

/** f(begin, end) over [0, n) split into up to `threads` contiguous ranges whose
 *  starts are multiples of `align`; one call over everything when n < min_n (below
 *  that the fork-join costs more than the second core gains). */
template <typename F>
void parallel_ranges(int64_t n, int threads, int64_t min_n, int64_t align, F&& f) {
  if (threads <= 1 || n < min_n) {
    f(int64_t{0}, n);
    return;
  }
  struct Ctx {
    F* f;
    int64_t n, align;
    int parts;
    int64_t start(int k) const {
      if (k >= parts) return n;
      int64_t b = n * k / parts;
      return std::min(n, (b + align - 1) / align * align);
    }
  } c{&f, n, std::max<int64_t>(1, align), threads};
  parallel_parts(
      threads,
      [](void* p, int i) {
        const auto& x = *static_cast<const Ctx*>(p);
        int64_t b = x.start(i), e = x.start(i + 1);
        if (b < e) (*x.f)(b, e);
      },
      &c);
}

// ---- helpers shared between the files

/** dst[i] = src[i] converted from `from` to `to` (NumPy/JAX semantics: float to
 *  integer truncates toward zero and saturates, NaN gives 0; to bool is x != 0). */
void convert_n(const void* src, DType from, void* dst, DType to, int64_t n);

/** Row-major element strides of `shape`. */
std::vector<int64_t> row_major_strides(const Shape& shape);

/** Copies the box `extent` from src to dst, each addressed by element strides
 *  (any sign; 0 on the source broadcasts). Runs contiguous on both sides become
 *  memcpy; a transposing pair of dims is copied in cache-sized tiles (a plain 2-D
 *  transpose on up to `threads` threads). */
void copy_strided(void* dst, const int64_t* dst_strides, const void* src,
                  const int64_t* src_strides, const Shape& extent, size_t itemsize,
                  int threads = 1);

/** Writes the one element at `value` (itemsize bytes) to dst[0..n). */
void fill_value(void* dst, const void* value, int64_t n, size_t itemsize);

/** Reads a rank-0 integer input (any integer dtype) as int64. */
int64_t read_index(const void* p, DType t);

/** Throws NotImplementedError "[prim] ... does not support dtype ...". */
[[noreturn]] void unsupported_dtype(const char* prim, DType got, const char* expected);

}  // namespace tsr::detail::cpu
