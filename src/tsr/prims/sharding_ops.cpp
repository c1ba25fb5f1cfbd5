#include "tsr/prims/sharding_ops.h"

#include <set>

#include "tsr/prims/common.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("reshard") && register_primitive("jit") &&
    declare_ad("reshard", AdKind::Linear) && declare_ad("jit", AdKind::Differentiable) &&
    register_primitive("sharding_constraint") && declare_ad("sharding_constraint", AdKind::Linear);
}

void check_unreduced_move(const ArrayType& x, const NamedSharding& dst, const char* op) {
  const auto& us = x.sharding.spec().unreduced();
  const auto& ut = dst.spec().unreduced();
  std::string pre = std::string("[") + op + "] ";
  // Beyond JAX: new max/min-unreduced axes are allowed; every device of such an
  // axis holds the value itself (a max/min of copies is the value).
  if (!us.empty() && !ut.empty() &&
      x.sharding.spec().unreduced_kind() != dst.spec().unreduced_kind())
    throw ValueError(pre + "the unreduced kinds differ. Got input " + x.sharding.spec().repr() +
                     " and out_sharding " + dst.spec().repr() +
                     "; expected the same unreduced_kind. Reduce first with reshard(x, P(...)).");
}

std::vector<ArrayType> Reshard::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  check_unreduced_move(x, dst_, "reshard");
  ArrayType t = make_type(x.shape, x.dtype, x.weak, dst_);
  t.vma = x.vma;
  return {t};
}

std::string Reshard::params() const { return "dst_sharding=" + dst_.spec().repr(); }

// The eager cache keys on equals(): reshards to P() on two meshes (or on two
// device sets of one abstract mesh) must not share an executable.
bool Reshard::equals(const detail::Primitive& o) const {
  const auto* r = dynamic_cast<const Reshard*>(&o);
  return r && dst_.mesh() == r->dst_.mesh() && dst_.spec() == r->dst_.spec() &&
         mesh_.has_value() == r->mesh_.has_value() && (!mesh_ || *mesh_ == *r->mesh_);
}

size_t Reshard::hash() const { return Primitive::hash() * 31 + dst_.mesh().hash(); }

std::vector<ArrayType> ShardingConstraint::infer(const std::vector<ArrayType>& in) const {
  return {in.at(0)};
}

PartitionSpec ShardingConstraint::merged(const ArrayType& t, const PartitionSpec& free) const {
  const int rank = t.ndim();
  auto typed = entries_of(t);
  PartitionSpec f = free.normalized(rank);
  auto is_auto = [&](const std::string& a) {
    return mesh_.axis_index(a) >= 0 && mesh_.axis_type(a) == AxisType::Auto;
  };
  // Axes the constraint names stay where it puts them; a free dim keeps the others.
  std::set<std::string> named;
  for (const auto& e : spec_.entries())
    if (!e.is_unconstrained()) named.insert(e.axes().begin(), e.axes().end());
  std::vector<PartitionEntry> out;
  for (int d = 0; d < rank; ++d) {
    Axes axes = typed[d].axes();
    const bool open = d < spec_.size() && spec_.entries()[d].is_unconstrained();
    if (open) {
      for (const auto& a : f.entries()[d].axes())
        if (is_auto(a) && !named.count(a)) axes.push_back(a);
    } else if (d < spec_.size()) {
      for (const auto& a : spec_.entries()[d].axes())
        if (is_auto(a)) axes.push_back(a);
    }
    out.emplace_back(axes);
  }
  return with_sets_of(out, t.sharding.spec());
}

