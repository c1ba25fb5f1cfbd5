// The CUDA kernel table's conv_general_dilated: the operands' specs as strides, the
// CPU direct loop's accumulation dtype, and the accumulator converted to the output's
// dtype by the CPU's conversion (convert_element_type's kernel); the kernel is in
// convolution.cu.
#include <vector>

#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/prims/convolution.h"

namespace tsr::detail::cuda {

void conv_general_dilated(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ConvGeneralDilated&>(*a.prim).params_of();
  const Shape &ls = (*a.in)[0].shape, &rs = (*a.in)[1].shape, &os = (*a.out)[0].shape;
  const DType in = (*a.in)[0].dtype, out = (*a.out)[0].dtype;
  const int64_t n = numel(os);
  if (n == 0) return;
  if (p.strides.size() > static_cast<size_t>(kConvMaxSpatial))
    too_many_dims("conv_general_dilated", ls.size());
  const std::vector<int64_t> lst = row_major(ls), rst = row_major(rs), ost = row_major(os);
  ConvPlan c;
  c.ns = static_cast<int>(p.strides.size());
  for (int d = 0; d < 2 + c.ns; ++d) {
    c.l_stride[d] = lst[p.dn.lhs[d]];
    c.r_stride[d] = rst[p.dn.rhs[d]];
    c.o_stride[d] = ost[p.dn.out[d]];
  }
  for (int i = 0; i < c.ns; ++i) {
    c.l_size[i] = ls[p.dn.lhs[2 + i]];
    c.r_size[i] = rs[p.dn.rhs[2 + i]];
    c.o_size[i] = os[p.dn.out[2 + i]];
    c.K *= c.r_size[i];
    c.stride[i] = p.strides[i];
    c.rhs_dilation[i] = p.rhs_dilation[i];
    c.lhs_dilation[i] = p.lhs_dilation[i];
    c.pad_lo[i] = p.padding[i].first;
  }
  c.O = rs[p.dn.rhs[0]];
  c.I = rs[p.dn.rhs[1]];
  c.og = c.O / p.feature_group_count;
  c.ob = c.O / p.batch_group_count;
  c.nb = ls[p.dn.lhs[0]] / p.batch_group_count;
  // The CPU direct loop's accumulation dtype.
  const DType acc = in == DType::Float64 || out == DType::Float64 ? DType::Float64
                    : is_floating(in) || is_floating(out)         ? DType::Float32
                                                                  : DType::Int64;
  cudaStream_t s = stream_of(a);
  if (acc == out) return conv_launch(in, acc, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0], c, n, s);
  Scratch wide(s, "conv_general_dilated");
  wide.alloc(static_cast<size_t>(n) * itemsize(acc));
  conv_launch(in, acc, a.in_ptr[0], a.in_ptr[1], wide.p, c, n, s);
  convert_launch(acc, out, wide.p, a.out_ptr[0], n, s);
}

}  // namespace tsr::detail::cuda
