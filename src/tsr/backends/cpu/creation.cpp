// Creation kernels: each device writes only its own block, computed from the
// block's global origin (KernelArgs::out_origin).
#include <algorithm>
#include <cstring>
#include <vector>

#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/creation.h"

namespace tsr::detail::cpu {

void iota(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Iota&>(*a.prim);
  const LocalType& ot = (*a.out)[0];
  const Shape& os = ot.shape;
  int64_t n = numel(os);
  if (n == 0) return;
  int r = static_cast<int>(os.size());
  Shape origin = a.out_origin ? *a.out_origin : Shape(r, 0);
  // value = base + sum_k index_k * w[k] over the local index (shared with CUDA).
  StridedRead plan = iota_read(os, p.shape(), p.dimension(), origin);
  const std::vector<int64_t>& w = plan.strides;
  int64_t v = plan.offset;
  // Values are made as int64 in blocks, then converted to the output dtype.
  constexpr int64_t kBlock = 512;
  int64_t buf[kBlock];
  std::vector<int64_t> ctr(r, 0);
  size_t isz = itemsize(ot.dtype);
  for (int64_t f0 = 0; f0 < n; f0 += kBlock) {
    int64_t m = std::min(kBlock, n - f0);
    for (int64_t j = 0; j < m; ++j) {
      buf[j] = v;
      for (int d = r - 1; d >= 0; --d) {
        v += w[d];
        if (++ctr[d] < os[d]) break;
        v -= w[d] * os[d];
        ctr[d] = 0;
      }
    }
    convert_n(buf, DType::Int64, static_cast<char*>(a.out_ptr[0]) + f0 * isz, ot.dtype, m);
  }
}

void full(const KernelArgs& a) {
  const LocalType& ot = (*a.out)[0];
  double value = static_cast<const prim::Full&>(*a.prim).value();
  alignas(16) unsigned char one[16];
  convert_n(&value, DType::Float64, one, ot.dtype, 1);
  fill_value(a.out_ptr[0], one, numel(ot.shape), itemsize(ot.dtype));
}

}  // namespace tsr::detail::cpu
