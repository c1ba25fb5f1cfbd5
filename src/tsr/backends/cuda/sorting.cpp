// The CUDA kernel table's sort, top_k and searchsorted: lines along the sorted axis
// viewed as [outer, n, inner], as the CPU kernels; the kernels are in sort.cu.
#include <vector>

#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/prims/sort.h"

namespace tsr::detail::cuda {

void sort(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Sort&>(*a.prim);
  const auto& in = *a.in;
  AxisLines l = axis_lines(in[0].shape, p.dimension());
  std::vector<DType> dtypes;
  for (const auto& t : in) dtypes.push_back(t.dtype);
  sort_launch(static_cast<int>(in.size()), p.num_keys(), dtypes.data(), a.in_ptr, a.out_ptr,
              l.outer, l.n, l.inner, stream_of(a));
}

void top_k(const KernelArgs& a) {
  const auto& p = static_cast<const prim::TopK&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  AxisLines l = axis_lines(s, static_cast<int>(s.size()) - 1);
  top_k_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], static_cast<int32_t*>(a.out_ptr[1]),
               l.outer, l.n, p.k(), stream_of(a));
}

void searchsorted(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SearchSorted&>(*a.prim);
  searchsorted_launch((*a.in)[0].dtype, a.in_ptr[0], (*a.in)[0].shape[0], a.in_ptr[1],
                      numel((*a.in)[1].shape), p.right(), static_cast<int32_t*>(a.out_ptr[0]),
                      stream_of(a));
}

}  // namespace tsr::detail::cuda
