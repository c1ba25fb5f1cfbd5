// JAX front-ends built from other ops: tensordot, reshape(order='F'), roll with a
// traced shift, full/full_like with an array fill value.
#include <algorithm>
#include <numeric>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"

namespace tsr {
using namespace detail;

namespace {

std::string list_str(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A ShardingArg from a Placement (a Device means its single-device placement).
ShardingArg as_sharding(const Placement& where) {
  if (auto* s = std::get_if<NamedSharding>(&where)) return *s;
  if (auto* p = std::get_if<PartitionSpec>(&where)) return *p;
  return {};
}

}  // namespace

Array tensordot(const Array& a, const Array& b, const TensordotAxes& axes, const DotOptions& o) {
  std::vector<int> ca, cb;
  if (axes.n() >= 0) {
    int n = axes.n();
    if (n > a.ndim() || n > b.ndim())
      throw TypeError("[tensordot] Number of tensordot axes (axes " + std::to_string(n) +
                      ") exceeds input ranks (" + shape_str(a.shape()) + " and " +
                      shape_str(b.shape()) + "). Got axes=" + std::to_string(n) +
                      "; expected at most the smaller rank.");
    for (int i = 0; i < n; ++i) {
      ca.push_back(a.ndim() - n + i);
      cb.push_back(i);
    }
  } else {
    if (axes.a().size() != axes.b().size())
      throw TypeError("[tensordot] tensordot requires axes lists to have equal length, got " +
                      list_str(axes.a()) + " and " + list_str(axes.b()) +
                      ". Pair every contracted dim of a with one of b.");
    for (int x : axes.a()) ca.push_back(norm_axis(x, a.ndim(), "tensordot"));
    for (int x : axes.b()) cb.push_back(norm_axis(x, b.ndim(), "tensordot"));
  }
  return dot_general(a, b, {ca, cb}, o);
}

Array reshape(const Array& x, Shape new_shape, Order order, const ShardingArg& out_sharding) {
  if (order == Order::C) return reshape(x, std::move(new_shape), out_sharding);
  // As jnp: reverse the dims, reshape row-major to the reversed shape, reverse back.
  std::reverse(new_shape.begin(), new_shape.end());
  ShardingArg inner;
  if (auto s = canonicalize_sharding(out_sharding, "reshape")) {
    auto e = s->spec().normalized(static_cast<int>(new_shape.size())).entries();
    std::reverse(e.begin(), e.end());
    inner = NamedSharding(s->mesh(), PartitionSpec(e, s->spec().unreduced(), s->spec().reduced(),
                                                   s->spec().unreduced_kind()));
  }
  Array t = x.ndim() > 1 ? transpose(x) : x;
  Array r = reshape(t, new_shape, inner);
  return r.ndim() > 1 ? transpose(r) : r;
}

Array roll(const Array& a, const Array& shift, const std::vector<int>& axes) {
  if (!is_integer(shift.dtype()) || shift.ndim() > 1)
    throw TypeError("[roll] shift must be a 0-d or 1-d integer array. Got " + shift.type().str() +
                    "; expected integers. Convert with astype.");
  if (axes.empty()) {
    if (shift.ndim() == 1 && shift.shape()[0] != 1)
      throw ValueError("[roll] with no axis, shift must be a scalar. Got " + shift.type().str() +
                       "; expected one shift for the flattened array.");
    return reshape(roll(ravel(a), reshape(shift, {}), {0}), a.shape());
  }
  int64_t ns = shift.ndim() == 0 ? 1 : shift.shape()[0];
  size_t n = std::max(static_cast<size_t>(ns), axes.size());
  if ((static_cast<size_t>(ns) != n && ns != 1) || (axes.size() != n && axes.size() != 1))
    throw ValueError("[roll] shift and axis must broadcast against each other. Got " +
                     std::to_string(ns) + " shifts and " + std::to_string(axes.size()) +
                     " axes; expected equal lengths or length 1.");
  Array r = a;
  for (size_t i = 0; i < n; ++i) {
    int ax = norm_axis(axes[axes.size() == 1 ? 0 : i], a.ndim(), "roll");
    if (!entries_of(r.type())[ax].is_none())
      throw ShardingTypeError(
          "[roll] `a` cannot be sharded on the axis being rolled over. Got arr type=" +
          r.type().str() + " and axis=" + std::to_string(ax) +
          ". Reshard the array to unsharded on that axis first.");
    int64_t len = r.shape()[ax];
    if (len == 0) continue;
    Array s = shift.ndim() == 0 ? shift
                                : reshape(slice(shift, {ns == 1 ? 0 : static_cast<int64_t>(i)},
                                                {ns == 1 ? 1 : static_cast<int64_t>(i) + 1}),
                                          {});
    // As jnp's _roll_dynamic: x = shift mod n, then a window of (a, a) at n - x.
    Array m = rem(rem(s.astype(DType::Int64), len) + len, len);
    Array twice = concatenate({r, r}, ax);
    std::vector<ArrayLike> start(static_cast<size_t>(r.ndim()), ArrayLike(0));
    start[static_cast<size_t>(ax)] = subtract(len, m);
    r = dynamic_slice(twice, start, r.shape());
  }
  return r;
}

Array full(const Shape& shape, const Array& fill_value, std::optional<DType> dtype,
           const Placement& where) {
  Array v = fill_value;
  if (dtype && *dtype != v.dtype()) v = convert(v, *dtype);
  if (v.ndim() > static_cast<int>(shape.size()))
    throw ValueError("[full] fill_value of rank " + std::to_string(v.ndim()) +
                     " cannot broadcast to shape " + shape_str(shape) + ". Got " + v.type().str() +
                     "; expected a fill value broadcastable to the shape.");
  if (std::holds_alternative<Device>(where)) v = device_put(v, where);
  ShardingArg s = as_sharding(where);
  if (std::holds_alternative<std::monostate>(s) && v.ndim() == 0) {
    // As lax.full: a scalar fill broadcasts replicated on its own mesh.
    AbstractMesh mesh = v.type().sharding.mesh();
    if (!mesh.empty()) s = NamedSharding(mesh, PartitionSpec());
  }
  if (v.shape() == shape && std::holds_alternative<std::monostate>(s)) return v;
  return broadcast_to(v, shape, s);
}

Array full_like(const Array& x, const Array& fill_value, std::optional<DType> dtype,
                const Placement& where) {
  DType dt = dtype ? *dtype : x.dtype();
  if (!std::holds_alternative<std::monostate>(where))
    return vary_like(full(x.shape(), fill_value, dt, where), x);
  const NamedSharding& ts = x.type().sharding;
  Placement like = ts.mesh().empty()
                       ? Placement()
                       : Placement(NamedSharding(ts.mesh(), PartitionSpec(ts.spec().entries())));
  return vary_like(full(x.shape(), fill_value, dt, like), x);
}

}  // namespace tsr
