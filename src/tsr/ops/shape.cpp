// Shape front-ends (NumPy names) and the sharding APIs reshard and
// with_sharding_constraint (spec §13.2–§13.3).
#include <algorithm>
#include <numeric>

#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/shape_ops.h"
#include "tsr/prims/sharding_ops.h"

namespace tsr {
using namespace detail;

Array reshape(const Array& x, Shape shape, const ShardingArg& out_sharding) {
  int unknown = -1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] != -1) continue;
    if (unknown >= 0)
      throw ValueError("[reshape] can only specify one unknown dimension. Got " + shape_str(shape) +
                       "; expected at most one -1.");
    unknown = i;
  }
  // The known sizes pass the one shape check (negative sizes other than the
  // single -1, and products past int64, are refused).
  Shape known_dims = shape;
  if (unknown >= 0) known_dims.erase(known_dims.begin() + unknown);
  int64_t known = check_shape(known_dims, "reshape", itemsize(x.dtype()));
  if (unknown >= 0) {
    if (known == 0 || x.size() % known != 0)
      throw TypeError("[reshape] cannot reshape array of shape " + shape_str(x.shape()) +
                      " (size " + std::to_string(x.size()) + ") into shape " + shape_str(shape) +
                      ". Got sizes that do not divide; expected a product dividing the size.");
    shape[unknown] = x.size() / known;
  }
  auto s = canonicalize_sharding(out_sharding, "reshape");
  if (!s && shape == x.shape()) return x;  // a reshape that changes nothing is the identity
  return bind1(std::make_shared<prim::Reshape>(shape, s), {x});
}

Array Array::reshape(const Shape& new_shape) const { return tsr::reshape(*this, new_shape); }
Array Array::astype(DType dtype) const { return tsr::astype(*this, dtype); }

Array transpose(const Array& x, std::vector<int> perm) {
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(x.ndim()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  } else {
    for (auto& p : perm) p = norm_axis(p, x.ndim(), "transpose");
  }
  return bind1(std::make_shared<prim::Transpose>(perm), {x});
}

Array squeeze(const Array& x, const AxisArg& axis) {
  std::vector<int> dims;
  if (axis.all()) {
    for (int d = 0; d < x.ndim(); ++d)
      if (x.shape()[d] == 1) dims.push_back(d);
  } else {
    for (int a : axis.axes()) dims.push_back(norm_axis(a, x.ndim(), "squeeze"));
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  }
  if (dims.empty()) return x;
  return bind1(std::make_shared<prim::Squeeze>(dims), {x});
}

Array expand_dims(const Array& x, const AxisArg& axis) {
  int out_rank = x.ndim() + static_cast<int>(axis.axes().size());
  std::vector<int> at;
  for (int a : axis.axes()) at.push_back(norm_axis(a, out_rank, "expand_dims"));
  std::sort(at.begin(), at.end());
  if (std::adjacent_find(at.begin(), at.end()) != at.end())
    throw ValueError("[expand_dims] repeated axis. Got " + std::to_string(at.size()) +
                     " axes with a duplicate; expected distinct axes.");
  Shape shape;
  std::vector<int> bd;
  int k = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::binary_search(at.begin(), at.end(), d)) {
      shape.push_back(1);
    } else {
      shape.push_back(x.shape()[k++]);
      bd.push_back(d);
    }
  }
  return bind1(std::make_shared<prim::BroadcastInDim>(shape, bd, std::nullopt), {x});
}

Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int>& bdims,
                       const ShardingArg& out_sharding) {
  check_shape(shape, "broadcast_in_dim", itemsize(x.dtype()));
  auto s = canonicalize_sharding(out_sharding, "broadcast_in_dim");
  return bind1(std::make_shared<prim::BroadcastInDim>(shape, bdims, s), {x});
}

Array broadcast_to(const Array& x, const Shape& shape, const ShardingArg& out_sharding) {
  check_shape(shape, "broadcast_to", itemsize(x.dtype()));
  int r = static_cast<int>(shape.size());
  if (x.ndim() > r)
    throw ValueError("[broadcast_to] input rank " + std::to_string(x.ndim()) +
                     " is larger than the target rank. Got " + shape_str(x.shape()) + " -> " +
                     shape_str(shape) + "; expected a target of rank >= the input's.");
  auto s = canonicalize_sharding(out_sharding, "broadcast_to");
  std::vector<int> bd;
  auto xe = entries_of(x.type());
  std::vector<PartitionEntry> te;
  if (s) te = s->spec().normalized(r).entries();
  for (int d = 0; d < x.ndim(); ++d) {
    int od = r - x.ndim() + d;
    bd.push_back(od);
    bool size_ok = x.shape()[d] == shape[od] || x.shape()[d] == 1;
    bool shard_ok = xe[d].is_none() || (s && te[od] == xe[d]) || (!s && x.shape()[d] == shape[od]);
    if (!size_ok || !shard_ok) {
      std::string want = s ? make_type(shape, x.dtype(), x.type().weak, *s).str()
                           : std::string(dtype_short_name(x.dtype())) + shape_str(shape);
      throw ValueError("[broadcast_to] Incompatible types for broadcasting: input type=" +
                       x.type().str() + " and requested type=" + want +
                       ". Reshard the input (a sharded dim cannot be unsharded by broadcasting).");
    }
  }
  if (!s && shape == x.shape()) return x;
  return bind1(std::make_shared<prim::BroadcastInDim>(shape, bd, s), {x});
}

Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides) {
  Shape st = strides.empty() ? Shape(start.size(), 1) : strides;
  return bind1(std::make_shared<prim::Slice>(start, limit, st), {x});
}

