// Reduction front-ends: axis normalization, NumPy dtype rules for sums, keepdims
// (expand_dims with unsharded size-1 dims), and the composites (mean, var,
// logsumexp, softmax, log_softmax).
#include <algorithm>
#include <limits>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/reduction.h"

namespace tsr {
using namespace detail;
using prim::ReduceKind;

namespace {

std::vector<int> norm_axes(const AxisArg& a, int rank, const char* op) {
  std::vector<int> out;
  if (a.all()) {
    for (int d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int ax : a.axes()) {
    int n = norm_axis(ax, rank, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw ValueError(std::string("[") + op + "] duplicate value in 'axis'. Got " +
                       std::to_string(ax) + " twice; expected distinct axes.");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Array keep(const Array& r, const Array& x, const std::vector<int>& axes, bool keepdims,
           const std::optional<NamedSharding>& out_sharding = {}) {
  if (!keepdims) return r;
  Shape shape = x.shape();
  for (int a : axes) shape[a] = 1;
  if (out_sharding) return reshape(r, shape, *out_sharding);
  return reshape(r, shape);
}

// With keepdims, out_sharding is the kept-dims result's (as any jnp function's
// out_sharding is its result's): the reduction itself gets it without the kept dims.
NamedSharding without_kept_dims(const NamedSharding& s, int rank, const std::vector<int>& axes,
                                const char* op) {
  const auto& e = s.spec().entries();
  if (static_cast<int>(e.size()) > rank)
    throw ValueError(std::string("[") + op +
                     "] with keepdims=True, out_sharding is the sharding of "
                     "the result, which keeps the reduced dims: rank " +
                     std::to_string(rank) + ". Got out_sharding=" + s.spec().repr() + " with " +
                     std::to_string(e.size()) + " entries; expected at most " +
                     std::to_string(rank) +
                     ". Give one entry per dim of the result (None at the kept dims).");
  std::vector<PartitionEntry> rest;
  for (int d = 0; d < static_cast<int>(e.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) rest.push_back(e[d]);
  return NamedSharding(s.mesh(), with_sets_of(rest, s.spec()));
}

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// jnp's _upcast_f16: float16/bfloat16 arithmetic that accumulates runs in float32.
DType upcast_half(DType t) { return is_half(t) ? DType::Float32 : t; }

Array reduce(ReduceKind k, const Array& x0, const AxisArg& axis, const ReduceOptions& o,
             const char* op) {
  Array x = x0;
  if (o.dtype) check_dtype(*o.dtype, op);
  if (o.dtype)
    x = astype(x, *o.dtype);
  else if ((k == ReduceKind::Sum || k == ReduceKind::Prod) &&
           promote_integer_dtype(x.dtype()) != x.dtype())
    x = astype(x, promote_integer_dtype(x.dtype()));
  // Half sums and products compute in float32 and round once at the end, as jnp.sum
  // and jnp.prod do (upcast_f16_for_computation): partial results over sharded axes
  // then combine in float32 too, so a sharded sum equals the unsharded one.
  DType out = x.dtype();
  bool upcast = (k == ReduceKind::Sum || k == ReduceKind::Prod) && is_half(out);
  if (upcast) x = astype(x, DType::Float32);
  std::vector<int> axes = norm_axes(axis, x.ndim(), op);
  auto s = canonicalize_sharding(o.out_sharding, op);
  auto rs = s && o.keepdims ? std::optional(without_kept_dims(*s, x.ndim(), axes, op)) : s;
  Array r = bind1(std::make_shared<prim::Reduce>(k, axes, rs), {x});
  if (upcast) r = astype(r, out);
  return keep(r, x, axes, o.keepdims, s);
}

}  // namespace

Array sum(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  return reduce(ReduceKind::Sum, x, axis, o, "sum");
}
Array prod(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  return reduce(ReduceKind::Prod, x, axis, o, "prod");
}
Array max(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  return reduce(ReduceKind::Max, x, axis, o, "max");
}
Array min(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  return reduce(ReduceKind::Min, x, axis, o, "min");
}
Array any(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  Array b = x.dtype() == DType::Bool ? x : not_equal(x, 0);
  return reduce(ReduceKind::Or, b, axis, {o.keepdims, o.out_sharding, {}}, "any");
}
Array AllFn::operator()(const Array& x, const AxisArg& axis, const ReduceOptions& o) const {
  Array b = x.dtype() == DType::Bool ? x : not_equal(x, 0);
  return reduce(ReduceKind::And, b, axis, {o.keepdims, o.out_sharding, {}}, "all");
}

Array mean(const Array& x, const AxisArg& axis, const ReduceOptions& o) {
  std::vector<int> axes = norm_axes(axis, x.ndim(), "mean");
  int64_t n = 1;
  for (int a : axes) n *= x.shape()[a];
  // As jnp.mean: sum and divide in the computation dtype (float32 for the half
  // types), then round once to the result dtype.
  if (o.dtype) check_dtype(*o.dtype, "mean");
  DType out = o.dtype ? *o.dtype : (is_inexact(x.dtype()) ? x.dtype() : DType::Float32);
  DType comp = upcast_half(out);
  Array s = sum(x, std::vector<int>(axes), {o.keepdims, o.out_sharding, comp});
  Array r = divide(s, static_cast<double>(n));
  return r.dtype() == out ? r : astype(r, out);
}

Array var(const Array& x, const AxisArg& axis, int ddof, const ReduceOptions& o) {
  std::vector<int> axes = norm_axes(axis, x.ndim(), "var");
  int64_t n = 1;
  for (int a : axes) n *= x.shape()[a];
  // As jnp.var: every step in float32 for the half types, one rounding at the end.
  if (o.dtype) check_dtype(*o.dtype, "var");
  // A complex variance is the mean of |x - mean|^2: real (jnp.var).
  DType out = o.dtype                  ? *o.dtype
              : is_complex(x.dtype())  ? real_dtype(x.dtype())
              : is_floating(x.dtype()) ? x.dtype()
                                       : DType::Float32;
  DType comp = is_complex(x.dtype()) ? x.dtype() : upcast_half(out);
  Array xf = x.dtype() == comp ? x : astype(x, comp);
  Array m = mean(xf, std::vector<int>(axes), {true, {}, {}});
  Array d = subtract(xf, m);
  Array sq = is_complex(comp) ? add(square(real(d)), square(imag(d))) : multiply(d, d);
  Array s = sum(sq, std::vector<int>(axes), {o.keepdims, o.out_sharding, {}});
  Array r = divide(s, static_cast<double>(std::max<int64_t>(n - ddof, 0)));
  return r.dtype() == out ? r : astype(r, out);
}

namespace {
Array arg(bool is_max, const Array& x, std::optional<int> axis, bool keepdims) {
  const char* op = is_max ? "argmax" : "argmin";
  Array v = x;
  int ax;
  if (!axis) {
    v = reshape(x, {x.size()});
    ax = 0;
  } else {
    ax = norm_axis(*axis, x.ndim(), op);
  }
  Array r = bind1(std::make_shared<prim::ArgReduce>(is_max, ax, DType::Int32), {v});
  if (keepdims) {
    Shape shape = x.shape();
    if (axis)
      shape[ax] = 1;
    else
      std::fill(shape.begin(), shape.end(), 1);
    r = reshape(r, shape);
  }
  return r;
}
}  // namespace

Array argmax(const Array& x, std::optional<int> axis, bool keepdims) {
  return arg(true, x, axis, keepdims);
}
Array argmin(const Array& x, std::optional<int> axis, bool keepdims) {
  return arg(false, x, axis, keepdims);
}

Array logsumexp(const Array& x, const AxisArg& axis, bool keepdims) {
  std::vector<int> axes = norm_axes(axis, x.ndim(), "logsumexp");
  Array xf = is_floating(x.dtype()) ? x : astype(x, DType::Float32);
  Array m = max(xf, std::vector<int>(axes), {true, {}, {}});
  // A -inf or inf max would give NaN in x - m; use 0 there (as jax.nn.logsumexp).
  Array safe = where(isfinite(m), m, 0.0);
  Array s = sum(exp(subtract(xf, safe)), std::vector<int>(axes), {true, {}, {}});
  Array r = add(log(s), safe);
  if (keepdims) return r;
  return squeeze(r, std::vector<int>(axes));
}

Array softmax(const Array& x, int axis) {
  int ax = norm_axis(axis, x.ndim(), "softmax");
  Array xf = is_floating(x.dtype()) ? x : astype(x, DType::Float32);
  Array m = max(xf, ax, {true, {}, {}});
  Array e = exp(subtract(xf, m));
  return divide(e, sum(e, ax, {true, {}, {}}));
}

Array log_softmax(const Array& x, int axis) {
  int ax = norm_axis(axis, x.ndim(), "log_softmax");
  Array xf = is_floating(x.dtype()) ? x : astype(x, DType::Float32);
  Array m = max(xf, ax, {true, {}, {}});
  Array sh = subtract(xf, m);
  return subtract(sh, log(sum(exp(sh), ax, {true, {}, {}})));
}

}  // namespace tsr
