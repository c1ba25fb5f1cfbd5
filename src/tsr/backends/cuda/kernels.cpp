// The CUDA kernel table's functions: each reads its primitive's parameters and the
// local types on the host, and calls a launcher (launch.h). The index plans of the
// copy-like shape ops are the CPU's (backends/common/strided_plans.h).
#include <algorithm>
#include <vector>

#include "tsr/backends/common/random_plan.h"
#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/core/convert.h"
#include "tsr/prims/complex.h"
#include "tsr/prims/creation.h"
#include "tsr/prims/cumulative.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/random.h"
#include "tsr/prims/reduction.h"
#include "tsr/prims/shape_ops.h"

namespace tsr::detail::cuda {
namespace {

int64_t count(const LocalType& t) { return numel(t.shape); }

void run_read(const KernelArgs& a, const StridedRead& r, const char* prim) {
  size_t isz = itemsize((*a.out)[0].dtype);
  const char* src = static_cast<const char*>(a.in_ptr[0]) + r.offset * static_cast<int64_t>(isz);
  strided_read_launch(isz, src, read_strides(r.extent, r.strides, prim), a.out_ptr[0],
                      numel(r.extent), stream_of(a));
}

// A strided copy between device buffers, items of `isz` bytes.
void run_copy(void* dst, const void* src, const StridedCopy& c, size_t isz, const char* prim,
              cudaStream_t s) {
  int64_t n = numel(c.extent);
  if (n == 0) return;
  if (c.extent.size() > static_cast<size_t>(kMaxDims)) too_many_dims(prim, c.extent.size());
  Strides st;
  st.rank = static_cast<int>(c.extent.size());
  for (int d = 0; d < st.rank; ++d) {
    st.size[d] = c.extent[d];
    st.in[0][d] = c.src_strides[d];
    st.in[1][d] = c.dst_strides[d];
  }
  auto at = [isz](auto* p, int64_t off) {
    return reinterpret_cast<decltype(p)>(reinterpret_cast<uintptr_t>(p) +
                                         off * static_cast<int64_t>(isz));
  };
  strided_copy_launch(isz, at(dst, c.dst_offset), at(src, c.src_offset), st, n, s);
}

// The starts of a dynamic slice of `small` out of `big`, index scalars from input
// `first` on; a dim covered whole is the identity (possibly sharded, so its start
// does not apply locally), as the CPU kernel's dynamic_starts.
DynamicStarts dynamic_starts(const KernelArgs& a, int first, const Shape& big, const Shape& small,
                             const char* prim) {
  if (big.size() > static_cast<size_t>(kMaxDims)) too_many_dims(prim, big.size());
  DynamicStarts st;
  st.rank = static_cast<int>(big.size());
  for (int d = 0; d < st.rank; ++d) {
    if (small[d] == big[d]) continue;
    st.index[d] = a.in_ptr[first + d];
    st.dtype[d] = (*a.in)[first + d].dtype;
    st.max_start[d] = big[d] - small[d];
  }
  return st;
}

}  // namespace

void unary(const KernelArgs& a) {
  auto op = static_cast<const prim::Unary&>(*a.prim).op();
  unary_launch(op, (*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], count((*a.in)[0]), stream_of(a));
}

void binary(const KernelArgs& a) {
  auto op = static_cast<const prim::Binary&>(*a.prim).op();
  const Shape& xs = (*a.in)[0].shape;
  const Shape& ys = (*a.in)[1].shape;
  const Shape& os = (*a.out)[0].shape;
  int64_t n = numel(os);
  if ((xs == os || xs.empty()) && (ys == os || ys.empty())) {
    bool av = !xs.empty() || os.empty(), bv = !ys.empty() || os.empty();
    binary_launch(op, (*a.in)[0].dtype, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0], n, nullptr, av, bv,
                  stream_of(a));
  } else {
    Strides st = broadcast_strides(os, {&xs, &ys});
    binary_launch(op, (*a.in)[0].dtype, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0], n, &st, true, true,
                  stream_of(a));
  }
}

