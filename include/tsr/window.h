#pragma once
// Windowed reductions and pooling: lax.reduce_window and flax's max_pool / min_pool /
// avg_pool. A sharded dimension may be windowed (spec §12.15: the result keeps the
// operand's sharding when the output size divides); the window's overlap is gathered
// for the kernel and the result sliced back.
#include <string>
#include <utility>
#include <vector>

#include "tsr/ops.h"

namespace tsr {

/** A window's padding: "VALID", "SAME" or "SAME_LOWER" (computed as
 *  lax.padtype_to_pads does), or explicit (lo, hi) pairs. */
class Padding {
 public:
  /** A padding type by name. */
  Padding(const char* type) : type_(type) {}  // NOLINT: implicit by design
  /** A padding type by name. */
  Padding(std::string type) : type_(std::move(type)) {}  // NOLINT
  /** Explicit (lo, hi) pairs, one per windowed dimension. */
  Padding(std::vector<std::pair<int64_t, int64_t>> pads)  // NOLINT
      : pads_(std::move(pads)) {}
  /** Explicit (lo, hi) pairs. */
  Padding(std::initializer_list<std::pair<int64_t, int64_t>> pads) : pads_(pads) {}
  /** The type's name ("" when explicit). */
  const std::string& type() const { return type_; }
  /** The explicit pairs (empty for a named type). */
  const std::vector<std::pair<int64_t, int64_t>>& pads() const { return pads_; }

 private:
  std::string type_;
  std::vector<std::pair<int64_t, int64_t>> pads_;
};

/** lax.padtype_to_pads: the (lo, hi) pairs of `padding` for an operand of `in_shape`. */
std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window,
                                                         const Shape& strides,
                                                         const Padding& padding);

/** The reduction of reduce_window (lax.add, lax.max, lax.min). */
enum class WindowReducer : uint8_t { add, max, min };

/** Optional parameters of reduce_window (empty: ones; padding "VALID"). */
struct WindowOptions {
  Shape window_strides = {};  /**< per dimension */
  Padding padding = "VALID";  /**< name or (lo, hi) pairs */
  Shape base_dilation = {};   /**< holes between operand elements */
  Shape window_dilation = {}; /**< holes between window taps */
};

/** lax.reduce_window: each output element is init_value combined with its window of x
 *  (padding and base-dilation holes add nothing, as in JAX). */
Array reduce_window(const Array& x, const ArrayLike& init_value, WindowReducer computation,
                    const Shape& window_dimensions, const WindowOptions& o = {});

/** flax.linen.max_pool over x (batch..., spatial..., features): one window size per
 *  spatial dimension; strides default to 1. */
Array max_pool(const Array& x, const Shape& window_shape, const Shape& strides = {},
               const Padding& padding = "VALID");
/** flax.linen.min_pool: max_pool with min. */
Array min_pool(const Array& x, const Shape& window_shape, const Shape& strides = {},
               const Padding& padding = "VALID");
/** flax.linen.avg_pool: the window's mean; with count_include_pad=false padding does
 *  not count in the divisor. */
Array avg_pool(const Array& x, const Shape& window_shape, const Shape& strides = {},
               const Padding& padding = "VALID", bool count_include_pad = true);

}  // namespace tsr
