// DeviceMemory: host code's access to buffer bytes (runtime/accelerator.h). On an
// accelerator, box copies and transposes become 2-d strided copies on the device's
// stream, so reshards and collectives move device data without host round trips.
#include <cstring>
#include <vector>

#include "tsr/core/box_copy.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {

void DeviceMemory::read(void* host_dst, const void* src, size_t n) const {
  if (n == 0) return;
  if (ops)
    ops->to_host(stream, host_dst, src, n);
  else
    std::memcpy(host_dst, src, n);
}

void DeviceMemory::write(void* dst, const void* host_src, size_t n) const {
  if (n == 0) return;
  if (ops)
    ops->to_device(stream, dst, host_src, n);
  else
    std::memcpy(dst, host_src, n);
}

void DeviceMemory::copy(void* dst, const void* src, size_t n) const {
  if (n == 0 || dst == src) return;
  if (ops)
    ops->copy(stream, dst, src, n);
  else
    std::memcpy(dst, src, n);
}

void DeviceMemory::fill(void* dst, int byte, size_t n) const {
  if (n == 0) return;
  if (ops)
    ops->fill(stream, dst, byte, n);
  else
    std::memset(dst, byte, n);
}

void DeviceMemory::sync() const {
  if (ops) ops->sync(stream);
}

void DeviceMemory::copy_box(const void* src, const Shape& src_shape, const Shape& src_origin,
                            void* dst, const Shape& dst_shape, const Shape& dst_origin,
                            const Shape& extent, size_t itemsize) const {
  if (!ops) {
    detail::copy_box(src, src_shape, src_origin, dst, dst_shape, dst_origin, extent, itemsize);
    return;
  }
  const size_t r = extent.size();
  for (int64_t e : extent)
    if (e == 0) return;
  // Row-major element strides of both blocks, and the offsets of the boxes' corners.
  std::vector<int64_t> ss(r, 1), ds(r, 1);
  for (size_t d = r; d-- > 1;) {
    ss[d - 1] = ss[d] * src_shape[d];
    ds[d - 1] = ds[d] * dst_shape[d];
  }
  int64_t s0 = 0, d0 = 0;
  for (size_t d = 0; d < r; ++d) {
    s0 += src_origin[d] * ss[d];
    d0 += dst_origin[d] * ds[d];
  }
  // Dim j and the trailing dims that both blocks hold whole form one contiguous run;
  // dim j - 1 gives the 2-d copy's rows; the host loops over the dims before it.
  if (r == 0) {
    ops->copy(stream, dst, src, itemsize);
    return;
  }
  size_t j = r - 1;
  while (j > 0 && extent[j] == src_shape[j] && extent[j] == dst_shape[j]) --j;
  int64_t width = 1;
  for (size_t d = j; d < r; ++d) width *= extent[d];
  const size_t row = static_cast<size_t>(width) * itemsize;
  const auto* s = static_cast<const char*>(src);
  auto* o = static_cast<char*>(dst);
  if (j == 0) {
    ops->copy(stream, o + d0 * static_cast<int64_t>(itemsize),
              s + s0 * static_cast<int64_t>(itemsize), row);
    return;
  }
  const size_t h = j - 1;  // the rows' dim
  int64_t outer = 1;
  for (size_t d = 0; d < h; ++d) outer *= extent[d];
  std::vector<int64_t> idx(h, 0);
  for (int64_t k = 0; k < outer; ++k) {
    int64_t so = s0, dof = d0;
    for (size_t d = 0; d < h; ++d) {
      so += idx[d] * ss[d];
      dof += idx[d] * ds[d];
    }
    ops->copy2d(stream, o + dof * static_cast<int64_t>(itemsize),
                static_cast<size_t>(ds[h]) * itemsize, s + so * static_cast<int64_t>(itemsize),
                static_cast<size_t>(ss[h]) * itemsize, row, static_cast<size_t>(extent[h]));
    for (size_t d = h; d-- > 0;) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
  }
}

void DeviceMemory::swap_leading(const void* src, void* dst, const int64_t abc[3],
                                size_t item) const {
  if (!ops) {
    prim::swap_leading(src, dst, abc, item);
    return;
  }
  // Source row-block i (b rows) lands as every a-th row of the output from row i.
  const size_t row = static_cast<size_t>(abc[2]) * item;
  if (row == 0) return;
  const auto* s = static_cast<const char*>(src);
  auto* o = static_cast<char*>(dst);
  for (int64_t i = 0; i < abc[0]; ++i)
    ops->copy2d(stream, o + static_cast<size_t>(i) * row, static_cast<size_t>(abc[0]) * row,
                s + static_cast<size_t>(i * abc[1]) * row, row, row, static_cast<size_t>(abc[1]));
}

}  // namespace tsr::detail
