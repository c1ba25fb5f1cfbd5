#include "tsr/core/box_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tsr/core/convert.h"

namespace tsr::detail {

Box intersect(const Box& a, const Box& b) {
  Box r{a.start, a.extent};
  for (size_t d = 0; d < a.start.size(); ++d) {
    int64_t lo = std::max(a.start[d], b.start[d]);
    int64_t hi = std::min(a.start[d] + a.extent[d], b.start[d] + b.extent[d]);
    r.start[d] = lo;
    r.extent[d] = std::max<int64_t>(0, hi - lo);
  }
  return r;
}

bool is_empty(const Box& b) {
  return std::any_of(b.extent.begin(), b.extent.end(), [](int64_t e) { return e == 0; });
}

void copy_box(const void* src, const Shape& src_shape, const Shape& src_origin, void* dst,
              const Shape& dst_shape, const Shape& dst_origin, const Shape& extent,
              size_t itemsize) {
  int rank = static_cast<int>(extent.size());
  for (int64_t e : extent)
    if (e == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, itemsize);
    return;
  }
  // Merge trailing dims that are whole on both sides into one contiguous run.
  int inner = rank - 1;
  int64_t run = extent[inner];
  while (inner > 0 && extent[inner] == src_shape[inner] && extent[inner] == dst_shape[inner]) {
    --inner;
    run *= extent[inner];
  }
  std::vector<int64_t> ss(rank), ds(rank);
  int64_t s = 1, t = 1;
  for (int d = rank - 1; d >= 0; --d) {
    ss[d] = s;
    ds[d] = t;
    s *= src_shape[d];
    t *= dst_shape[d];
  }
  int64_t soff = 0, doff = 0;
  for (int d = 0; d < rank; ++d) {
    soff += src_origin[d] * ss[d];
    doff += dst_origin[d] * ds[d];
  }
  const char* sp = static_cast<const char*>(src);
  char* dp = static_cast<char*>(dst);
  size_t run_bytes = static_cast<size_t>(run) * itemsize;
  std::vector<int64_t> ctr(inner, 0);
  for (;;) {
    std::memcpy(dp + doff * itemsize, sp + soff * itemsize, run_bytes);
    int d = inner - 1;
    for (; d >= 0; --d) {
      soff += ss[d];
      doff += ds[d];
      if (++ctr[d] < extent[d]) break;
      soff -= ss[d] * extent[d];
      doff -= ds[d] * extent[d];
      ctr[d] = 0;
    }
    if (d < 0) return;
  }
}

void convert_box(const void* src, DType from, const Shape& src_shape, const Shape& src_origin,
                 void* dst, DType to, const Shape& dst_shape, const Shape& dst_origin,
                 const Shape& extent) {
  int rank = static_cast<int>(extent.size());
  for (int64_t e : extent)
    if (e == 0) return;
  const char* sp = static_cast<const char*>(src);
  char* dp = static_cast<char*>(dst);
  size_t si = static_cast<size_t>(itemsize(from)), di = static_cast<size_t>(itemsize(to));
  if (rank == 0) {
    convert(sp, from, dp, to, 1);
    return;
  }
  // The walk of copy_box, converting each contiguous run.
  int inner = rank - 1;
  int64_t run = extent[inner];
  while (inner > 0 && extent[inner] == src_shape[inner] && extent[inner] == dst_shape[inner]) {
    --inner;
    run *= extent[inner];
  }
  std::vector<int64_t> ss(rank), ds(rank);
  int64_t s = 1, t = 1;
  for (int d = rank - 1; d >= 0; --d) {
    ss[d] = s;
    ds[d] = t;
    s *= src_shape[d];
    t *= dst_shape[d];
  }
  int64_t soff = 0, doff = 0;
  for (int d = 0; d < rank; ++d) {
    soff += src_origin[d] * ss[d];
    doff += dst_origin[d] * ds[d];
  }
  std::vector<int64_t> ctr(inner, 0);
  for (;;) {
    convert(sp + soff * si, from, dp + doff * di, to, run);
    int d = inner - 1;
    for (; d >= 0; --d) {
      soff += ss[d];
      doff += ds[d];
      if (++ctr[d] < extent[d]) break;
      soff -= ss[d] * extent[d];
      doff -= ds[d] * extent[d];
      ctr[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace tsr::detail
