// The CUDA kernel table's reduce_window and pooling gradients: the window as a plan of
// plain arrays (backends/common/window_ops.h); the kernels are in windowed.cu.
#include "tsr/prims/windowed.h"
#include "tsr/backends/cuda/cuda_kernels.h"

namespace tsr::detail::cuda {
namespace {

// The window over an operand of shape `in` whose window positions are `out`.
WindowPlan window_plan(const prim::Window& w, const Shape& in, const Shape& out, const char* prim) {
  if (in.size() > static_cast<size_t>(kWindowMaxDims)) too_many_dims(prim, in.size());
  WindowPlan p;
  p.rank = static_cast<int>(in.size());
  for (int d = 0; d < p.rank; ++d) {
    p.in_size[d] = in[d];
    p.out_size[d] = out[d];
    p.win[d] = w.dims[d];
    p.stride[d] = w.strides[d];
    p.window_dilation[d] = w.window_dilation[d];
    p.pad_lo[d] = w.padding[d].first;
    p.base_dilation[d] = w.base_dilation[d];
    p.win_n *= w.dims[d];
  }
  return p;
}

}  // namespace

void reduce_window(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ReduceWindow&>(*a.prim);
  const Shape& os = (*a.out)[0].shape;
  reduce_window_launch(static_cast<int>(p.op()), (*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0],
                       window_plan(p.window(), (*a.in)[0].shape, os, p.name()), numel(os),
                       stream_of(a));
}

void select_and_gather_add(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SelectAndGatherAdd&>(*a.prim);
  const Shape& os = (*a.out)[0].shape;
  select_and_gather_add_launch(p.select() == prim::WindowOp::Max, (*a.in)[0].dtype,
                               (*a.in)[1].dtype, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0],
                               window_plan(p.window(), (*a.in)[1].shape, os, p.name()), numel(os),
                               stream_of(a));
}

void select_and_scatter_add(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SelectAndScatterAdd&>(*a.prim);
  const Shape& src = (*a.in)[0].shape;
  const Shape& x = (*a.in)[1].shape;
  select_and_scatter_add_launch(p.select() == prim::WindowOp::Max, (*a.in)[0].dtype,
                                (*a.in)[1].dtype, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0],
                                window_plan(p.window(), x, src, p.name()), numel(src), numel(x),
                                stream_of(a));
}

}  // namespace tsr::detail::cuda