void integer_pow(const KernelArgs& a) {
  int y = static_cast<const prim::IntegerPow&>(*a.prim).y();
  integer_pow_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], count((*a.in)[0]), y,
                     stream_of(a));
}

void convert_element_type(const KernelArgs& a) {
  DType from = (*a.in)[0].dtype, to = (*a.out)[0].dtype;
  if (from == to) return copy_input(a);
  convert_launch(from, to, a.in_ptr[0], a.out_ptr[0], count((*a.in)[0]), stream_of(a));
}

void select_n(const KernelArgs& a) {
  const LocalType& w = (*a.in)[0];
  bool scalar = w.shape.empty() && !(*a.out)[0].shape.empty();
  select_launch(w.dtype, itemsize((*a.out)[0].dtype), a.in_ptr[0], scalar, a.in_ptr + 1,
                static_cast<int>(a.in->size()) - 1, a.out_ptr[0], count((*a.out)[0]), stream_of(a));
}

void clamp(const KernelArgs& a) {
  clamp_launch((*a.in)[1].dtype, a.in_ptr[0], !(*a.in)[0].shape.empty(), a.in_ptr[1], a.in_ptr[2],
               !(*a.in)[2].shape.empty(), a.out_ptr[0], count((*a.in)[1]), stream_of(a));
}

void copy_input(const KernelArgs& a) {
  int64_t bytes = std::min<int64_t>(count((*a.in)[0]) * itemsize((*a.in)[0].dtype),
                                    count((*a.out)[0]) * itemsize((*a.out)[0].dtype));
  if (a.in_ptr[0] == a.out_ptr[0] || bytes <= 0) return;
  check(cudaMemcpyAsync(a.out_ptr[0], a.in_ptr[0], static_cast<size_t>(bytes),
                        cudaMemcpyDeviceToDevice, stream_of(a)),
        a.prim ? a.prim->name() : "copy", "cudaMemcpyAsync");
}

void transpose(const KernelArgs& a) {
  const auto& perm = static_cast<const prim::Transpose&>(*a.prim).perm();
  run_read(a, transpose_read((*a.in)[0].shape, perm), "transpose");
}

void broadcast_in_dim(const KernelArgs& a) {
  const auto& bdims = static_cast<const prim::BroadcastInDim&>(*a.prim).bdims();
  run_read(a, broadcast_read((*a.in)[0].shape, (*a.out)[0].shape, bdims), "broadcast_in_dim");
}

void slice(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Slice&>(*a.prim);
  run_read(a, slice_read((*a.in)[0].shape, (*a.out)[0].shape, p.start(), p.strides()), "slice");
}

void rev(const KernelArgs& a) {
  const auto& dims = static_cast<const prim::Rev&>(*a.prim).dims();
  run_read(a, rev_read((*a.in)[0].shape, dims), "rev");
}

void pad(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Pad&>(*a.prim);
  const Shape& os = (*a.out)[0].shape;
  size_t isz = itemsize((*a.out)[0].dtype);
  fill_from_launch(isz, a.in_ptr[1], a.out_ptr[0], numel(os), stream_of(a));
  run_copy(a.out_ptr[0], a.in_ptr[0], pad_copy((*a.in)[0].shape, os, p.lo(), p.interior()), isz,
           "pad", stream_of(a));
}

void concatenate(const KernelArgs& a) {
  int dim = static_cast<const prim::Concatenate&>(*a.prim).dim();
  std::vector<int64_t> ds = row_major((*a.out)[0].shape);
  size_t isz = itemsize((*a.out)[0].dtype);
  int64_t pos = 0;
  for (size_t k = 0; k < a.in->size(); ++k) {
    const Shape& s = (*a.in)[k].shape;
    run_copy(a.out_ptr[0], a.in_ptr[k], StridedCopy{s, row_major(s), ds, 0, pos * ds[dim]}, isz,
             "concatenate", stream_of(a));
    pos += s[dim];
  }
}

