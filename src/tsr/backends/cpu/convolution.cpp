// conv_general_dilated on the CPU. float32 and bfloat16 run on oneDNN (Debian's
// libdnnl) in one of three forms, each describing our row-major operands through the
// dimension numbers as strided memory (no transposes of our own):
//  - forward: the convolution itself;
//  - backward-weights: a convolution whose kernel is larger than its output, the shape
//    of a filter gradient (JAX's rhs transpose rule), computed as oneDNN's filter
//    gradient of the convolution it came from;
//  - backward-data: a convolution with lhs dilation (the input gradient of a strided
//    convolution, conv_transpose), computed as oneDNN's input gradient.
// Anything else (other dtypes, batch groups, padding oneDNN refuses) runs the direct
// loop below, which reads each operand once into (batch, feature, spatial...) order in
// a wide accumulation type.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_set>
#include <vector>

#include "tsr/backends/common/window_ops.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/convolution.h"
#include "tsr/prims/windowed.h"
#include "tsr/runtime/runtime.h"

extern "C" void omp_set_num_threads(int);

namespace tsr::detail::cpu {
namespace {

using prim::ConvParams;
using prim::dilated_size;
using dims_t = dnnl::memory::dims;

// An operand as (dim 0, dim 1, spatial...) in a spec's order: sizes and element strides.
struct View {
  dims_t dims, strides;
};

View view(const Shape& shape, const std::vector<int>& spec) {
  const std::vector<int64_t> rm = row_major_strides(shape);
  View v;
  for (int d : spec) {
    v.dims.push_back(shape[static_cast<size_t>(d)]);
    v.strides.push_back(rm[static_cast<size_t>(d)]);
  }
  return v;
}

// Dims 0 and 1 swapped (a filter gradient reads the batch as the contraction).
View swapped(View v) {
  std::swap(v.dims[0], v.dims[1]);
  std::swap(v.strides[0], v.strides[1]);
  return v;
}

int64_t numel(const dims_t& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
}

// ---- oneDNN --------------------------------------------------------------------

std::optional<dnnl::memory::data_type> dnnl_type(DType t) {
  if (t == DType::Float32) return dnnl::memory::data_type::f32;
  if (t == DType::BFloat16) return dnnl::memory::data_type::bf16;
  return std::nullopt;
}

// Never destroyed: oneDNN's own statics may be gone first at exit.
dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// Set TSR_CONV_DIRECT=1 to run every convolution on the direct loop (tests compare
// the two paths).
bool direct_only() {
  static const bool v = [] {
    const char* e = std::getenv("TSR_CONV_DIRECT");
    return e && std::strcmp(e, "0") != 0;
  }();
  return v;
}

dnnl::memory::desc md(const View& v, dnnl::memory::data_type t) {
  return dnnl::memory::desc(v.dims, t, v.strides);
}

dnnl::memory::desc any(const View& v, dnnl::memory::data_type t) {
  return dnnl::memory::desc(v.dims, t, dnnl::memory::format_tag::any);
}

// Runs `prim` with the user's memories, reordering each into the layout the primitive
// chose and the result back.
struct Exec {
  dnnl::stream s{engine()};
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> outs;  // (primitive's, user's)