namespace {
std::vector<Array> index_arrays(const std::vector<ArrayLike>& start, const Array& x,
                                const char* op) {
  std::vector<Array> out;
  for (const auto& s : start) {
    if (const auto* a = std::get_if<Array>(&s.value())) {
      out.push_back(*a);
    } else if (const auto* i = std::get_if<int64_t>(&s.value())) {
      out.push_back(scalar_array(static_cast<double>(*i), DType::Int32, false, &x));
    } else {
      throw TypeError(std::string("[") + op + "] start indices must be integers. Got a " +
                      (std::holds_alternative<double>(s.value()) ? "float" : "bool") +
                      "; expected an int or an integer scalar array.");
    }
  }
  return out;
}
}  // namespace

Array dynamic_slice(const Array& x, const std::vector<ArrayLike>& start, const Shape& sizes) {
  check_shape(sizes, "dynamic_slice", itemsize(x.dtype()));
  std::vector<Array> in{x};
  for (auto& a : index_arrays(start, x, "dynamic_slice")) in.push_back(a);
  return bind1(std::make_shared<prim::DynamicSlice>(sizes), in);
}

Array dynamic_update_slice(const Array& x, const Array& update,
                           const std::vector<ArrayLike>& start) {
  std::vector<Array> in{x, update};
  for (auto& a : index_arrays(start, x, "dynamic_update_slice")) in.push_back(a);
  return bind1(std::make_shared<prim::DynamicUpdateSlice>(), in);
}

Array pad(const Array& x, const ArrayLike& value,
          const std::vector<std::tuple<int64_t, int64_t, int64_t>>& config) {
  Array v = promote({x, value}, "pad")[1];
  v = convert(v, x.dtype(), x.type().weak);
  Shape lo, hi, in;
  for (const auto& [a, b, c] : config) lo.push_back(a), hi.push_back(b), in.push_back(c);
  return bind1(std::make_shared<prim::Pad>(lo, hi, in), {x, v});
}

Array concatenate(const std::vector<Array>& xs, int axis) {
  if (xs.empty())
    throw ValueError("[concatenate] Need at least one array to concatenate. Got none.");
  std::vector<ArrayLike> like(xs.begin(), xs.end());
  std::vector<Array> v = promote(like, "concatenate");
  int ax = norm_axis(axis, xs[0].ndim(), "concatenate");
  if (v.size() == 1) return v[0];
  return bind1(std::make_shared<prim::Concatenate>(ax), v);
}

Array stack(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) throw ValueError("[stack] Need at least one array to stack. Got none.");
  int ax = norm_axis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Array> e;
  for (const auto& x : xs) e.push_back(expand_dims(x, ax));
  if (e.size() == 1) return e[0];
  return concatenate(e, ax);
}

std::vector<Array> split(const Array& x, int64_t sections, int axis) {
  int ax = norm_axis(axis, x.ndim(), "split");
  if (sections <= 0 || x.shape()[ax] % sections != 0)
    throw ValueError("[split] array split does not result in an equal division. Got " +
                     std::to_string(sections) + " sections for axis size " +
                     std::to_string(x.shape()[ax]) + "; expected a divisor.");
  Shape sizes(static_cast<size_t>(sections), x.shape()[ax] / sections);
  return bind(std::make_shared<prim::Split>(sizes, ax), {x});
}

std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int axis) {
  int ax = norm_axis(axis, x.ndim(), "split");
  Shape sizes;
  int64_t prev = 0, n = x.shape()[ax];
  for (int64_t i : indices) {
    int64_t c = std::clamp<int64_t>(i, prev, n);
    sizes.push_back(c - prev);
    prev = c;
  }
  sizes.push_back(n - prev);
  return bind(std::make_shared<prim::Split>(sizes, ax), {x});
}

Array rev(const Array& x, const std::vector<int>& dims) {
  std::vector<int> d;
  for (int a : dims) d.push_back(norm_axis(a, x.ndim(), "rev"));
  if (d.empty()) return x;
  return bind1(std::make_shared<prim::Rev>(d), {x});
}

