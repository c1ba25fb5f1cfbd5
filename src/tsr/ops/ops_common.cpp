#include "tsr/ops/ops_common.h"

#include <set>

#include "tsr/collectives.h"
#include "tsr/core/array_impl.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/shape_ops.h"

namespace tsr::detail {

namespace {
void check_explicit(const NamedSharding& s, const char* api) {
  const AbstractMesh& m = s.mesh();
  auto check = [&](const std::string& a) {
    if (m.axis_type(a) != AxisType::Explicit)
      throw ValueError(std::string("[") + api + "] PartitionSpec passed to " + api +
                       " cannot contain axis names that are of type Auto or Manual. Got "
                       "PartitionSpec: " +
                       s.spec().repr() + " with axis name: " + a +
                       " of type: " + axis_type_name(m.axis_type(a)) +
                       ". Use only Explicit axes here (or auto_axes for Auto ones).");
  };
  for (const auto& a : s.spec().partition_axes()) check(a);
  for (const auto& a : s.spec().unreduced()) check(a);
  for (const auto& a : s.spec().reduced()) check(a);
}
}  // namespace

std::optional<NamedSharding> canonicalize_sharding(const ShardingArg& s, const char* api,
                                                   bool check_mesh) {
  if (std::holds_alternative<std::monostate>(s)) return std::nullopt;
  AbstractMesh ctx = get_abstract_mesh();
  NamedSharding out;
  if (const auto* ps = std::get_if<PartitionSpec>(&s)) {
    if (ctx.empty())
      throw ValueError(std::string("[") + api +
                       "] Using PartitionSpec when you are not under a mesh context is not "
                       "allowed. Please pass a NamedSharding instance or enter into a mesh "
                       "context via `set_mesh` (MeshScope). Got " +
                       ps->repr());
    out = NamedSharding(ctx, *ps);
  } else {
    const NamedSharding& ns = std::get<NamedSharding>(s);
    if (ns.mesh().empty()) return std::nullopt;
    if (check_mesh && !ctx.empty() && !(ns.mesh() == ctx) &&
        !(ns.mesh().are_all_axes_auto() && ctx.are_all_axes_auto()))
      throw ValueError(std::string("[") + api + "] Context mesh " + ctx.str() +
                       " should match the mesh of sharding " + ns.mesh().str() + " passed to " +
                       api + ". Build the sharding on the context mesh, or change the context.");
    out = NamedSharding(ns.mesh(), ns.spec());
  }
  check_explicit(out, api);
  return out;
}

prim::Placed resolve_placed(const Placement& where, const Shape& shape, const char* api) {
  prim::Placed p;
  if (std::holds_alternative<std::monostate>(where)) return p;
  if (std::holds_alternative<Device>(where)) {
    NamedSharding s = resolve_placement(where, shape, api);
    p.mesh = *s.concrete_mesh();
    p.sharding = NamedSharding(p.mesh->abstract_mesh(), P());
    return p;
  }
  if (const auto* ns = std::get_if<NamedSharding>(&where)) {
    if (ns->concrete_mesh()) {
      NamedSharding s = resolve_placement(where, shape, api);
      p.mesh = *s.concrete_mesh();
      p.sharding = NamedSharding(p.mesh->abstract_mesh(), s.spec());
      check_explicit(*p.sharding, api);
      return p;
    }
    p.sharding = canonicalize_sharding(*ns, api);
    return p;
  }
  p.sharding = canonicalize_sharding(std::get<PartitionSpec>(where), api);
  if (p.sharding) {
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == p.sharding->mesh()) p.mesh = ctx;
  }
  return p;
}

Array scalar_array(double v, DType dtype, bool weak, const Array* like) {
  prim::Placed where;
  if (like && like->valid() && !like->impl()->var && !like->sharding().mesh().empty()) {
    // On the mesh the innermost trace sees `like` on: in a shard_map body a concrete
    // array is an invariant block on the manual mesh, and so is a literal beside it.
    const AbstractMesh seen = seen_type(*like).sharding.mesh();
    if (seen == like->type().sharding.mesh()) where.mesh = *like->sharding().concrete_mesh();
    where.sharding = NamedSharding(seen, P());
    if (where.sharding->mesh().empty()) where.sharding.reset();
  }
  return bind1(std::make_shared<prim::Full>(Shape{}, dtype, v, weak, where), {});
}

TypedDType typed_dtype(const ArrayLike& a) {
  const auto& v = a.value();
  if (const auto* x = std::get_if<Array>(&v)) return {x->dtype(), x->type().weak};
  if (std::holds_alternative<double>(v)) return {DType::Float32, true};
  if (std::holds_alternative<int64_t>(v)) return {DType::Int32, true};
  return {DType::Bool, false};
}

Array convert(const Array& x, DType dtype, bool weak) {
  if (x.dtype() == dtype && x.type().weak == weak) return x;
  return bind1(std::make_shared<prim::Convert>(dtype, weak), {x});
}

DType promote_integer_dtype(DType t) {
  if (t == DType::Bool || t == DType::Int8 || t == DType::Int16) return DType::Int32;
  if (t == DType::UInt8 || t == DType::UInt16) return DType::UInt32;
  return t;
}

std::vector<Array> promote(const std::vector<ArrayLike>& args, const char* op) {
  TypedDType t{};
  bool first = true;
  const Array* like = nullptr;
  for (const auto& a : args) {
    TypedDType d = typed_dtype(a);
    t = first ? d : promote_types(t, d);
    first = false;
    if (!like)
      if (const auto* x = std::get_if<Array>(&a.value())) like = x;
  }
  std::vector<Array> out;
  out.reserve(args.size());
  for (const auto& a : args) {
    const auto& v = a.value();
    if (const auto* x = std::get_if<Array>(&v)) {
      if (!x->valid())
        throw ValueError(std::string("[") + op +
                         "] an operand is an empty Array handle. Got a "
                         "default-constructed Array; expected an array made by an op.");
      out.push_back(convert(*x, t.dtype, t.weak));
    } else {
      double val = std::holds_alternative<double>(v)    ? std::get<double>(v)
                   : std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v))
                                                        : (std::get<bool>(v) ? 1.0 : 0.0);
      out.push_back(scalar_array(val, t.dtype, t.weak, like));
    }
  }
  return out;
}

std::vector<Array> promote_ranks(std::vector<Array> xs) {
  int rank = 0;
  for (const auto& x : xs) rank = std::max(rank, x.ndim());
  for (auto& x : xs) {
    if (x.ndim() == 0 || x.ndim() == rank) continue;
    Shape shape(static_cast<size_t>(rank - x.ndim()), 1);
    shape.insert(shape.end(), x.shape().begin(), x.shape().end());
    std::vector<int> bd;
    for (int d = 0; d < x.ndim(); ++d) bd.push_back(rank - x.ndim() + d);
    x = bind1(std::make_shared<prim::BroadcastInDim>(shape, bd, std::nullopt), {x});
  }
  return xs;
}

Array vary_like(const Array& v, const Array& like) {
  const std::set<std::string>& want = like.type().vma;
  if (want.empty()) return v;
  std::vector<std::string> add;  // in mesh order, as the implicit pvary of §3.4
  for (const auto& a : get_abstract_mesh().axis_names())
    if (want.count(a) && !v.type().vma.count(a)) add.push_back(a);
  return add.empty() ? v : tsr::pvary(v, add);
}

}  // namespace tsr::detail