void split(const KernelArgs& a) {
  int axis = static_cast<const prim::Split&>(*a.prim).axis();
  std::vector<int64_t> ss = row_major((*a.in)[0].shape);
  size_t isz = itemsize((*a.in)[0].dtype);
  int64_t pos = 0;
  for (size_t k = 0; k < a.out->size(); ++k) {
    const Shape& os = (*a.out)[k].shape;
    run_copy(a.out_ptr[k], a.in_ptr[0], StridedCopy{os, ss, row_major(os), pos * ss[axis], 0}, isz,
             "split", stream_of(a));
    pos += os[axis];
  }
}

void dynamic_slice(const KernelArgs& a) {
  const Shape& s = (*a.in)[0].shape;
  const Shape& os = (*a.out)[0].shape;
  Strides st = read_strides(os, row_major(s), "dynamic_slice");  // in[0]: the source's strides
  for (int d = 0; d < st.rank; ++d) st.in[1][d] = row_major(os)[d];
  dynamic_copy_launch(itemsize((*a.out)[0].dtype), false, a.in_ptr[0], a.out_ptr[0], st,
                      dynamic_starts(a, 1, s, os, "dynamic_slice"), numel(os), stream_of(a));
}

void dynamic_update_slice(const KernelArgs& a) {
  const Shape& os = (*a.out)[0].shape;
  const Shape& us = (*a.in)[1].shape;
  size_t isz = itemsize((*a.out)[0].dtype);
  if (a.in_ptr[0] != a.out_ptr[0] && numel(os) > 0)
    check(cudaMemcpyAsync(a.out_ptr[0], a.in_ptr[0], static_cast<size_t>(numel(os)) * isz,
                          cudaMemcpyDeviceToDevice, stream_of(a)),
          "dynamic_update_slice", "cudaMemcpyAsync");
  Strides st = read_strides(us, row_major(us), "dynamic_update_slice");  // in[0]: the update's
  std::vector<int64_t> ds = row_major(os);
  for (int d = 0; d < st.rank; ++d) st.in[1][d] = ds[d];
  dynamic_copy_launch(isz, true, a.in_ptr[1], a.out_ptr[0], st,
                      dynamic_starts(a, 2, os, us, "dynamic_update_slice"), numel(us),
                      stream_of(a));
}

void full(const KernelArgs& a) {
  const LocalType& ot = (*a.out)[0];
  double value = static_cast<const prim::Full&>(*a.prim).value();
  alignas(16) unsigned char one[16] = {};
  convert(&value, DType::Float64, one, ot.dtype, 1);  // the host's conversion, as the CPU
  fill_launch(itemsize(ot.dtype), one, a.out_ptr[0], count(ot), stream_of(a));
}

void iota(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Iota&>(*a.prim);
  const Shape& os = (*a.out)[0].shape;
  int r = static_cast<int>(os.size());
  Shape origin = a.out_origin ? *a.out_origin : Shape(r, 0);
  StridedRead w = iota_read(os, p.shape(), p.dimension(), origin);  // the CPU's plan
  iota_launch((*a.out)[0].dtype, read_strides(os, w.strides, "iota"), w.offset, a.out_ptr[0],
              numel(os), stream_of(a));
}

void reduce(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Reduce&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  std::vector<int64_t> st = row_major(s);
  ReduceSplit sp;
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = std::find(p.axes().begin(), p.axes().end(), static_cast<int>(d)) != p.axes().end();
    if (sp.nk >= kMaxDims || sp.nr >= kMaxDims) too_many_dims(p.name(), s.size());
    if (red) {
      sp.rsize[sp.nr] = s[d];
      sp.rstride[sp.nr++] = st[d];
      sp.rcount *= s[d];
    } else {
      sp.ksize[sp.nk] = s[d];
      sp.kstride[sp.nk++] = st[d];
    }
  }
  reduce_launch(static_cast<int>(p.kind()), (*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], sp,
                count((*a.out)[0]), stream_of(a));
}