Array reshard(const Array& x, const Placement& where) {
  if (std::holds_alternative<std::monostate>(where))
    throw ValueError(
        "[reshard] Reshard should only be used with out_shardings which are non-None and have a "
        "non-empty mesh. Got sharding None. Pass a NamedSharding or a PartitionSpec.");
  bool traced = x.valid() && x.impl()->var;
  std::optional<Mesh> mesh;
  NamedSharding dst;
  if (const auto* ns = std::get_if<NamedSharding>(&where); ns && !ns->concrete_mesh()) {
    if (ns->mesh().empty())
      throw ValueError(
          "[reshard] Reshard should only be used with out_shardings which are "
          "non-None and have a non-empty mesh. Got sharding " +
          ns->str() + ".");
    dst = *canonicalize_sharding(*ns, "reshard", false);
  } else if (std::holds_alternative<PartitionSpec>(where)) {
    // Eager and traced take one path, so they raise the same errors.
    dst = *canonicalize_sharding(std::get<PartitionSpec>(where), "reshard", false);
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == dst.mesh()) mesh = ctx;
  } else if (std::holds_alternative<Device>(where)) {
    NamedSharding c = resolve_placement(where, x.shape(), "reshard");
    mesh = *c.concrete_mesh();
    dst = NamedSharding(mesh->abstract_mesh(), c.spec());
  } else {
    const NamedSharding& c = std::get<NamedSharding>(where);
    mesh = *c.concrete_mesh();
    dst = NamedSharding(mesh->abstract_mesh(), c.spec());
    canonicalize_sharding(dst, "reshard", false);
  }
  // JAX normalizes (pads) the spec, then the type check refuses a longer one (E24).
  if (dst.spec().size() > x.ndim())
    throw ValueError("[reshard] Length of sharding.spec (" + std::to_string(dst.spec().size()) +
                     ") must be equal to aval's ndim (" + std::to_string(x.ndim()) +
                     "). Got sharding.spec " + dst.spec().repr() + ", aval.ndim " +
                     std::to_string(x.ndim()) + " and sharding " + dst.str() +
                     ". Give at most one spec entry per dimension.");
  dst = dst.normalized(x.ndim());
  if (!traced && mesh && NamedSharding(*mesh, dst.spec()) == x.impl()->sharding()) return x;
  return bind1(std::make_shared<prim::Reshard>(dst, mesh), {x});
}

Array with_sharding_constraint(const Array& x, const ShardingArg& sharding) {
  if (std::holds_alternative<std::monostate>(sharding)) return x;
  AbstractMesh m;
  PartitionSpec spec;
  if (const auto* ps = std::get_if<PartitionSpec>(&sharding)) {
    m = get_abstract_mesh();
    if (m.empty())
      throw RuntimeError(
          "[with_sharding_constraint] with_sharding_constraint requires a non-empty "
          "mesh in context if you are passing `PartitionSpec`s to shardings. Got " +
          ps->repr() + " with no context mesh. Enter one with MeshScope.");
    spec = *ps;  // may hold UNCONSTRAINED, which a NamedSharding on Explicit axes may not
  } else {
    m = std::get<NamedSharding>(sharding).mesh();
    spec = std::get<NamedSharding>(sharding).spec();
  }
  if (spec.size() > x.ndim())
    throw ValueError("[with_sharding_constraint] Sharding " + spec.repr() +
                     " is only valid for values of rank at least " + std::to_string(spec.size()) +
                     ", but was applied to a value of rank " + std::to_string(x.ndim()) +
                     ". Shorten the spec.");
  if (m.are_all_axes_explicit()) {
    auto have = entries_of(x.type());
    const auto& raw = spec.entries();
    for (int d = 0; d < x.ndim(); ++d) {
      PartitionEntry want = d < static_cast<int>(raw.size()) ? raw[d] : PartitionEntry();
      if (!want.is_unconstrained() && !(want == have[d]))
        throw AssertionError(
            "[with_sharding_constraint] `with_sharding_constraint` acts as an assert when all "
            "axes of mesh are of type `Explicit`. The array sharding: " +
            x.type().sharding.spec().repr() + " did not match the sharding provided: " +
            spec.repr() + ". Please use `reshard` to shard your input to the sharding you want.");
    }
    return x;
  }
  for (const auto& a : spec.partition_axes())
    if (m.axis_type(a) != AxisType::Auto)
      throw ValueError(
          "[with_sharding_constraint] The spec of NamedSharding passed to "
          "with_sharding_constraint can only refer to Auto axes of the mesh. Got spec=" +
          spec.repr() + " and mesh=" + m.str() + ". You probably meant to use `reshard` API?");
  // Auto axes: a hard constraint for the Auto propagation pass; the type is unchanged.
  if (m.auto_axes().empty()) return x;
  // Uneven layouts do not exist here (spec §8.2): refuse a constraint that does not
  // divide (E22's words).
  {
    std::vector<PartitionEntry> e;
    for (const auto& en : spec.entries())
      e.push_back(en.is_unconstrained() ? PartitionEntry() : en);
    NamedSharding(m, PartitionSpec(e)).shard_shape(x.shape());
  }
  return detail::bind1(std::make_shared<prim::ShardingConstraint>(spec, m), {x});
}

}  // namespace tsr
