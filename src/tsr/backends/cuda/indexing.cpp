// The CUDA kernel table's gather and scatter: the plans are the CPU kernels'
// (backends/common/gather_scatter_build.h); the kernels are in gather_scatter.cu.
#include "tsr/backends/common/gather_scatter_build.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/core/convert.h"
#include "tsr/prims/gather_scatter.h"

namespace tsr::detail::cuda {

void gather(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Gather&>(*a.prim);
  const GatherPlan g = gather_plan(a);
  const LocalType& ot = (*a.out)[0];
  alignas(16) unsigned char fill[16] = {};
  double fv = p.fill();
  convert(&fv, DType::Float64, fill, ot.dtype, 1);  // the host's conversion, as the CPU
  gather_launch(itemsize(ot.dtype), a.in_ptr[0], a.in_ptr[1], g, fill, a.out_ptr[0],
                numel(ot.shape), stream_of(a));
}

void scatter(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Scatter&>(*a.prim);
  const ScatterPlan sp = scatter_plan(a);
  const LocalType& ot = (*a.out)[0];
  const int64_t nout = numel(ot.shape);
  if (a.out_ptr[0] != a.in_ptr[0] && nout > 0)
    check(cudaMemcpyAsync(a.out_ptr[0], a.in_ptr[0], static_cast<size_t>(nout) * itemsize(ot.dtype),
                          cudaMemcpyDeviceToDevice, stream_of(a)),
          p.name(), "cudaMemcpyAsync");
  scatter_launch(static_cast<int>(p.kind()), ot.dtype, sp, a.in_ptr[1], a.in_ptr[2], a.out_ptr[0],
                 numel((*a.in)[2].shape), nout, stream_of(a));
}

}  // namespace tsr::detail::cuda
