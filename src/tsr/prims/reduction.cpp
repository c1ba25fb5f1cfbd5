// Rules of the reductions (spec §12.11): reduced entries are deleted; a sharded
// reduced dim becomes a local reduction plus an all_reduce (the kernel's result
// is laid out unreduced over those axes and the lowering reduces it).
#include "tsr/prims/reduction.h"

#include <algorithm>

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const char* const kNames[] = {"reduce_sum", "reduce_prod", "reduce_max",
                              "reduce_min", "reduce_and",  "reduce_or"};
bool register_all() {
  for (const char* n : kNames) register_primitive(n);
  register_primitive("argmax");
  register_primitive("argmin");
  declare_ad("reduce_sum", AdKind::Linear);
  for (const char* n : {"reduce_prod", "reduce_max", "reduce_min"})
    declare_ad(n, AdKind::Differentiable);
  for (const char* n : {"reduce_and", "reduce_or", "argmax", "argmin"})
    declare_ad(n, AdKind::NonDifferentiable, "bool or integer results have no tangent space");
  return true;
}
const bool registered = register_all();

std::optional<UnreducedKind> partial_kind(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return UnreducedKind::Sum;
    case ReduceKind::Max:
    case ReduceKind::Or:
      return UnreducedKind::Max;
    case ReduceKind::Min:
    case ReduceKind::And:
      return UnreducedKind::Min;
    case ReduceKind::Prod:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<PartitionEntry> drop_axes(const std::vector<PartitionEntry>& e,
                                      const std::vector<int>& axes) {
  std::vector<PartitionEntry> out;
  for (int d = 0; d < static_cast<int>(e.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(e[d]);
  return out;
}

Shape drop_dims(const Shape& s, const std::vector<int>& axes) {
  Shape out;
  for (int d = 0; d < static_cast<int>(s.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(s[d]);
  return out;
}

}  // namespace

const char* reduce_name(ReduceKind k) { return kNames[static_cast<int>(k)]; }

std::vector<ArrayType> Reduce::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  for (int a : axes_)
    if (a < 0 || a >= x.ndim())
      throw ValueError(std::string("[") + name() + "] reduction axis " + std::to_string(a) +
                       " is out of range. Got axes " + ints_tuple(axes_) + " for " + x.str() +
                       "; expected axes in [0, " + std::to_string(x.ndim()) + ").");
  bool logical = kind_ == ReduceKind::And || kind_ == ReduceKind::Or;
  if (logical && x.dtype != DType::Bool)
    throw TypeError(std::string("[") + name() + "] " + name() + " needs a bool operand. Got " +
                    x.str() + "; expected bool. Compare with 0 first.");
  if (!logical && x.dtype == DType::Bool && kind_ != ReduceKind::Max && kind_ != ReduceKind::Min)
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept bool. Got " +
                    x.str() + "; expected a numeric array. Convert with astype(int32).");
  Shape shape = drop_dims(x.shape, axes_);
  // Spec §9: partial values combine by the reduction only when kinds match.
  std::optional<UnreducedKind> kind = partial_kind(kind_);
  const std::set<std::string>& xu = unreduced_of(x);
  if (!xu.empty() && (!kind || x.sharding.spec().unreduced_kind() != *kind))
    throw ShardingTypeError(
        std::string("[") + name() + "] " + name() +
        " cannot reduce a value that is unreduced of another kind: the "
        "partial values would be combined wrongly. Got operand " +
        x.str() + "; expected no unreduced axes" +
        (kind ? std::string(" or unreduced_kind=") + unreduced_kind_name(*kind) : std::string()) +
        ". Reduce the operand first with reshard(x, P(...)).");
  std::optional<NamedSharding> os = out_sharding_;
  if (os) {
    const PartitionSpec& s = os->spec();
    if (!s.reduced().empty())
      throw ValueError(std::string("[") + name() + "] out_sharding passed to " + name() +
                       " cannot be reduced. Got out_sharding=" + s.repr() +
                       "; expected no reduced axes. Drop them, or reshard the result.");
    if (!s.unreduced().empty()) {
      if (!kind || logical)
        throw ShardingTypeError(std::string("[") + name() + "] " + name() +
                                " cannot leave its result unreduced. Got out_sharding=" + s.repr() +
                                "; expected no unreduced axes (only reduce_sum, reduce_max and "
                                "reduce_min have partial results). Drop the unreduced axes.");
      if (s.unreduced_kind() != *kind)
        throw ShardingTypeError(std::string("[") + name() + "] " + name() +
                                " requires `out_sharding`'s unreduced_kind to be " +
                                unreduced_kind_name(*kind) + " but got " + s.repr() +
                                ". Pass that kind, e.g. P(..., Unreduced{{...}, kind}).");
      // Unreduced output axes must come from the reduced dims or the operand's set.
      std::set<std::string> allowed = xu;
      auto e = entries_of(x);
      for (int a : axes_)
        for (const auto& n : e[a].axes()) allowed.insert(n);
      for (const auto& u : s.unreduced())
        if (!allowed.count(u)) {
          std::vector<int64_t> ax(axes_.begin(), axes_.end());
          throw ShardingTypeError(
              std::string("[") + name() +
              "] out_sharding's unreduced axes should be in operand's specs that were " + name() +
              " over. Got operand=" + x.str() + ", axes=" + ints_tuple(ax) +
              ", unreduced_spec=" + quoted_set(s.unreduced()) + "; expected axes among " +
              quoted_set(allowed) + ". Name only axes that shard a reduced dim.");
        }
    } else if (!xu.empty()) {
      // As JAX: an unreduced operand stays unreduced when out_sharding names none.
      os = NamedSharding(os->mesh(), PartitionSpec(os->spec().entries(), xu, reduced_of(x),
                                                   x.sharding.spec().unreduced_kind()));
    }
    return {make_type(shape, x.dtype, x.weak, *os)};
  }
  return {make_type(shape, x.dtype, x.weak, rule_mesh(in), drop_axes(entries_of(x), axes_),
                    x.sharding.spec())};
}

Lowering Reduce::partition(const std::vector<ArrayType>& in,
                           const std::vector<ArrayType>& out) const {
  const ArrayType& x = in[0];
  auto e = entries_of(x);
  auto kind = partial_kind(kind_);
  std::vector<PartitionEntry> ie = e;
  std::set<std::string> partial;
  for (int a : axes_) {
    if (kind)
      for (const auto& n : e[a].axes()) partial.insert(n);
    else
      ie[a] = PartitionEntry();  // prod: gather the reduced dims first
  }
  Lowering l;
  l.in.push_back(with_sets_of(ie, x.sharding.spec()));
  // Local reduce leaves partial results over the reduced dims' axes; sets of the
  // operand (already unreduced) carry over with the same kind.
  for (const auto& u : unreduced_of(x)) partial.insert(u);
  PartitionSpec sets(std::vector<PartitionEntry>{}, partial, reduced_of(x),
                     kind ? *kind : UnreducedKind::Sum);
  l.out.push_back(with_sets_of(drop_axes(ie, axes_), sets));
  return l;
}

std::string Reduce::params() const {
  std::vector<int64_t> a(axes_.begin(), axes_.end());
  return "axes=" + p_ints(a) + (out_sharding_ ? " out_sharding=" + p_sharding(out_sharding_) : "");
}

std::vector<ArrayType> ArgReduce::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (axis_ < 0 || axis_ >= x.ndim())
    throw ValueError(std::string("[") + name() + "] axis " + std::to_string(axis_) +
                     " is out of range. Got " + x.str() + "; expected an axis in [0, " +
                     std::to_string(x.ndim()) + ").");
  if (!is_integer(index_dtype_))
    throw TypeError(std::string("[") + name() + "] index_dtype must be an integer dtype. Got " +
                    dtype_name(index_dtype_) + "; expected int32 (or another integer dtype).");
  if (x.shape[axis_] == 0)
    throw ValueError(std::string("[") + name() + "] attempt to get " + name() +
                     " of an empty sequence. Got " + x.str() + "; expected a non-empty axis " +
                     std::to_string(axis_) + ".");
  no_unreduced(name(), in);
  return {make_type(drop_dims(x.shape, {axis_}), index_dtype_, false, rule_mesh(in),
                    drop_axes(entries_of(x), {axis_}))};
}

Lowering ArgReduce::partition(const std::vector<ArrayType>& in,
                              const std::vector<ArrayType>& out) const {
  auto e = entries_of(in[0]);
  e[axis_] = PartitionEntry();  // gather the reduced dim: indices need the whole axis
  Lowering l;
  l.in.push_back(spec_of(e));
  l.out.push_back(out[0].sharding.spec());
  return l;
}

std::string ArgReduce::params() const {
  return "axes=(" + std::to_string(axis_) + ",) index_dtype=" + dtype_name(index_dtype_);
}

// ---- autodiff rules ----------------------------------------------------------------

namespace {

// x's dims listed in `axes` unsharded (the rest as they are), moved last and merged.
Array rows_last(const Array& x, const std::vector<int>& axes) {
  std::vector<PartitionEntry> e = entries_of(x.type());
  bool sharded = false;
  for (int a : axes) {
    sharded = sharded || !e[a].is_none();
    e[a] = PartitionEntry();
  }
  Array y = x;
  if (sharded)
    y = bind1(std::make_shared<Reshard>(NamedSharding(x.type().sharding.mesh(), spec_of(e)),
                                        std::nullopt),
              {x});
  std::vector<int> perm;
  Shape shape;
  int64_t n = 1;
  for (int d = 0; d < x.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      perm.push_back(d);
      shape.push_back(x.shape()[d]);
    }
  for (int a : axes) {
    perm.push_back(a);
    n *= x.shape()[a];
  }
  shape.push_back(n);
  return reshape(transpose(y, perm), shape);
}

}  // namespace

std::vector<Array> Reduce::jvp(const std::vector<Array>& primals,
                               const std::vector<Array>& tangents, std::vector<Array>& outs) const {
  const Array &x = primals[0], &t = tangents[0], &y = outs[0];
  if (kind_ == ReduceKind::Sum) return ad::linear_jvp(*this, primals, tangents);
  // Sums below keep the output's sharding when it is a plain or sum-unreduced one.
  std::optional<NamedSharding> os = out_sharding_;
  if (os && !os->spec().unreduced().empty() && os->spec().unreduced_kind() != UnreducedKind::Sum)
    os.reset();
  auto sum_axes = [&](const Array& a) {
    return bind1(std::make_shared<Reduce>(ReduceKind::Sum, axes_, os), {a});
  };
  // No axes (a rank-0 operand, or axis=[]): the identity, whose tangent is t. A sum over
  // no axes says so with a transposable primitive (rebinding max/min/prod has no
  // transpose, so vjp refused).
  if (axes_.empty()) return {sum_axes(ad::instantiate(t, x.type(), x))};
  if (kind_ == ReduceKind::Max || kind_ == ReduceKind::Min) {
    // lax's _reduce_chooser_jvp_rule: every location of the extremum shares the tangent.
    // y is compared with x laid out as x on the kept dims (an out_sharding may have put
    // it elsewhere, or left it unreduced), so the comparison is legally sharded.
    Array full_y = y;
    const AbstractMesh& mesh = y.type().sharding.mesh();
    if (!mesh.empty()) {
      std::vector<PartitionEntry> xe = entries_of(x.type()), ye;
      for (int d = 0; d < x.ndim(); ++d)
        if (std::find(axes_.begin(), axes_.end(), d) == axes_.end()) ye.push_back(xe[d]);
      NamedSharding want(mesh, spec_of(ye));
      if (!unreduced_of(y.type()).empty() || entries_of(y.type()) != ye)
        full_y = bind1(std::make_shared<Reshard>(want, std::nullopt), {y});
    }
    Shape kept = x.shape();
    for (int a : axes_) kept[a] = 1;
    Array ind = astype(equal(x, reshape(full_y, kept)), t.dtype());
    return {sum_axes(t * ind) / sum_axes(ind)};
  }
  if (kind_ == ReduceKind::Prod) {
    // An empty operand: the products are constant 1 (and rows_last's reshape of the
    // size-0 dims can be refused by reshape's rule).
    if (x.size() == 0) return {Array()};
    // d prod = sum_j t_j * prod_{k != j} x_k, the products excluding j as a left times a
    // right exclusive running product (exact with zeros, unlike prod / x_j).
    Array xr = rows_last(x, axes_), tr = rows_last(t, axes_);
    int last = xr.ndim() - 1;
    std::vector<std::tuple<int64_t, int64_t, int64_t>> lo(static_cast<size_t>(xr.ndim())), hi = lo;
    lo[last] = {1, -1, 0};
    hi[last] = {-1, 1, 0};
    Array left = cumprod(pad(xr, 1.0, lo), last);
    Array right = cumprod(pad(xr, 1.0, hi), last, {.reverse = true});
    return {sum(tr * (left * right), last)};
  }
  return {Array()};
}

std::vector<Array> Reduce::transpose(const std::vector<Array>& cts,
                                     const std::vector<LinearIn>& ins) const {
  if (kind_ != ReduceKind::Sum) return Primitive::transpose(cts, ins);
  const ArrayType& x = ins[0].type;
  std::vector<int> dims;
  for (int d = 0; d < x.ndim(); ++d)
    if (std::find(axes_.begin(), axes_.end(), d) == axes_.end()) dims.push_back(d);
  ArrayType want = ct_type(x);
  want.dtype = cts[0].dtype();
  return {ad::broadcast_to_type(cts[0], want, dims)};
}

// ---- Batching rules (vmap): the batch at 0, the reduced axis numbers shifted past it.

detail::Batched Reduce::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_unary_front(
      std::make_shared<Reduce>(kind_, detail::shifted(axes_),
                               detail::batched_sharding(out_sharding_, 0, name())),
      args[0], dims[0]);
}
detail::Batched ArgReduce::batch(const std::vector<Array>& args,
                                 const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<ArgReduce>(max_, axis_ + 1, index_dtype_),
                                   args[0], dims[0]);
}

}  // namespace tsr::prim
