// reduce_window and the flax pooling front-ends (lax/windowed_reductions.py,
// flax/linen/pooling.py) over the windowed primitives.
#include <cmath>
#include <limits>

#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops/halo.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/windowed.h"
#include "tsr/shard_map.h"
#include "tsr/window.h"

namespace tsr {
using namespace detail;

std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in, const Shape& window,
                                                         const Shape& strides,
                                                         const Padding& padding) {
  if (padding.type().empty()) return padding.pads();
  std::string t = padding.type();
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (t == "VALID") return std::vector<std::pair<int64_t, int64_t>>(in.size(), {0, 0});
  if (t != "SAME" && t != "SAME_LOWER")
    throw ValueError("[reduce_window] Unrecognized padding type: expected 'VALID' or 'SAME', got " +
                     padding.type() + ". Got '" + padding.type() +
                     "'; expected 'VALID', 'SAME', 'SAME_LOWER' or (lo, hi) pairs.");
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t out = (in[d] + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>((out - 1) * strides[d] + window[d] - in[d], 0);
    pads.emplace_back(t == "SAME" ? total / 2 : total - total / 2,
                      t == "SAME" ? total - total / 2 : total / 2);
  }
  return pads;
}

namespace {

prim::Window make_window(const Array& x, const Shape& dims, const WindowOptions& o) {
  const size_t r = dims.size();
  auto ones_if_empty = [&](const Shape& v) { return v.empty() ? Shape(r, 1) : v; };
  prim::Window w;
  w.dims = dims;
  w.strides = ones_if_empty(o.window_strides);
  w.base_dilation = ones_if_empty(o.base_dilation);
  w.window_dilation = ones_if_empty(o.window_dilation);
  if (static_cast<int>(r) == x.ndim() && w.strides.size() == r && w.window_dilation.size() == r) {
    // JAX pads from the window as dilated (not from the base dilation).
    Shape dilated = dims;
    for (size_t d = 0; d < r; ++d) dilated[d] = prim::dilated_size(dims[d], w.window_dilation[d]);
    w.padding = padtype_to_pads(x.shape(), dilated, w.strides, o.padding);
  } else
    w.padding = o.padding.type().empty() ? o.padding.pads()
                                         : std::vector<std::pair<int64_t, int64_t>>(r, {0, 0});
  return w;  // a rank or length mismatch is the primitive rule's TypeError
}

// The identity of the reduction for x's dtype, as a double (bool: 0 / 1).
double identity_of(WindowReducer op) {
  if (op == WindowReducer::add) return 0.0;
  return op == WindowReducer::max ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity();
}

// True when `init` is a literal equal to the reduction's identity for `dt` (the lowest
// or highest integer counts for integer max / min).
bool is_identity(const ArrayLike& init, WindowReducer op, DType dt) {
  const auto& v = init.value();
  double d;
  if (const double* p = std::get_if<double>(&v))
    d = *p;
  else if (const int64_t* q = std::get_if<int64_t>(&v))
    d = static_cast<double>(*q);
  else if (const bool* b = std::get_if<bool>(&v))
    d = *b ? 1.0 : 0.0;
  else
    return false;
  if (op == WindowReducer::add) return d == 0.0;
  if (d == identity_of(op)) return true;  // -inf / inf: the identity of every dtype's max / min
  if (dt == DType::Bool) return d == (op == WindowReducer::max ? 0.0 : 1.0);
  if (is_integer(dt)) {
    return dispatch_dtype(dt, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T>)
        return d == static_cast<double>(op == WindowReducer::max ? std::numeric_limits<T>::lowest()
                                                                 : std::numeric_limits<T>::max());
      return false;
    });
  }
  return d == identity_of(op);
}

Array pool(const Array& x, const ArrayLike& init, WindowReducer op, const Shape& window,
           const Shape& strides0, const Padding& padding) {
  const int nw = static_cast<int>(window.size());
  Shape strides = strides0.empty() ? Shape(window.size(), 1) : strides0;
  if (strides.size() != window.size())
    throw ValueError("[pool] len(window_shape) must equal len(strides). Got window_shape " +
                     shape_str(window) + " and strides " + shape_str(strides) +
                     "; expected one stride per window dimension.");
  const int batch = x.ndim() - (nw + 1);
  if (batch < 0)
    throw ValueError("[pool] the input needs (batch..., spatial..., features) dimensions. Got " +
                     x.type().str() + " for window_shape " + shape_str(window) +
                     "; expected rank >= " + std::to_string(nw + 1) + ".");
  Array in = batch == 0 ? expand_dims(x, 0) : x;
  const int lead = std::max(batch, 1);
  Shape dims(static_cast<size_t>(lead), 1), st(static_cast<size_t>(lead), 1);
  dims.insert(dims.end(), window.begin(), window.end());
  dims.push_back(1);
  st.insert(st.end(), strides.begin(), strides.end());
  st.push_back(1);
  WindowOptions o{st};
  if (padding.type().empty()) {
    if (padding.pads().size() != window.size())
      throw ValueError("[pool] padding must give one (lo, hi) pair per window dimension. Got " +
                       std::to_string(padding.pads().size()) + " pairs for window_shape " +
                       shape_str(window) + "; expected " + std::to_string(window.size()) + ".");
    std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(lead), {0, 0});
    p.insert(p.end(), padding.pads().begin(), padding.pads().end());
    p.emplace_back(0, 0);
    o.padding = p;
  } else {
    o.padding = padding;
  }
  Array y = reduce_window(in, init, op, dims, o);
  return batch == 0 ? squeeze(y, 0) : y;
}