  void in(int arg, const dnnl::memory::desc& want, const dnnl::memory::desc& user, const void* p) {
    dnnl::memory u(user, engine(), const_cast<void*>(p));
    if (want == user) {
      args[arg] = u;
      return;
    }
    dnnl::memory m(want, engine());
    dnnl::reorder(u, m).execute(s, u, m);
    args[arg] = m;
  }
  void out(int arg, const dnnl::memory::desc& want, const dnnl::memory::desc& user, void* p) {
    dnnl::memory u(user, engine(), p);
    if (want == user) {
      args[arg] = u;
      return;
    }
    dnnl::memory m(want, engine());
    args[arg] = m;
    outs.emplace_back(m, u);
  }
  void run(const dnnl::primitive& prim) {
    prim.execute(s, args);
    for (auto& [m, u] : outs) dnnl::reorder(m, u).execute(s, m, u);
    s.wait();
  }
};

dims_t minus_one(const std::vector<int64_t>& v) {
  dims_t r;
  for (int64_t x : v) r.push_back(x - 1);
  return r;
}

// Weights as oneDNN's (groups, out / groups, in, spatial...) when grouped.
View grouped(const View& w, int64_t g) {
  if (g == 1) return w;
  View r = w;
  r.dims[0] = w.dims[0] / g;
  r.dims.insert(r.dims.begin(), g);
  r.strides.insert(r.strides.begin(), w.strides[0] * (w.dims[0] / g));
  return r;
}

// The lhs cropped so that no padding is negative: a negative low pad starts later, and
// the extent ends where the last window does. Returns false when nothing is left.
bool crop(View& lhs, const void*& ptr, size_t item, std::vector<int64_t>& pad_l,
          std::vector<int64_t>& pad_r, const dims_t& out, const dims_t& win_dilated,
          const std::vector<int64_t>& stride) {
  for (size_t i = 0; i < pad_l.size(); ++i) {
    const size_t d = i + 2;
    if (pad_l[i] < 0) {
      ptr = static_cast<const char*>(ptr) +
            static_cast<size_t>(-pad_l[i]) * static_cast<size_t>(lhs.strides[d]) * item;
      lhs.dims[d] += pad_l[i];
      pad_l[i] = 0;
    }
    // The extent the last window reaches, and the right padding that matches it.
    const int64_t reach = (out[d] - 1) * stride[i] + win_dilated[i] - pad_l[i];
    if (reach < lhs.dims[d]) lhs.dims[d] = reach;
    pad_r[i] = reach - lhs.dims[d];
    if (lhs.dims[d] <= 0 || out[d] <= 0) return false;
  }
  return true;
}

bool dnnl_forward(const KernelArgs& a, const ConvParams& p, dnnl::memory::data_type it,
                  dnnl::memory::data_type ot) {
  if (p.batch_group_count != 1) return false;
  for (int64_t d : p.lhs_dilation)
    if (d != 1) return false;
  View l = view((*a.in)[0].shape, p.dn.lhs), r = view((*a.in)[1].shape, p.dn.rhs);
  View o = view((*a.out)[0].shape, p.dn.out);
  const void* lp = a.in_ptr[0];
  std::vector<int64_t> pl, pr;
  dims_t win;
  for (size_t i = 0; i < p.padding.size(); ++i) {
    pl.push_back(p.padding[i].first);
    pr.push_back(p.padding[i].second);
    win.push_back(dilated_size(r.dims[i + 2], p.rhs_dilation[i]));
  }
  if (!crop(l, lp, itemsize((*a.in)[0].dtype), pl, pr, o.dims, win, p.strides)) return false;
  const View w = grouped(r, p.feature_group_count);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, any(l, it), any(w, it),
                                    any(o, ot), p.strides, minus_one(p.rhs_dilation), pl, pr);
  dnnl::convolution_forward::primitive_desc pd(d, engine());
  Exec e;
  e.in(DNNL_ARG_SRC, pd.src_desc(), md(l, it), lp);
  e.in(DNNL_ARG_WEIGHTS, pd.weights_desc(), md(w, it), a.in_ptr[1]);
  e.out(DNNL_ARG_DST, pd.dst_desc(), md(o, ot), a.out_ptr[0]);
  e.run(dnnl::convolution_forward(pd));
  return true;
}

// out = filter gradient of the convolution Q with src = lhs (batch and feature roles
// swapped), diff_dst = rhs (in and out features swapped), stride = our rhs_dilation and
// dilation = our stride.
bool dnnl_backward_weights(const KernelArgs& a, const ConvParams& p, dnnl::memory::data_type it,
                           dnnl::memory::data_type ot) {
  if (p.batch_group_count != 1 || p.feature_group_count != 1) return false;
  for (int64_t d : p.lhs_dilation)
    if (d != 1) return false;
  View src = swapped(view((*a.in)[0].shape, p.dn.lhs));
  View ddst = swapped(view((*a.in)[1].shape, p.dn.rhs));
  View dw = swapped(view((*a.out)[0].shape, p.dn.out));
  const void* sp = a.in_ptr[0];
  std::vector<int64_t> pl, pr(p.padding.size());
  dims_t win;
  for (size_t i = 0; i < p.padding.size(); ++i) {
    pl.push_back(p.padding[i].first);
    win.push_back(dilated_size(dw.dims[i + 2], p.strides[i]));
  }
  if (!crop(src, sp, itemsize((*a.in)[0].dtype), pl, pr, ddst.dims, win, p.rhs_dilation))
    return false;
  const dims_t stride(p.rhs_dilation.begin(), p.rhs_dilation.end());
  const dims_t dil = minus_one(p.strides);
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::convolution_direct, any(src, it), any(dw, it),
                                     any(ddst, it), stride, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc fpd(fd, engine());
  // The activations in the user's layout when an optimised implementation takes it (the
  // reorders to a blocked layout cost a tenth of the convolution), else oneDNN's choice.
  auto make = [&](bool user) {
    dnnl::convolution_backward_weights::desc bd(
        dnnl::algorithm::convolution_direct, user ? md(src, it) : any(src, it), any(dw, ot),
        user ? md(ddst, it) : any(ddst, it), stride, dil, pl, pr);
    return dnnl::convolution_backward_weights::primitive_desc(bd, engine(), fpd);
  };
  dnnl::convolution_backward_weights::primitive_desc pd;
  try {
    pd = make(true);
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) pd = make(false);
  } catch (const dnnl::error&) {
    pd = make(false);
  }
  Exec e;
  e.in(DNNL_ARG_SRC, pd.src_desc(), md(src, it), sp);
  e.in(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), md(ddst, it), a.in_ptr[1]);
  e.out(DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(), md(dw, ot), a.out_ptr[0]);
  e.run(dnnl::convolution_backward_weights(pd));
  return true;
}