std::vector<Array> ShardingConstraint::jvp(const std::vector<Array>& primals,
                                           const std::vector<Array>& tangents,
                                           std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

// The cotangent meets the same constraint (JAX's _sharding_constraint_transpose).
std::vector<Array> ShardingConstraint::transpose(const std::vector<Array>& cts,
                                                 const std::vector<LinearIn>&) const {
  return {detail::bind1(std::make_shared<ShardingConstraint>(*this), {cts[0]})};
}

// The batch dimension is left to the pass (an UNCONSTRAINED entry there).
detail::Batched ShardingConstraint::batch(const std::vector<Array>& args,
                                          const std::vector<int>& dims) const {
  std::vector<PartitionEntry> e = spec_.entries();
  while (static_cast<int>(e.size()) < args[0].ndim() - 1) e.emplace_back();
  e.insert(e.begin() + std::min<int>(dims[0], static_cast<int>(e.size())),
           PartitionEntry(UNCONSTRAINED));
  auto p = std::make_shared<ShardingConstraint>(PartitionSpec(e), mesh_);
  return {{detail::bind1(p, args)}, {dims[0]}};
}

std::vector<ArrayType> JitCall::infer(const std::vector<ArrayType>& in) const {
  std::vector<ArrayType> want = prog_->in_types();
  if (want.size() != in.size())
    throw TypeError("[jit] the nested call has " + std::to_string(in.size()) + " inputs. Got " +
                    std::to_string(in.size()) + "; expected " + std::to_string(want.size()) + ".");
  std::vector<ArrayType> out = prog_->out_types();
  for (size_t i = 0; i < out.size() && i < out_.size(); ++i)
    if (out_[i]) {
      std::set<std::string> vma = out[i].vma;  // out_shardings place; they keep the vma
      out[i] = make_type(out[i].shape, out[i].dtype, out[i].weak, *out_[i]);
      out[i].vma = std::move(vma);
    }
  return out;
}

// ---- autodiff rules ----------------------------------------------------------------

std::vector<Array> Reshard::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

std::vector<Array> Reshard::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>&) const {
  // The pass reshards the cotangent back to the input's (cotangent) type.
  return {cts[0]};
}

// A nested jit differentiates through its program, inlined into the current trace
// (the enclosing jit, if any, compiles it as a whole).
std::vector<Array> JitCall::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents,
                                std::vector<Array>& outs) const {
  std::vector<Array> touts;
  jvp_eval(lift_consts(*prog_), primals, tangents, outs, touts);
  for (size_t i = 0; i < outs.size() && i < out_.size(); ++i)
    if (out_[i]) {
      ArrayType t = make_type(outs[i].shape(), outs[i].dtype(), outs[i].type().weak, *out_[i]);
      outs[i] = ad::coerce(outs[i], t, "jit", "value");
      if (touts[i].valid()) touts[i] = ad::coerce(touts[i], t, "jit", "tangent");
    }
  return touts;
}

std::vector<Array> JitCall::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>& ins) const {
  std::vector<Array> args;
  for (const auto& in : ins) args.push_back(in.value);
  return backward_pass(lift_consts(*prog_), args, cts, "linear_transpose");
}

// ---- batching rules ------------------------------------------------------------------

// The destination gets the batch entry at the batch dimension (spec §12.16).
detail::Batched Reshard::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  auto p = std::make_shared<Reshard>(*detail::batched_sharding(dst_, dims[0], name()), mesh_);
  return {{detail::bind1(p, args)}, {dims[0]}};
}

// A nested jit stays one call: of its program batched. Batching rules may make
// constants (ppermute's source indices): they are the batched call's first inputs.
detail::Batched JitCall::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<int> out_dims;
  Program bp = detail::batch_program(lift_consts(*prog_), dims, out_dims);
  std::vector<Array> ins = bp.consts;
  ins.insert(ins.end(), args.begin(), args.end());
  std::vector<std::optional<NamedSharding>> outs = out_;
  for (size_t i = 0; i < outs.size() && i < out_dims.size(); ++i)
    if (out_dims[i] >= 0) outs[i] = detail::batched_sharding(outs[i], out_dims[i], "jit");
  auto p = std::make_shared<JitCall>(std::make_shared<const Program>(std::move(bp)), fn_name_,
                                     std::move(outs));
  return {detail::bind(p, ins), out_dims};
}

}  // namespace tsr::prim