// ---- halo exchange (ops/halo.h) -----------------------------------------------------

// The halos of x's sharded windowed dims, or none when a dimension does not fit the
// exchange (then the kernel's layout gathers it instead) or none needs one.
std::optional<std::vector<Halo>> halos_of(const Array& x, const prim::Window& w) {
  const ArrayType& t = x.type();
  if (!halo_applies(t) || static_cast<int>(w.dims.size()) != x.ndim()) return std::nullopt;
  auto e = entries_of(t);
  const Shape out = w.out_shape(x.shape());
  const std::vector<bool> windowed = w.windowed();
  std::vector<Halo> hs;
  for (int d = 0; d < x.ndim(); ++d) {
    const size_t u = static_cast<size_t>(d);
    if (!windowed[u] || e[u].is_none()) continue;
    if (w.base_dilation[u] != 1) return std::nullopt;
    HaloNeed need = halo_need(d, e[u], t.sharding.mesh(), x.shape()[u], out[u],
                              prim::dilated_size(w.dims[u], w.window_dilation[u]), w.strides[u],
                              w.padding[u].first);
    if (need.gather) return std::nullopt;
    if (need.halo) hs.push_back(*need.halo);
  }
  if (hs.empty()) return std::nullopt;
  return hs;
}

Array halo_reduce(const Array& x, prim::WindowOp op, prim::Window w, const std::vector<Halo>& hs,
                  const Mesh& mesh) {
  // The padding the mesh's ends receive: the monoid's identity in x's dtype (for bool
  // max / min that is false / true: -inf as a bool would be true).
  const bool is_bool = x.dtype() == DType::Bool;
  const double identity = op == prim::WindowOp::Sum ? 0.0
                          : op == prim::WindowOp::Max
                              ? (is_bool ? 0.0 : -std::numeric_limits<double>::infinity())
                              : (is_bool ? 1.0 : std::numeric_limits<double>::infinity());
  prim::Window local = w;
  for (const auto& h : hs) local.padding[static_cast<size_t>(h.dim)] = {0, 0};
  const PartitionSpec spec = x.type().sharding.spec();
  auto body = [=](const Array& b) {
    return bind1(std::make_shared<prim::ReduceWindow>(op, local), {grow_halos(b, hs, identity)});
  };
  return shard_map(
      body, {.mesh = mesh, .in_specs = spec, .out_specs = spec, .name = "reduce_window_halo"})(x);
}

}  // namespace

Array reduce_window(const Array& x, const ArrayLike& init, WindowReducer op, const Shape& dims,
                    const WindowOptions& o) {
  prim::Window w = make_window(x, dims, o);
  const prim::WindowOp pop = op == WindowReducer::add   ? prim::WindowOp::Sum
                             : op == WindowReducer::max ? prim::WindowOp::Max
                                                        : prim::WindowOp::Min;
  Array r;
  auto hs = halos_of(x, w);
  std::optional<Mesh> hm = hs ? halo_mesh(x) : std::nullopt;
  if (hs && hm)
    r = halo_reduce(x, pop, w, *hs, *hm);
  else
    r = bind1(std::make_shared<prim::ReduceWindow>(pop, w), {x});
  if (is_identity(init, op, x.dtype())) return r;
  // JAX's generic reduce_window (a non-identity init): every window starts at
  // init_value, and padding and base-dilation holes add nothing (measured with JAX
  // 0.10: reduce_window(ones(3), 1., add, (3,), (1,), ((1, 1),)) is [3, 4, 3]).
  Array iv = astype(promote({init}, "reduce_window")[0], x.dtype());
  if (op == WindowReducer::max) return maximum(r, iv);
  if (op == WindowReducer::min) return minimum(r, iv);
  return add(r, iv);
}

Array max_pool(const Array& x, const Shape& window, const Shape& strides, const Padding& padding) {
  return pool(x, -std::numeric_limits<double>::infinity(), WindowReducer::max, window, strides,
              padding);
}

Array min_pool(const Array& x, const Shape& window, const Shape& strides, const Padding& padding) {
  return pool(x, std::numeric_limits<double>::infinity(), WindowReducer::min, window, strides,
              padding);
}

Array avg_pool(const Array& x, const Shape& window, const Shape& strides, const Padding& padding,
               bool count_include_pad) {
  Array y = pool(x, 0.0, WindowReducer::add, window, strides, padding);
  if (count_include_pad) {
    int64_t n = 1;
    for (int64_t d : window) n *= d;
    return divide(y, static_cast<double>(n));
  }
  // The divisor counts the real elements of each window (flax: pool of ones).
  Shape div_shape(x.shape().begin(), x.shape().end() - 1);
  div_shape.push_back(1);
  if (div_shape.size() - 2 == window.size()) div_shape[0] = 1;
  Array ones_arr = ones(div_shape, y.dtype());
  return divide(y, pool(ones_arr, 0.0, WindowReducer::add, window, strides, padding));
}

}  // namespace tsr
