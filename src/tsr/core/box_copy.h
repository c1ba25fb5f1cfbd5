#pragma once
// Copies of n-d boxes between row-major arrays: what resharding, host reads and
// shard extraction are made of.
#include <cstddef>

#include "tsr/dtype.h"
#include "tsr/shape.h"

namespace tsr::detail {

/** A box in an array: start and extent per dimension. */
struct Box {
  Shape start;  /**< first index per dim */
  Shape extent; /**< size per dim */
  /** Number of elements. */
  int64_t numel() const { return tsr::numel(extent); }
};

/** Intersection of two boxes; extent 0 somewhere when they do not meet. */
Box intersect(const Box& a, const Box& b);
/** True when some extent is 0. */
bool is_empty(const Box& b);

/** Copies `extent` elements from src (shape src_shape, starting at src_origin) to
 *  dst (shape dst_shape, starting at dst_origin). Contiguous runs use memcpy. */
void copy_box(const void* src, const Shape& src_shape, const Shape& src_origin, void* dst,
              const Shape& dst_shape, const Shape& dst_origin, const Shape& extent,
              size_t itemsize);

/** copy_box that converts each element from `from` to `to` on the way (as
 *  detail::convert): reads into another dtype need no staging copy. */
void convert_box(const void* src, DType from, const Shape& src_shape, const Shape& src_origin,
                 void* dst, DType to, const Shape& dst_shape, const Shape& dst_origin,
                 const Shape& extent);

}  // namespace tsr::detail