// out = input gradient of the convolution Q with diff_dst = lhs, weights = rhs with
// in and out features swapped and the window reversed, stride = our lhs_dilation.
bool dnnl_backward_data(const KernelArgs& a, const ConvParams& p, dnnl::memory::data_type it,
                        dnnl::memory::data_type ot) {
  if (p.batch_group_count != 1 || p.feature_group_count != 1 || it != ot) return false;
  for (int64_t s : p.strides)
    if (s != 1) return false;
  View ddst = view((*a.in)[0].shape, p.dn.lhs), r = view((*a.in)[1].shape, p.dn.rhs);
  View dsrc = view((*a.out)[0].shape, p.dn.out);
  std::vector<int64_t> pl, pr;
  for (size_t i = 0; i < p.padding.size(); ++i) {
    const int64_t win = dilated_size(r.dims[i + 2], p.rhs_dilation[i]);
    pl.push_back(win - 1 - p.padding[i].first);
    pr.push_back((ddst.dims[i + 2] - 1) * p.lhs_dilation[i] + win - dsrc.dims[i + 2] - pl.back());
    if (pl.back() < 0 || pr.back() < 0) return false;
  }
  // The weights (in, out, window reversed), contiguous.
  const size_t item = itemsize((*a.in)[1].dtype);
  View wv = swapped(r);
  const void* src = a.in_ptr[1];
  std::vector<int64_t> src_strides = wv.strides;
  int64_t offset = 0;
  for (size_t d = 2; d < wv.dims.size(); ++d) {
    offset += (wv.dims[d] - 1) * wv.strides[d];
    src_strides[d] = -wv.strides[d];
  }
  std::vector<char> wbuf(static_cast<size_t>(numel(wv.dims)) * item);
  const Shape extent(wv.dims.begin(), wv.dims.end());
  const std::vector<int64_t> dst_strides = row_major_strides(extent);
  copy_strided(wbuf.data(), dst_strides.data(),
               static_cast<const char*>(src) + offset * static_cast<int64_t>(item),
               src_strides.data(), extent, item);
  View w{wv.dims, dims_t(dst_strides.begin(), dst_strides.end())};
  const dims_t stride(p.lhs_dilation.begin(), p.lhs_dilation.end());
  const dims_t dil = minus_one(p.rhs_dilation);
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::convolution_direct, any(dsrc, it), any(w, it),
                                     any(ddst, it), stride, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc fpd(fd, engine());
  dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, any(dsrc, ot),
                                           any(w, it), any(ddst, it), stride, dil, pl, pr);
  dnnl::convolution_backward_data::primitive_desc pd(bd, engine(), fpd);
  Exec e;
  e.in(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), md(ddst, it), a.in_ptr[0]);
  e.in(DNNL_ARG_WEIGHTS, pd.weights_desc(), md(w, it), wbuf.data());
  e.out(DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), md(dsrc, ot), a.out_ptr[0]);
  e.run(dnnl::convolution_backward_data(pd));
  return true;
}

