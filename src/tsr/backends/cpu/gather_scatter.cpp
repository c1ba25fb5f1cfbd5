// gather and scatter kernels. They work in global coordinates: the device's
// output block starts at out_origin, its input blocks at in_origin; the
// partitioner guarantees that every element the block needs is local.
#include <algorithm>
#include <complex>
#include <cstring>

#include "tsr/backends/common/gather_scatter_build.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/gather_scatter.h"

namespace tsr::detail::cpu {
namespace {

// Steps `idx` through `extent` row-major; false after the last position.
bool next(Shape& idx, const Shape& extent) {
  for (int d = static_cast<int>(extent.size()) - 1; d >= 0; --d) {
    if (++idx[d] < extent[d]) return true;
    idx[d] = 0;
  }
  return false;
}

static_assert(static_cast<int>(ScatterKind::Max) == static_cast<int>(ScatterOp::Max) &&
                  static_cast<int>(ScatterKind::Mul) == static_cast<int>(ScatterOp::Mul),
              "ScatterOp mirrors ScatterKind");

// The shared combiner (gather_scatter_plan.h); the half types combine in float, and
// complex min / max compare lexicographically.
template <typename T>
T combine(ScatterKind kind, T a, T b) {
  const auto k = static_cast<ScatterOp>(kind);
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    switch (k) {
      case ScatterOp::Add:
        return a + b;
      case ScatterOp::Sub:
        return a - b;
      case ScatterOp::Mul:
        return a * b;
      case ScatterOp::Min:
        return complex_less(b.real(), b.imag(), a.real(), a.imag()) ? b : a;
      case ScatterOp::Max:
        return complex_less(a.real(), a.imag(), b.real(), b.imag()) ? b : a;
      default:
        return b;
    }
  } else if constexpr (kIsHalf<T>) {
    float r = scatter_combine(k, to_float(a), to_float(b));
    T out;
    from_float(&r, &out, 1);
    return out;
  } else {
    return scatter_combine(k, a, b);
  }
}

template <typename T>
void combine_box(ScatterKind k, T* dst, const int64_t* dst_st, const T* src, const int64_t* src_st,
                 const Shape& extent) {
  const int r = static_cast<int>(extent.size());
  if (r == 0) {
    *dst = combine(k, *dst, *src);
    return;
  }
  for (int64_t e : extent)
    if (e <= 0) return;
  // Outer dims by odometer (no allocation up to rank 16), the last one as a loop.
  int64_t small[16] = {};
  std::vector<int64_t> big(r > 16 ? r : 0, 0);
  int64_t* idx = r > 16 ? big.data() : small;
  const int64_t n = extent[r - 1], ds = dst_st[r - 1], ss = src_st[r - 1];
  while (true) {
    int64_t od = 0, os = 0;
    for (int d = 0; d < r - 1; ++d) {
      od += idx[d] * dst_st[d];
      os += idx[d] * src_st[d];
    }
    T* o = dst + od;
    const T* in = src + os;
    for (int64_t q = 0; q < n; ++q) o[q * ds] = combine(k, o[q * ds], in[q * ss]);
    int d = r - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

void combine_any(ScatterKind k, DType t, void* dst, const int64_t* dst_st, const void* src,
                 const int64_t* src_st, const Shape& extent) {
  switch (t) {
#define TSR_CASE(DT, T) \
  case DType::DT:       \
    return combine_box(k, static_cast<T*>(dst), dst_st, static_cast<const T*>(src), src_st, extent);
    TSR_CASE(Bool, bool)
    TSR_CASE(Int8, int8_t)
    TSR_CASE(Int32, int32_t)
    TSR_CASE(Int64, int64_t)
    TSR_CASE(UInt8, uint8_t)
    TSR_CASE(UInt32, uint32_t)
    TSR_CASE(Float16, float16_t)
    TSR_CASE(BFloat16, bfloat16_t)
    TSR_CASE(Float32, float)
    TSR_CASE(Float64, double)
    TSR_CASE(Int16, int16_t)
    TSR_CASE(UInt16, uint16_t)
    TSR_CASE(UInt64, uint64_t)
    TSR_CASE(Complex64, std::complex<float>)
    TSR_CASE(Complex128, std::complex<double>)
#undef TSR_CASE
  }
}

}  // namespace

void gather(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Gather&>(*a.prim);
  // The slice starts, shared with the CUDA kernel.
  const auto g = gather_plan<kCpuIndexingMaxDims>(a);
  const LocalType& O = (*a.in)[0];
  const LocalType& Out = (*a.out)[0];
  const size_t isz = itemsize(O.dtype);
  const auto ps = row_major_strides(Out.shape);
  const size_t nw = static_cast<size_t>(g.nw);
  Shape extent(nw);
  std::vector<int64_t> dst_st(nw), src_st(nw), zero(nw, 0);
  for (size_t w = 0; w < nw; ++w) {
    extent[w] = Out.shape[g.window_out_dim[w]];
    dst_st[w] = ps[g.window_out_dim[w]];
    src_st[w] = g.window_stride[w];
  }
  alignas(16) unsigned char fill[16] = {};
  double fv = p.fill();
  convert_n(&fv, DType::Float64, fill, O.dtype, 1);
  const char* src = static_cast<const char*>(a.in_ptr[0]);
  const char* ind = static_cast<const char*>(a.in_ptr[1]);
  char* dst = static_cast<char*>(a.out_ptr[0]);
  Shape bl(g.nb, 0), bext(g.nb);
  for (int k = 0; k < g.nb; ++k) bext[k] = Out.shape[g.batch_out_dim[k]];
  for (int64_t e : bext)
    if (e == 0) return;
  for (int64_t e : extent)
    if (e == 0) return;
  do {
    int64_t doff = 0;
    for (int k = 0; k < g.nb; ++k) doff += bl[k] * ps[g.batch_out_dim[k]];
    char* out = dst + doff * static_cast<int64_t>(isz);
    const int64_t soff = gather_slice_offset(g, bl.data(), ind);
    if (soff < 0) {
      copy_strided(out, dst_st.data(), fill, zero.data(), extent, isz);
      continue;
    }
    copy_strided(out, dst_st.data(), src + soff * static_cast<int64_t>(isz), src_st.data(), extent,
                 isz);
  } while (next(bl, bext));
}

void scatter(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Scatter&>(*a.prim);
  // The window starts, shared with the CUDA kernel.
  const auto sp = scatter_plan<kCpuIndexingMaxDims>(a);
  const LocalType& U = (*a.in)[2];
  const LocalType& Out = (*a.out)[0];
  const Shape& Po = *a.out_origin;
  const int orank = sp.orank;
  const size_t isz = itemsize(Out.dtype);
  char* dst = static_cast<char*>(a.out_ptr[0]);
  if (a.out_ptr[0] != a.in_ptr[0])
    std::memcpy(dst, a.in_ptr[0], static_cast<size_t>(numel(Out.shape)) * isz);
  const auto ps = row_major_strides(Out.shape), us_st = row_major_strides(U.shape);
  const char* ind = static_cast<const char*>(a.in_ptr[1]);
  const char* upd = static_cast<const char*>(a.in_ptr[2]);
  const int ns = sp.ns;
  Shape sl(ns, 0), sext(ns);
  for (int k = 0; k < ns; ++k) sext[k] = sp.scatter_size[k];
  for (int64_t e : sext)
    if (e == 0) return;
  const size_t nw = static_cast<size_t>(sp.nw);
  Shape extent(nw);
  std::vector<int64_t> dst_st(nw), src_st(nw);
  for (size_t j = 0; j < nw; ++j) {
    dst_st[j] = ps[sp.window_odim[j]];
    src_st[j] = us_st[sp.window_udim[j]];
  }
  int64_t start[kCpuIndexingMaxDims];
  do {
    int64_t uoff = 0;
    for (int k = 0; k < ns; ++k) uoff += sl[k] * us_st[sp.scatter_udim[k]];
    if (!scatter_start(sp, sl.data(), ind, start)) continue;
    // Dims without a window: the one position must be in this block.
    bool skip = false;
    int64_t doff = 0;
    for (int d = 0; d < orank; ++d) {
      if (sp.windowed[d]) continue;
      int64_t l = start[d] - Po[d];
      if (l < 0 || l >= Out.shape[d]) skip = true;
      doff += l * ps[d];
    }
    if (skip) continue;
    // Window dims: clip the local update range to this block (scatter_dest per element,
    // as one box).
    int64_t soff = uoff;
    for (size_t j = 0; j < nw; ++j) {
      int d = sp.window_odim[j];
      int u = sp.window_udim[j];
      int64_t g0 = start[d] + sp.window_origin[j];  // operand position of the window's first
      int64_t lo = std::max<int64_t>(0, Po[d] - g0);
      int64_t hi = std::min<int64_t>(U.shape[u], Po[d] + Out.shape[d] - g0);
      if (hi <= lo) skip = true;
      extent[j] = hi - lo;
      doff += (g0 + lo - Po[d]) * ps[d];
      soff += lo * us_st[u];
    }
    if (skip) continue;
    char* out = dst + doff * static_cast<int64_t>(isz);
    const char* in = upd + soff * static_cast<int64_t>(isz);
    if (p.kind() == ScatterKind::Set)
      copy_strided(out, dst_st.data(), in, src_st.data(), extent, isz);
    else
      combine_any(p.kind(), Out.dtype, out, dst_st.data(), in, src_st.data(), extent);
  } while (ns > 0 ? next(sl, sext) : false);
}

}  // namespace tsr::detail::cpu
