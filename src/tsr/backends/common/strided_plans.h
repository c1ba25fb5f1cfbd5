#pragma once
// The index arithmetic of the shape kernels that are one strided copy: transpose,
// broadcast_in_dim, slice and rev each read the source through element strides (any
// sign, 0 to broadcast) from an offset and write a row-major output. The CPU and
// CUDA kernels both build their copy from these plans.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tsr/shape.h"

namespace tsr::detail {

/** A row-major output of `extent` read from source element `offset` + sum(i * stride). */
struct StridedRead {
  Shape extent;                 /**< the output's shape */
  std::vector<int64_t> strides; /**< per output dim: source element stride */
  int64_t offset = 0;           /**< source element of the output's first */
};

/** Row-major element strides of `shape`. */
inline std::vector<int64_t> row_major(const Shape& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    st[d] = acc;
    acc *= shape[d];
  }
  return st;
}

/** out = transpose(in, perm). */
inline StridedRead transpose_read(const Shape& in, const std::vector<int>& perm) {
  std::vector<int64_t> full = row_major(in);
  StridedRead r{Shape(perm.size()), std::vector<int64_t>(perm.size()), 0};
  for (size_t i = 0; i < perm.size(); ++i) r.extent[i] = in[perm[i]], r.strides[i] = full[perm[i]];
  return r;
}

/** out (shape `out`) = broadcast_in_dim(in, bdims): size-1 operand dims read stride 0. */
inline StridedRead broadcast_read(const Shape& in, const Shape& out,
                                  const std::vector<int>& bdims) {
  std::vector<int64_t> full = row_major(in);
  StridedRead r{out, std::vector<int64_t>(out.size(), 0), 0};
  for (size_t i = 0; i < bdims.size(); ++i)
    if (in[i] == out[bdims[i]]) r.strides[bdims[i]] = full[i];
  return r;
}

/** out (shape `out`) = in[start :: step] per dim. */
inline StridedRead slice_read(const Shape& in, const Shape& out, const Shape& start,
                              const Shape& step) {
  std::vector<int64_t> full = row_major(in);
  StridedRead r{out, std::vector<int64_t>(in.size()), 0};
  for (size_t d = 0; d < in.size(); ++d) {
    bool identity = start[d] == 0 && step[d] == 1 && out[d] == in[d];
    r.strides[d] = identity ? full[d] : step[d] * full[d];
    r.offset += identity ? 0 : start[d] * full[d];
  }
  return r;
}

/** out = in reversed along `dims` (negative strides from the last element). */
inline StridedRead rev_read(const Shape& in, const std::vector<int>& dims) {
  StridedRead r{in, row_major(in), 0};
  for (int d : dims) {
    r.offset += (in[d] - 1) * r.strides[d];
    r.strides[d] = -r.strides[d];
  }
  return r;
}

/** A box of `extent` copied from source element src_offset + sum(i * src_strides) to
 *  destination element dst_offset + sum(i * dst_strides). */
struct StridedCopy {
  Shape extent;                     /**< the box */
  std::vector<int64_t> src_strides; /**< per dim: source element stride */
  std::vector<int64_t> dst_strides; /**< per dim: destination element stride */
  int64_t src_offset = 0;           /**< the box's first source element */
  int64_t dst_offset = 0;           /**< its destination */
};

/** lax.pad's copy of the operand into an output already filled with the padding
 *  value: operand element j of a dim lands at lo + j * (interior + 1), and only the
 *  ones inside the output are copied (a negative lo or hi crops). */
inline StridedCopy pad_copy(const Shape& in, const Shape& out, const Shape& lo,
                            const Shape& interior) {
  StridedCopy c{Shape(in.size()), row_major(in), std::vector<int64_t>(in.size()), 0, 0};
  std::vector<int64_t> ods = row_major(out);
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t step = interior[d] + 1;
    int64_t j0 = lo[d] >= 0 ? 0 : (-lo[d] + step - 1) / step;
    int64_t last = out[d] - 1 - lo[d];  // largest position offset that still fits
    int64_t j1 = last < 0 ? -1 : std::min(in[d] - 1, last / step);
    c.extent[d] = std::max<int64_t>(0, j1 - j0 + 1);
    c.dst_strides[d] = step * ods[d];
    c.dst_offset += (lo[d] + j0 * step) * ods[d];
    c.src_offset += j0 * c.src_strides[d];
  }
  return c;
}

/** A shape viewed as [outer, n, inner] around `axis` (a rank-0 shape: one line of 1). */
struct AxisLines {
  int64_t outer = 1, n = 1, inner = 1; /**< sizes before, along and after the axis */
};
inline AxisLines axis_lines(const Shape& s, int axis) {
  AxisLines l;
  for (int d = 0; d < axis; ++d) l.outer *= s[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) l.inner *= s[d];
  l.n = s.empty() ? 1 : s[axis];
  return l;
}

/** iota's values over a local block at `origin` of the global `shape`: value = offset +
 *  sum(local index * strides), the global index along `dimension`, or the global
 *  row-major flat index for dimension -1. */
inline StridedRead iota_read(const Shape& local, const Shape& shape, int dimension,
                             const Shape& origin) {
  StridedRead r{local, std::vector<int64_t>(local.size(), 0), 0};
  if (dimension >= 0) {
    r.strides[dimension] = 1;
    r.offset = origin[dimension];
  } else {
    r.strides = row_major(shape);
    for (size_t d = 0; d < local.size(); ++d) r.offset += origin[d] * r.strides[d];
  }
  return r;
}

}  // namespace tsr::detail