// Work still queued at exit must finish before oneDNN's statics are destroyed. They are
// C++ function-local statics, destroyed in reverse order of construction together with
// the atexit handlers, and oneDNN creates some whenever it builds a kernel it has not
// built before; the runtime's own drain, registered when it started, then runs too
// late (a program returning from main with convolutions of new shapes queued crashed
// or hung). So after each new configuration a drain is registered again: it runs
// before the statics that configuration created are destroyed.
void drain_at_exit_after(const KernelArgs& a, const ConvParams& p) {
  std::string key = p.dn.lhs.empty() ? "" : std::to_string(p.dn.lhs[0]);
  for (const auto* t : {&(*a.in)[0], &(*a.in)[1], &(*a.out)[0]}) {
    key += "|" + std::to_string(static_cast<int>(t->dtype));
    for (int64_t d : t->shape) key += "," + std::to_string(d);
  }
  for (const auto* v : {&p.strides, &p.lhs_dilation, &p.rhs_dilation})
    for (int64_t d : *v) key += ";" + std::to_string(d);
  for (const auto& [lo, hi] : p.padding) key += ":" + std::to_string(lo) + "," + std::to_string(hi);
  for (const auto* v : {&p.dn.lhs, &p.dn.rhs, &p.dn.out})
    for (int d : *v) key += "/" + std::to_string(d);
  key += "#" + std::to_string(p.feature_group_count) + "," + std::to_string(p.batch_group_count);
  static std::mutex mu;
  static auto* seen = new std::unordered_set<std::string>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  if (seen->insert(key).second) std::atexit([] { Runtime::get().synchronize(); });
}

bool try_dnnl(const KernelArgs& a, const ConvParams& p) {
  if (direct_only()) return false;
  struct Drain {
    const KernelArgs& a;
    const ConvParams& p;
    ~Drain() { drain_at_exit_after(a, p); }
  } drain{a, p};
  auto it = dnnl_type((*a.in)[0].dtype), ot = dnnl_type((*a.out)[0].dtype);
  if (!it || !ot) return false;
  if (numel(view((*a.out)[0].shape, p.dn.out).dims) == 0) return false;
  omp_set_num_threads(kernel_threads(a.busy_devices));
  const View r = view((*a.in)[1].shape, p.dn.rhs), o = view((*a.out)[0].shape, p.dn.out);
  dims_t rs(r.dims.begin() + 2, r.dims.end()), os(o.dims.begin() + 2, o.dims.end());
  // A kernel larger than the output: the shape of a filter gradient.
  const bool weight_shaped = numel(rs) > numel(os);
  const bool dilated_lhs =
      std::any_of(p.lhs_dilation.begin(), p.lhs_dilation.end(), [](int64_t d) { return d != 1; });
  try {
    if (weight_shaped && dnnl_backward_weights(a, p, *it, *ot)) return true;
    if (dilated_lhs) return dnnl_backward_data(a, p, *it, *ot);
    return dnnl_forward(a, p, *it, *ot);
  } catch (const dnnl::error&) {
    return false;  // a form oneDNN has no implementation of: the direct loop
  }
}

// ---- the direct loop -------------------------------------------------------------

// An operand converted to A and laid out (dim 0, dim 1, spatial...) contiguously.
template <typename A>
std::vector<A> canonical(const void* p, DType dt, const Shape& shape,
                         const std::vector<int>& spec) {
  constexpr DType at = std::is_same_v<A, double>  ? DType::Float64
                       : std::is_same_v<A, float> ? DType::Float32
                                                  : DType::Int64;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<A> conv(static_cast<size_t>(n));
  convert_n(p, dt, conv.data(), at, n);
  const View v = view(shape, spec);
  const Shape extent(v.dims.begin(), v.dims.end());
  std::vector<A> out(static_cast<size_t>(n));
  const std::vector<int64_t> ds = row_major_strides(extent);
  copy_strided(out.data(), ds.data(), conv.data(), v.strides.data(), extent, sizeof(A));
  return out;
}

