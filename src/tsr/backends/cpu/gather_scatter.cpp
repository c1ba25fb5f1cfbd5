// gather and scatter kernels. They work in global coordinates: the device's
// output block starts at out_origin, its input blocks at in_origin; the
// partitioner guarantees that every element the block needs is local.
#include <algorithm>
#include <complex>
#include <cstring>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/gather_scatter.h"

namespace tsr::detail::cpu {
namespace {

using prim::dims_except;
using prim::has_dim;

// Index reads: the common dtypes directly, the rest through convert_n.
int64_t load_index(const char* base, DType t, int64_t i) {
  switch (t) {
    case DType::Int32:
      return reinterpret_cast<const int32_t*>(base)[i];
    case DType::Int64:
      return reinterpret_cast<const int64_t*>(base)[i];
    default:
      return read_index(base + i * static_cast<int64_t>(itemsize(t)), t);
  }
}

// Steps `idx` through `extent` row-major; false after the last position.
bool next(Shape& idx, const Shape& extent) {
  for (int d = static_cast<int>(extent.size()) - 1; d >= 0; --d) {
    if (++idx[d] < extent[d]) return true;
    idx[d] = 0;
  }
  return false;
}

template <typename T>
T combine(ScatterKind k, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (k) {
      case ScatterKind::Add:
      case ScatterKind::Max:
        return a || b;
      case ScatterKind::Mul:
      case ScatterKind::Min:
        return a && b;
      case ScatterKind::Sub:
        return a != b;
      case ScatterKind::Set:
        return b;
    }
    return b;
  } else if constexpr (std::is_same_v<T, std::complex<float>> ||
                       std::is_same_v<T, std::complex<double>>) {
    // Lexicographic min / max, as the binary kernels (lax.max / lax.min of complex).
    bool lt = b.real() < a.real() || (b.real() == a.real() && b.imag() < a.imag());
    bool gt = b.real() > a.real() || (b.real() == a.real() && b.imag() > a.imag());
    switch (k) {
      case ScatterKind::Add:
        return a + b;
      case ScatterKind::Sub:
        return a - b;
      case ScatterKind::Mul:
        return a * b;
      case ScatterKind::Min:
        return lt ? b : a;
      case ScatterKind::Max:
        return gt ? b : a;
      case ScatterKind::Set:
        return b;
    }
    return b;
  } else if constexpr (kIsHalf<T>) {
    float r = combine(k, to_float(a), to_float(b));
    T out;
    from_float(&r, &out, 1);
    return out;
  } else if constexpr (std::is_integral_v<T>) {
    // Integer arithmetic wraps (as XLA): computed unsigned, at least as wide as
    // `unsigned` so that narrow types are not promoted to a signed int that overflows.
    using U = WrapUnsigned<T>;
    switch (k) {
      case ScatterKind::Add:
        return static_cast<T>(static_cast<U>(U(a) + U(b)));
      case ScatterKind::Sub:
        return static_cast<T>(static_cast<U>(U(a) - U(b)));
      case ScatterKind::Mul:
        return static_cast<T>(static_cast<U>(U(a) * U(b)));
      case ScatterKind::Min:
        return b < a ? b : a;
      case ScatterKind::Max:
        return b > a ? b : a;
      case ScatterKind::Set:
        return b;
    }
    return b;
  } else {
    switch (k) {
      case ScatterKind::Add:
        return static_cast<T>(a + b);
      case ScatterKind::Sub:
        return static_cast<T>(a - b);
      case ScatterKind::Mul:
        return static_cast<T>(a * b);
      case ScatterKind::Min:
        return (b < a || b != b) ? b : a;  // NaN propagates, as lax.min
      case ScatterKind::Max:
        return (b > a || b != b) ? b : a;
      case ScatterKind::Set:
        return b;
    }
    return b;
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
  const auto& dn = p.dims();
  const LocalType& O = (*a.in)[0];
  const LocalType& I = (*a.in)[1];
  const LocalType& Out = (*a.out)[0];
  const Shape& Og = a.in_global[0];
  const Shape& Oo = a.in_origin[0];
  const Shape& Io = a.in_origin[1];
  const Shape& Po = *a.out_origin;
  const int orank = static_cast<int>(O.shape.size());
  const int irank = static_cast<int>(I.shape.size());
  const int out_rank = static_cast<int>(Out.shape.size());
  const size_t isz = itemsize(O.dtype);
  const auto os = row_major_strides(O.shape), is = row_major_strides(I.shape),
             ps = row_major_strides(Out.shape);
  std::vector<int> wd = dims_except(orank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  std::vector<int> bpos;  // output batch dims, in indices-dim order
  for (int i = 0; i < out_rank; ++i)
    if (!has_dim(dn.offset_dims, i)) bpos.push_back(i);
  const size_t nw = wd.size();
  Shape extent(nw);
  std::vector<int64_t> dst_st(nw), src_st(nw), zero(nw, 0);
  for (size_t w = 0; w < nw; ++w) {
    extent[w] = Out.shape[dn.offset_dims[w]];
    dst_st[w] = ps[dn.offset_dims[w]];
    src_st[w] = os[wd[w]];
  }
  alignas(16) unsigned char fill[16] = {};
  double fv = p.fill();
  convert_n(&fv, DType::Float64, fill, O.dtype, 1);
  const char* src = static_cast<const char*>(a.in_ptr[0]);
  const char* ind = static_cast<const char*>(a.in_ptr[1]);
  char* dst = static_cast<char*>(a.out_ptr[0]);
  const int nb = static_cast<int>(bpos.size());
  Shape bl(nb, 0), bext(nb), start(orank);
  for (int k = 0; k < nb; ++k) bext[k] = Out.shape[bpos[k]];
  for (int64_t e : bext)
    if (e == 0) return;
  for (int64_t e : extent)
    if (e == 0) return;
  const int64_t vstride = irank > 0 ? is[irank - 1] : 1;
  do {
    int64_t ioff = 0, doff = 0;
    for (int k = 0; k < nb; ++k) {
      ioff += (bl[k] + Po[bpos[k]] - Io[k]) * is[k];
      doff += bl[k] * ps[bpos[k]];
    }
    std::fill(start.begin(), start.end(), 0);
    bool oob = false;
    for (size_t v = 0; v < dn.start_index_map.size(); ++v) {
      int d = dn.start_index_map[v];
      int64_t s = load_index(ind, I.dtype, ioff + static_cast<int64_t>(v) * vstride);
      int64_t hi = Og[d] - p.slice_sizes()[d];
      if (p.mode() == IndexMode::FillOrDrop && (s < 0 || s > hi)) oob = true;
      start[d] = std::clamp<int64_t>(s, 0, std::max<int64_t>(hi, 0));
    }
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      int k = dn.start_indices_batching_dims[i];
      start[dn.operand_batching_dims[i]] = bl[k] + Po[bpos[k]];
    }
    char* out = dst + doff * static_cast<int64_t>(isz);
    if (oob) {
      copy_strided(out, dst_st.data(), fill, zero.data(), extent, isz);
      continue;
    }
    int64_t soff = 0;
    for (int d = 0; d < orank; ++d) soff += (start[d] - Oo[d]) * os[d];
    for (size_t w = 0; w < nw; ++w) soff += Po[dn.offset_dims[w]] * os[wd[w]];
    copy_strided(out, dst_st.data(), src + soff * static_cast<int64_t>(isz), src_st.data(), extent,
                 isz);
  } while (next(bl, bext));
}

void scatter(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Scatter&>(*a.prim);
  const auto& dn = p.dims();
  const LocalType& I = (*a.in)[1];
  const LocalType& U = (*a.in)[2];
  const LocalType& Out = (*a.out)[0];
  const Shape& Og = a.in_global[0];
  const Shape& Ug = a.in_global[2];
  const Shape& Io = a.in_origin[1];
  const Shape& Uo = a.in_origin[2];
  const Shape& Po = *a.out_origin;
  const int orank = static_cast<int>(Out.shape.size());
  const int irank = static_cast<int>(I.shape.size());
  const int urank = static_cast<int>(U.shape.size());
  const size_t isz = itemsize(Out.dtype);
  char* dst = static_cast<char*>(a.out_ptr[0]);
  if (a.out_ptr[0] != a.in_ptr[0])
    std::memcpy(dst, a.in_ptr[0], static_cast<size_t>(numel(Out.shape)) * isz);
  const auto ps = row_major_strides(Out.shape), is = row_major_strides(I.shape),
             us_st = row_major_strides(U.shape);
  const auto& uw = dn.update_window_dims;
  std::vector<int> ow = dims_except(orank, dn.inserted_window_dims, dn.operand_batching_dims);
  std::vector<int> us = dims_except(urank, uw, {});  // update scatter dims <-> indices dims
  Shape wsize(orank, 1);
  for (size_t j = 0; j < ow.size(); ++j) wsize[ow[j]] = Ug[uw[j]];
  const char* ind = static_cast<const char*>(a.in_ptr[1]);
  const char* upd = static_cast<const char*>(a.in_ptr[2]);
  const int ns = static_cast<int>(us.size());
  Shape sl(ns, 0), sext(ns), start(orank);
  for (int k = 0; k < ns; ++k) sext[k] = U.shape[us[k]];
  for (int64_t e : sext)
    if (e == 0) return;
  const size_t nw = uw.size();
  Shape extent(nw);
  std::vector<int64_t> dst_st(nw), src_st(nw);
  for (size_t j = 0; j < nw; ++j) {
    dst_st[j] = ps[ow[j]];
    src_st[j] = us_st[uw[j]];
  }
  const int64_t vstride = irank > 0 ? is[irank - 1] : 1;
  do {
    int64_t ioff = 0, uoff = 0;
    for (int k = 0; k < ns; ++k) {
      ioff += (sl[k] + Uo[us[k]] - Io[k]) * is[k];
      uoff += sl[k] * us_st[us[k]];
    }
    std::fill(start.begin(), start.end(), 0);
    bool skip = false;
    for (size_t v = 0; v < dn.scatter_dims_to_operand_dims.size(); ++v) {
      int d = dn.scatter_dims_to_operand_dims[v];
      int64_t s = load_index(ind, I.dtype, ioff + static_cast<int64_t>(v) * vstride);
      int64_t hi = Og[d] - wsize[d];
      if (p.mode() == IndexMode::Clip)
        s = std::clamp<int64_t>(s, 0, std::max<int64_t>(hi, 0));
      else if (s < 0 || s > hi)
        skip = true;  // the whole window is dropped (XLA semantics)
      start[d] = s;
    }
    if (skip) continue;
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      int k = dn.scatter_indices_batching_dims[i];
      start[dn.operand_batching_dims[i]] = sl[k] + Uo[us[k]];
    }
    // Dims without a window: the one position must be in this block.
    int64_t doff = 0;
    for (int d = 0; d < orank; ++d) {
      if (has_dim(ow, d)) continue;
      int64_t l = start[d] - Po[d];
      if (l < 0 || l >= Out.shape[d]) skip = true;
      doff += l * ps[d];
    }
    if (skip) continue;
    // Window dims: clip the local update range to this block.
    int64_t soff = uoff;
    for (size_t j = 0; j < nw; ++j) {
      int d = ow[j];
      int u = uw[j];
      int64_t g0 = start[d] + Uo[u];  // operand position of the local window's first element
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
