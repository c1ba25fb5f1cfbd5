#pragma once
// The window arithmetic of reduce_window and the pooling gradients, for the CPU and
// CUDA kernels: which operand element a window tap reads (or none: padding, or a
// base-dilation hole), the accumulation type and identities, and the selection step
// of select_and_gather_add / select_and_scatter_add.
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** The operand index along one dim under output position o's tap k, or -1 (padding or
 *  a base-dilation hole): position o * stride + k * window_dilation - pad_lo of the
 *  operand dilated by base_dilation. */
TSR_HD int64_t window_tap(int64_t o, int64_t k, int64_t stride, int64_t window_dilation,
                          int64_t pad_lo, int64_t base_dilation, int64_t in_size) {
  const int64_t p = o * stride + k * window_dilation - pad_lo;
  const int64_t dilated = in_size == 0 ? 0 : 1 + base_dilation * (in_size - 1);
  if (p < 0 || p >= dilated || p % base_dilation != 0) return -1;
  return p / base_dilation;
}

/** The type a window accumulates T in: float for the half types, bytes for bool (max /
 *  min of 0 and 1), else T. */
template <typename T>
struct WindowAccOf {
  using type = T; /**< the accumulator */
};
template <>
struct WindowAccOf<float16_t> {
  using type = float; /**< the accumulator */
};
template <>
struct WindowAccOf<bfloat16_t> {
  using type = float; /**< the accumulator */
};
template <>
struct WindowAccOf<bool> {
  using type = uint8_t; /**< the accumulator */
};
/** The accumulator of T. */
template <typename T>
using WindowAcc = typename WindowAccOf<T>::type;

/** The lowest C (-inf for floats): max's identity. */
template <typename C>
TSR_HD C window_lowest() {
  if constexpr (ops::kIsFloat<C>) {
    return -ops::inf<C>();
  } else {
    return ops::Traits<C>::kMin;
  }
}
/** The highest C (+inf for floats): min's identity. */
template <typename C>
TSR_HD C window_highest() {
  if constexpr (ops::kIsFloat<C>) {
    return ops::inf<C>();
  } else {
    return ops::Traits<C>::kMax;
  }
}

/** One step of the pooling gradients' selection (JAX's pairwise reduction): the pick
 *  starts at max's (min's) identity with no element, and a tap v replaces it when
 *  !(best >= v) (<= for min), so ties keep the earlier tap and a NaN tap replaces.
 *  True when v was taken. */
template <typename C>
TSR_HD bool select_step(bool is_max, C& best, C v) {
  const bool keep = is_max ? best >= v : best <= v;
  if (!keep) best = v;
  return !keep;
}

/** A window over an operand of up to kWindowMaxDims dims, for a kernel that walks
 *  output elements (each tap by window_tap). */
constexpr int kWindowMaxDims = 16;
/** The window and the shapes, per dim. */
struct WindowPlan {
  static constexpr int K = kWindowMaxDims; /**< array capacity */
  int rank = 0;                            /**< dims */
  int64_t win_n = 1;                       /**< taps per window */
  int64_t in_size[K] = {};                 /**< operand sizes */
  int64_t out_size[K] = {};                /**< output (window positions) sizes */
  int64_t win[K] = {};                     /**< window sizes */
  int64_t stride[K] = {};                  /**< window strides */
  int64_t window_dilation[K] = {};         /**< tap spacing */
  int64_t pad_lo[K] = {};                  /**< low padding */
  int64_t base_dilation[K] = {};           /**< operand spacing */
};

/** The operand's row-major element offset under output position `o` (coordinates) and
 *  tap t (row-major over the window), or -1 (padding or a hole). */
TSR_HD int64_t window_input(const WindowPlan& p, const int64_t* o, int64_t t) {
  int64_t taps[WindowPlan::K];
  for (int d = p.rank - 1; d >= 0; --d) {
    int64_t q = t / p.win[d];
    taps[d] = t - q * p.win[d];
    t = q;
  }
  int64_t off = 0;
  for (int d = 0; d < p.rank; ++d) {
    int64_t i = window_tap(o[d], taps[d], p.stride[d], p.window_dilation[d], p.pad_lo[d],
                           p.base_dilation[d], p.in_size[d]);
    if (i < 0) return -1;
    off = off * p.in_size[d] + i;
  }
  return off;
}

}  // namespace tsr::detail