template <typename A>
void direct(const KernelArgs& a, const ConvParams& p) {
  const Shape &ls = (*a.in)[0].shape, &rs = (*a.in)[1].shape, &os = (*a.out)[0].shape;
  const std::vector<A> L = canonical<A>(a.in_ptr[0], (*a.in)[0].dtype, ls, p.dn.lhs);
  const std::vector<A> R = canonical<A>(a.in_ptr[1], (*a.in)[1].dtype, rs, p.dn.rhs);
  const View lv = view(ls, p.dn.lhs), rv = view(rs, p.dn.rhs), ov = view(os, p.dn.out);
  const size_t ns = p.strides.size();
  const int64_t N = lv.dims[0], C = lv.dims[1], O = rv.dims[0], I = rv.dims[1];
  const int64_t NO = ov.dims[0];
  int64_t S = 1, K = 1, Y = 1;
  for (size_t i = 0; i < ns; ++i) {
    S *= lv.dims[i + 2];
    K *= rv.dims[i + 2];
    Y *= ov.dims[i + 2];
  }
  const int64_t og = O / p.feature_group_count, ob = O / p.batch_group_count;
  const int64_t nb = N / p.batch_group_count;
  std::vector<A> out(static_cast<size_t>(NO * O * Y), A(0));
  // taps[i][y * K_i + k]: the lhs index along spatial dim i, or -1 (padding, a hole).
  std::vector<std::vector<int64_t>> taps(ns);
  for (size_t i = 0; i < ns; ++i) {
    const int64_t Ki = rv.dims[i + 2], Yi = ov.dims[i + 2], Li = lv.dims[i + 2];
    taps[i].assign(static_cast<size_t>(Yi * Ki), -1);
    for (int64_t y = 0; y < Yi; ++y)
      for (int64_t k = 0; k < Ki; ++k)  // the window arithmetic the CUDA kernel shares
        taps[i][static_cast<size_t>(y * Ki + k)] = window_tap(
            y, k, p.strides[i], p.rhs_dilation[i], p.padding[i].first, p.lhs_dilation[i], Li);
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (k, lhs spatial offset) of one y
  std::vector<int64_t> yi(ns), ki(ns);
  for (int64_t y = 0; y < Y; ++y) {
    for (int64_t r = y, i = static_cast<int64_t>(ns) - 1; i >= 0; --i) {
      yi[static_cast<size_t>(i)] = r % ov.dims[static_cast<size_t>(i) + 2];
      r /= ov.dims[static_cast<size_t>(i) + 2];
    }
    pairs.clear();
    for (int64_t k = 0; k < K; ++k) {
      int64_t rem = k, off = 0;
      bool ok = true;
      for (int64_t i = static_cast<int64_t>(ns) - 1; i >= 0 && ok; --i) {
        const size_t u = static_cast<size_t>(i);
        const int64_t Ki = rv.dims[u + 2];
        ki[u] = rem % Ki;
        rem /= Ki;
        const int64_t x = taps[u][static_cast<size_t>(yi[u] * Ki + ki[u])];
        ok = x >= 0;
        int64_t stride = 1;
        for (size_t j = u + 1; j < ns; ++j) stride *= lv.dims[j + 2];
        off += x * stride;
      }
      if (ok) pairs.emplace_back(k, off);
    }
    if (pairs.empty()) continue;
    for (int64_t n = 0; n < NO; ++n)
      for (int64_t o = 0; o < O; ++o) {
        const int64_t n_in = (o / ob) * nb + n, c0 = (o / og) * I;
        A acc = A(0);
        for (int64_t c = 0; c < I; ++c) {
          const A* lrow = L.data() + (n_in * C + c0 + c) * S;
          const A* rrow = R.data() + (o * I + c) * K;
          for (const auto& [k, off] : pairs) acc += lrow[off] * rrow[k];
        }
        out[static_cast<size_t>((n * O + o) * Y + y)] = acc;
      }
  }
  // Back to the output's layout and dtype.
  constexpr DType at = std::is_same_v<A, double>  ? DType::Float64
                       : std::is_same_v<A, float> ? DType::Float32
                                                  : DType::Int64;
  const Shape extent(ov.dims.begin(), ov.dims.end());
  const std::vector<int64_t> src_strides = row_major_strides(extent);
  std::vector<A> perm(out.size());
  copy_strided(perm.data(), ov.strides.data(), out.data(), src_strides.data(), extent, sizeof(A));
  convert_n(perm.data(), at, a.out_ptr[0], (*a.out)[0].dtype, static_cast<int64_t>(perm.size()));
}

}  // namespace

void conv_general_dilated(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ConvGeneralDilated&>(*a.prim).params_of();
  if (try_dnnl(a, p)) return;
  const DType in = (*a.in)[0].dtype, out = (*a.out)[0].dtype;
  if (in == DType::Float64 || out == DType::Float64)
    direct<double>(a, p);
  else if (is_floating(in) || is_floating(out))
    direct<float>(a, p);
  else
    direct<int64_t>(a, p);
}

}  // namespace tsr::detail::cpu