void arg_reduce(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ArgReduce&>(*a.prim);
  AxisLines l = axis_lines((*a.in)[0].shape, p.axis());
  int64_t no = l.outer, n = l.n, ni = l.inner;
  DType it = (*a.out)[0].dtype;
  if (n == 0) {  // no candidates (jnp.argmax raises): index 0, as the CPU kernel
    check(
        cudaMemsetAsync(a.out_ptr[0], 0, static_cast<size_t>(no * ni) * itemsize(it), stream_of(a)),
        p.name(), "cudaMemsetAsync");
    return;
  }
  arg_reduce_launch(p.is_max(), (*a.in)[0].dtype, it, a.in_ptr[0], a.out_ptr[0], no, n, ni,
                    stream_of(a));
}

void cumulative(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Cumulative&>(*a.prim);
  AxisLines l = axis_lines((*a.in)[0].shape, p.axis());
  scan_launch(static_cast<int>(p.kind()), (*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], l.outer, l.n,
              l.inner, p.reverse(), stream_of(a));
}

void random_bits(const KernelArgs& a) {
  const auto& p = static_cast<const prim::RandomBits&>(*a.prim);
  const LocalType& ot = (*a.out)[0];
  int r = static_cast<int>(ot.shape.size());
  Shape origin = a.out_origin ? *a.out_origin : Shape(r, 0);
  std::vector<int64_t> w = row_major(p.shape());
  RandomCall c;
  c.kind = p.dist() == prim::RandomDist::Bits ? 0 : p.dist() == prim::RandomDist::Uniform ? 1 : 2;
  c.t = ot.dtype;
  c.key = static_cast<const uint32_t*>(a.in_ptr[0]);
  c.out = a.out_ptr[0];
  c.global = read_strides(ot.shape, w, p.name());
  for (int d = 0; d < r; ++d) c.base += static_cast<uint64_t>(origin[d] * w[d]);
  c.n = numel(ot.shape);
  // The bounds exactly as the CPU kernel computes them, in the output's precision.
  if (ot.dtype == DType::Float32) {
    float lo = static_cast<float>(p.fmin()), hi = static_cast<float>(p.fmax());
    c.lo = lo;
    c.span = hi - lo;
  } else if (ot.dtype == DType::Float64) {
    c.lo = p.fmin();
    c.span = p.fmax() - p.fmin();
  } else if (ot.dtype == DType::Float16 || ot.dtype == DType::BFloat16) {
    auto round = [&](double v) {
      float f = static_cast<float>(v);
      return ot.dtype == DType::Float16 ? static_cast<float>(float16_t(f))
                                        : static_cast<float>(bfloat16_t(f));
    };
    float lo = round(p.fmin()), hi = round(p.fmax());
    c.lo = lo;
    c.span = hi - lo;
  }
  if (c.kind == 2) c.plan = rng::randint_plan(p, ot.dtype);
  random_launch(c, stream_of(a));
}

void threefry2x32(const KernelArgs& a) {
  threefry_launch(static_cast<const uint32_t*>(a.in_ptr[0]),
                  static_cast<const uint32_t*>(a.in_ptr[1]),
                  static_cast<const uint32_t*>(a.in_ptr[2]), static_cast<uint32_t*>(a.out_ptr[0]),
                  static_cast<uint32_t*>(a.out_ptr[1]), count((*a.out)[0]), stream_of(a));
}

void complex_part(const KernelArgs& a) {
  auto kind = static_cast<const prim::ComplexPart&>(*a.prim).kind();
  complex_part_launch(static_cast<int>(kind), (*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0],
                      count((*a.in)[0]), stream_of(a));
}

void make_complex(const KernelArgs& a) {
  // The parts broadcast as a binary op's operands (the CPU kernel's strides).
  const Shape& os = (*a.out)[0].shape;
  Strides st = broadcast_strides(os, {&(*a.in)[0].shape, &(*a.in)[1].shape});
  make_complex_launch((*a.out)[0].dtype, a.in_ptr[0], a.in_ptr[1], a.out_ptr[0], st, numel(os),
                      stream_of(a));
}

}  // namespace tsr::detail::cuda
