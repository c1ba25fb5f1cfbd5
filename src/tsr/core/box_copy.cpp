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

namespace {
// Walks the box `extent` at src_origin in src_shape and dst_origin in dst_shape
// (row-major element offsets), calling run(src_offset, dst_offset, n) for each
// contiguous run; trailing dims whole on both sides merge into one run.
template <typename Run>
void walk_box(const Shape& src_shape, const Shape& src_origin, const Shape& dst_shape,
              const Shape& dst_origin, const Shape& extent, Run&& run_at) {
  int rank = static_cast<int>(extent.size());
  for (int64_t e : extent)
    if (e == 0) return;
  if (rank == 0) {
    run_at(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
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
    run_at(soff, doff, run);
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
}  // namespace

void copy_box(const void* src, const Shape& src_shape, const Shape& src_origin, void* dst,
              const Shape& dst_shape, const Shape& dst_origin, const Shape& extent,
              size_t itemsize) {
  const char* sp = static_cast<const char*>(src);
  char* dp = static_cast<char*>(dst);
  walk_box(src_shape, src_origin, dst_shape, dst_origin, extent,
           [&](int64_t soff, int64_t doff, int64_t n) {
             std::memcpy(dp + doff * itemsize, sp + soff * itemsize,
                         static_cast<size_t>(n) * itemsize);
           });
}

void convert_box(const void* src, DType from, const Shape& src_shape, const Shape& src_origin,
                 void* dst, DType to, const Shape& dst_shape, const Shape& dst_origin,
                 const Shape& extent) {
  const char* sp = static_cast<const char*>(src);
  char* dp = static_cast<char*>(dst);
  size_t si = static_cast<size_t>(itemsize(from)), di = static_cast<size_t>(itemsize(to));
  walk_box(src_shape, src_origin, dst_shape, dst_origin, extent,
           [&](int64_t soff, int64_t doff, int64_t n) {
             convert(sp + soff * si, from, dp + doff * di, to, n);
           });
}

}  // namespace tsr::detail
