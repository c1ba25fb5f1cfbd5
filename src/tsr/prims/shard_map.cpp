#include "tsr/prims/shard_map.h"

#include <algorithm>
#include <set>

#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered = register_primitive("shard_map") && declare_ad("shard_map", AdKind::Linear);

// The product of the sizes of a spec entry's axes.
int64_t entry_prod(const PartitionEntry& e, const AbstractMesh& m) {
  int64_t p = 1;
  for (const auto& a : e.axes()) p *= m.axis_size(a);
  return p;
}
}  // namespace

std::vector<ArrayType> ShardMap::infer(const std::vector<ArrayType>& in) const {
  const AbstractMesh& am = mesh_.abstract_mesh();
  std::vector<ArrayType> want = body_->in_types();
  if (in.size() != want.size())
    throw TypeError("[shard_map] the call has " + std::to_string(in.size()) +
                    " inputs. Got that; expected " + std::to_string(want.size()) + ".");
  std::vector<ArrayType> out;
  std::vector<ArrayType> body_out = body_->out_types();
  for (size_t j = 0; j < body_out.size(); ++j) {
    const ArrayType& b = body_out[j];
    const PartitionSpec& s = out_specs_[j];
    Shape shape = b.shape;
    std::vector<PartitionEntry> e = s.normalized(b.ndim()).entries();
    for (int d = 0; d < b.ndim(); ++d) shape[d] *= entry_prod(e[d], am);
    ArrayType t;
    t.shape = shape;
    t.dtype = b.dtype;
    t.weak = b.weak;
    t.sharding = type_sharding(NamedSharding(am, outer_spec(s, b)), shape);
    // Nested: what the enclosing body sees varies over its manual axes the block does.
    for (const auto& a : b.vma)
      if (am.axis_type(a) == AxisType::Manual) t.vma.insert(a);
    out.push_back(t);
  }
  return out;
}

PartitionSpec ShardMap::outer_spec(const PartitionSpec& spec, const ArrayType& block) {
  std::vector<PartitionEntry> e = spec.normalized(block.ndim()).entries();
  std::vector<PartitionEntry> own = block.sharding.spec().normalized(block.ndim()).entries();
  for (size_t d = 0; d < e.size(); ++d) {
    if (own[d].is_none()) continue;
    Axes a = e[d].axes();
    a.insert(a.end(), own[d].axes().begin(), own[d].axes().end());
    e[d] = PartitionEntry(a);
  }
  return PartitionSpec(e);
}

bool ShardMap::equals(const Primitive& o) const {
  if (this == &o) return true;
  const auto* s = dynamic_cast<const ShardMap*>(&o);
  return s && mesh_ == s->mesh_ && manual_ == s->manual_ && in_specs_ == s->in_specs_ &&
         out_specs_ == s->out_specs_ && check_vma_ == s->check_vma_ && fn_ == s->fn_ &&
         same_program(*body_, *s->body_);
}

std::string ShardMap::params() const {
  std::string s = "name=" + fn_ + " mesh=" + mesh_.abstract_mesh().str() + " in_specs=(";
  for (size_t i = 0; i < in_specs_.size(); ++i) s += (i ? ", " : "") + in_specs_[i].repr();
  s += ") out_specs=(";
  for (size_t i = 0; i < out_specs_.size(); ++i) s += (i ? ", " : "") + out_specs_[i].repr();
  return s + ") manual_axes=" + axis_names_tuple(manual_) +
         " check_vma=" + (check_vma_ ? "True" : "False");
}

AbstractMesh ShardMap::inner_mesh() const {
  std::vector<std::pair<std::string, AxisType>> u;
  for (const auto& a : manual_) u.emplace_back(a, AxisType::Manual);
  return mesh_.abstract_mesh().update_axis_types(u);
}

Program ShardMap::trace_body(const FlatFn& fn, const std::vector<ArrayType>& in,
                             std::vector<Array>& consts) const {
  const AbstractMesh inner = inner_mesh();
  AbstractMeshScope scope(inner);
  CheckVmaScope vma_scope(check_vma_);
  Program p = trace_program(fn, in, [&](const ArrayType& t) {
    // A captured array is an invariant block, as in shard_map itself (nested: it keeps
    // what it varies over in the enclosing body); its spec normalised, as every type's.
    ArrayType b = t;
    b.sharding = type_sharding(NamedSharding(inner, PartitionSpec()), b.shape);
    return b;
  });
  consts = p.consts;
  return lift_consts(p);
}

std::vector<Array> ShardMap::call(Program body, const std::vector<Array>& consts,
                                  const std::vector<Array>& args,
                                  std::vector<PartitionSpec> in_specs,
                                  std::vector<PartitionSpec> out_specs) const {
  std::vector<Array> all;
  std::vector<PartitionSpec> specs;
  for (const auto& k : consts) {
    NamedSharding rep(mesh_, PartitionSpec());
    all.push_back(k.type().sharding.mesh().empty() ? device_put(k, rep) : k);  // as shard_map's
    specs.push_back(PartitionSpec().normalized(k.ndim()));
  }
  all.insert(all.end(), args.begin(), args.end());
  specs.insert(specs.end(), in_specs.begin(), in_specs.end());
  auto p =
      std::make_shared<ShardMap>(std::make_shared<const Program>(std::move(body)), mesh_, manual_,
                                 std::move(specs), std::move(out_specs), check_vma_, fn_);
  return detail::bind(p, all);
}

PrimPtr ShardMap::with_split_body(Program body, const std::vector<bool>& ins,
                                  const std::vector<bool>& outs) const {
  std::vector<PartitionSpec> is, os;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i]) is.push_back(in_specs_[i]);
  for (size_t j = 0; j < outs.size(); ++j)
    if (outs[j]) os.push_back(out_specs_[j]);
  return std::make_shared<ShardMap>(std::make_shared<const Program>(std::move(body)), mesh_,
                                    manual_, std::move(is), std::move(os), check_vma_, fn_);
}

ShardMap::Split ShardMap::split_residuals(const std::vector<bool>& unknown_ins) const {
  const Program& b = *body_;
  Split sp;
  sp.unknown_outs = unknown_outputs(b, unknown_ins);
  PartialEval pe = partial_eval(b, unknown_ins, sp.unknown_outs);
  sp.num_res = pe.num_res;
  const AbstractMesh& am = mesh_.abstract_mesh();
  // Residual r: block type t -> [1, *t.shape] in the body, spec P(axes) outside, so
  // each device's residual is its own slice of the stacked global value. A residual
  // that is a known input of the body is that input, passed again with its spec.
  size_t nk = pe.known.out_vars.size() - pe.num_res;
  std::vector<ArrayType> res_t;
  std::vector<PartitionSpec> res_specs, stacked_specs;
  sp.res_input.assign(pe.num_res, -1);
  for (size_t r = 0; r < pe.num_res; ++r) {
    const Var* v = pe.known.out_vars[nk + r].get();
    for (size_t i = 0; i < b.in_vars.size(); ++i)
      if (!unknown_ins[i] && b.in_vars[i].get() == v) sp.res_input[r] = static_cast<int>(i);
    if (sp.res_input[r] >= 0) {
      res_t.push_back(v->type);
      res_specs.push_back(in_specs_[static_cast<size_t>(sp.res_input[r])]);
      continue;
    }
    ArrayType t = v->type;
    Axes axes;
    for (const auto& a : am.axis_names())
      if (std::find(manual_.begin(), manual_.end(), a) != manual_.end() &&
          (!check_vma_ || t.vma.count(a)))
        axes.push_back(a);
    std::vector<PartitionEntry> e(static_cast<size_t>(t.ndim()) + 1);
    e[0] = PartitionEntry(axes);
    res_specs.push_back(PartitionSpec(e));
    stacked_specs.push_back(res_specs.back());
    t.shape.insert(t.shape.begin(), 1);
    if (!t.sharding.mesh().empty()) {  // the block's own sharding (partial manual) shifts
      std::vector<PartitionEntry> own = t.sharding.spec().normalized(t.ndim() - 1).entries();
      own.insert(own.begin(), PartitionEntry());
      t.sharding = NamedSharding(t.sharding.mesh(), with_sets_of(own, t.sharding.spec()));
    }
    res_t.push_back(t);
  }
  std::vector<ArrayType> known_in, unknown_in = res_t;
  std::vector<PartitionSpec> k_in, k_out, u_in = res_specs, u_out;
  for (size_t i = 0; i < unknown_ins.size(); ++i) {
    (unknown_ins[i] ? unknown_in : known_in).push_back(b.in_vars[i]->type);
    (unknown_ins[i] ? u_in : k_in).push_back(in_specs_[i]);
  }
  for (size_t j = 0; j < sp.unknown_outs.size(); ++j)
    (sp.unknown_outs[j] ? u_out : k_out).push_back(out_specs_[j]);
  k_out.insert(k_out.end(), stacked_specs.begin(), stacked_specs.end());
  std::vector<Array> kc, uc;
  Program kb = trace_body(
      [&](const std::vector<Array>& a) {
        std::vector<Array> o = eval_program(pe.known, a);
        std::vector<Array> r(o.begin(), o.begin() + static_cast<long>(nk));
        for (size_t k = 0; k < pe.num_res; ++k)
          if (sp.res_input[k] < 0) r.push_back(reshape(o[nk + k], res_t[k].shape));
        return r;
      },
      known_in, kc);
  Program ub = trace_body(
      [&](const std::vector<Array>& a) {
        std::vector<Array> in = a;
        for (size_t r = 0; r < pe.num_res; ++r) {
          if (sp.res_input[r] >= 0) continue;
          Shape s(res_t[r].shape.begin() + 1, res_t[r].shape.end());
          in[r] = reshape(a[r], s);
        }
        return eval_program(pe.unknown, in);
      },
      unknown_in, uc);
  if (!kc.empty() || !uc.empty())
    throw TypeError(
        "[partial_eval] a split shard_map body captured arrays. Got captured constants; "
        "expected none (the body's are inputs). This is a bug in Tessera: please report it.");
  sp.known = std::make_shared<ShardMap>(std::make_shared<const Program>(std::move(kb)), mesh_,
                                        manual_, k_in, k_out, check_vma_, fn_);
  sp.unknown = std::make_shared<ShardMap>(std::make_shared<const Program>(std::move(ub)), mesh_,
                                          manual_, u_in, u_out, check_vma_, fn_);
  return sp;
}

// ---- autodiff rules (manual-spmd §5) ---------------------------------------------------

// One shard_map over primals and the non-zero tangents (§5.2); its body is the body's
// jvp, traced in the body's context so that zeros and collectives get their vma.
std::vector<Array> ShardMap::jvp(const std::vector<Array>& primals,
                                 const std::vector<Array>& tangents,
                                 std::vector<Array>& outs) const {
  const Program& b = *body_;
  const size_t n = primals.size(), m = b.out_vars.size();
  std::vector<bool> with_t;
  std::vector<Array> args = primals;
  std::vector<ArrayType> in_t = b.in_types();
  std::vector<PartitionSpec> in_sp = in_specs_, out_sp = out_specs_;
  for (size_t i = 0; i < n; ++i) {
    with_t.push_back(tangents[i].valid());
    if (!tangents[i].valid()) continue;
    args.push_back(tangents[i]);
    in_t.push_back(b.in_vars[i]->type);
    in_sp.push_back(in_specs_[i]);
  }
  for (size_t j = 0; j < m; ++j)
    if (has_tangent_space(b.out_vars[j]->type.dtype)) out_sp.push_back(out_specs_[j]);
  std::vector<Array> consts;
  Program jp = trace_body(
      [&](const std::vector<Array>& a) {
        std::vector<Array> ps(a.begin(), a.begin() + static_cast<long>(n)), ts(n), os, tos;
        for (size_t i = 0, k = n; i < n; ++i)
          if (with_t[i]) ts[i] = a[k++];
        jvp_eval(b, ps, ts, os, tos);
        std::vector<Array> r = os;
        for (size_t j = 0; j < m; ++j)
          if (has_tangent_space(os[j].dtype()))
            r.push_back(ad::instantiate(tos[j], os[j].type(), os[j]));
        return r;
      },
      in_t, consts);
  // Tangent outputs that read no tangent are zeros: symbolic ones outside, as for any
  // other primitive (what follows need not differentiate them).
  std::vector<bool> is_tangent(jp.in_vars.size(), false);
  for (size_t i = consts.size() + n; i < is_tangent.size(); ++i) is_tangent[i] = true;
  std::vector<bool> reads = unknown_outputs(jp, is_tangent);
  std::vector<Array> r = call(std::move(jp), consts, args, in_sp, out_sp);
  outs.assign(r.begin(), r.begin() + static_cast<long>(m));
  std::vector<Array> touts(m);
  for (size_t j = 0, k = m; j < m; ++j)
    if (has_tangent_space(outs[j].dtype())) {
      if (reads[k]) touts[j] = r[k];
      ++k;
    }
  return touts;
}

// A new shard_map whose body is the body's backward pass (§5.4): inputs the known
// inputs and the non-zero output cotangents, outputs the linear inputs' cotangents
// laid out as those inputs. Without check_vma the types say nothing about replication,
// so the rescaling is defensive: an output cotangent is divided by the number of
// copies of its block, an input cotangent summed over the axes it was replicated on.
std::vector<Array> ShardMap::transpose(const std::vector<Array>& cts,
                                       const std::vector<LinearIn>& ins) const {
  const Program& b = *body_;
  const AbstractMesh& am = mesh_.abstract_mesh();
  auto unnamed = [&](const PartitionSpec& p) {
    std::set<std::string> named;
    for (const auto& e : p.entries())
      for (const auto& a : e.axes()) named.insert(a);
    std::vector<std::string> r;  // in mesh order
    for (const auto& a : am.axis_names())
      if (!named.count(a) && std::find(manual_.begin(), manual_.end(), a) != manual_.end())
        r.push_back(a);
    return r;
  };
  std::vector<Array> args;
  std::vector<ArrayType> in_t;
  std::vector<PartitionSpec> in_sp, out_sp;
  std::vector<bool> grads(ins.size(), false);  // linear float inputs: get a cotangent
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].linear()) {
      grads[i] = has_tangent_space(b.in_vars[i]->type.dtype);
      if (grads[i]) out_sp.push_back(in_specs_[i]);
      continue;
    }
    args.push_back(ins[i].value);
    in_t.push_back(b.in_vars[i]->type);
    in_sp.push_back(in_specs_[i]);
  }
  for (size_t j = 0; j < cts.size(); ++j) {
    if (!cts[j].valid()) continue;
    args.push_back(cts[j]);
    in_t.push_back(ct_type(b.out_vars[j]->type));
    in_sp.push_back(out_specs_[j]);
  }
  std::vector<Array> out(ins.size());
  if (out_sp.empty()) return out;
  std::vector<Array> consts;
  Program tp = trace_body(
      [&](const std::vector<Array>& a) {
        std::vector<Array> bargs(ins.size()), bcts(cts.size());
        size_t k = 0;
        for (size_t i = 0; i < ins.size(); ++i)
          if (!ins[i].linear()) bargs[i] = a[k++];
        for (size_t j = 0; j < cts.size(); ++j) {
          if (!cts[j].valid()) continue;
          bcts[j] = a[k++];
          if (check_vma_) continue;
          int64_t copies = 1;
          for (const auto& ax : unnamed(out_specs_[j])) copies *= am.axis_size(ax);
          if (copies > 1) bcts[j] = bcts[j] / static_cast<double>(copies);
        }
        std::vector<Array> got = backward_pass(b, bargs, bcts, "grad");
        Array like = ad::first_valid(a);
        std::vector<Array> r;
        for (size_t i = 0; i < ins.size(); ++i) {
          if (!grads[i]) continue;
          Array g = ad::instantiate(got[i], ct_type(b.in_vars[i]->type), like);
          std::vector<std::string> over = unnamed(in_specs_[i]);
          if (!check_vma_ && !over.empty())
            g = bind1(
                std::make_shared<Collective>(Collective::Kind::Psum, over, ReduceOp::Sum, false),
                {g});
          r.push_back(g);
        }
        return r;
      },
      in_t, consts);
  std::vector<Array> r = call(std::move(tp), consts, args, in_sp, out_sp);
  for (size_t i = 0, k = 0; i < ins.size(); ++i)
    if (grads[i]) out[i] = r[k++];
  return out;
}

// ---- batching rule (manual-spmd §6.3) ---------------------------------------------------

namespace {
// True when an equation of p (or of a sub-program) is a collective over axis n.
bool program_uses(const Program& p, const std::string& n) {
  for (const auto& e : p.eqns) {
    if (e.prim->uses_axis_name(n)) return true;
    if (const Program* s = e.prim->subprogram(); s && program_uses(*s, n)) return true;
  }
  return false;
}
}  // namespace

bool ShardMap::uses_axis_name(const std::string& n) const { return program_uses(*body_, n); }

// vmap of shard_map: one shard_map whose body is the body batched. The batch dimension
// enters the specs unsplit (None), or split over the mesh axes the batch is laid out on
// (spmd_axis_name, or arguments sharded along it); then each device's body batches its
// share of the examples, and those axes may not appear in the specs or be reduced over.
detail::Batched ShardMap::batch(const std::vector<Array>& args,
                                const std::vector<int>& dims) const {
  const BatchAxis& ba = batch_axis();
  const AbstractMesh& am = mesh_.abstract_mesh();
  const Axes bax = ba.entry.is_none() ? ba.spmd_axes : ba.entry.axes();
  const std::string what =
      ba.spmd_axes.empty() ? "vmapped away explicit mesh axis" : "vmap spmd_axis_name";
  int64_t k = 1;
  for (const auto& a : bax) {
    if (std::find(manual_.begin(), manual_.end(), a) == manual_.end())
      throw ValueError("[shard_map] " + what + " '" + a +
                       "' is not a manual axis of this shard_map. Got the batch laid out over " +
                       axis_names_tuple(bax) + " and manual axes " + axis_names_tuple(manual_) +
                       "; expected manual axes of the shard_map's mesh " + am.str() +
                       ". Lay the batch out on that mesh, or drop spmd_axis_name.");
    k *= am.axis_size(a);
  }
  auto check = [&](const std::vector<PartitionSpec>& specs, const char* which) {
    for (const auto& sp : specs)
      for (const auto& a : sp.partition_axes())
        if (std::find(bax.begin(), bax.end(), a) != bax.end())
          throw ValueError("[shard_map] " + what + " cannot appear in shard_map " + which +
                           ". Got " + which + " entry " + sp.repr() + " naming '" + a +
                           "', which the vmap lays the batch out over; expected specs "
                           "without it. Use another mesh axis for the batch, or drop "
                           "spmd_axis_name.");
  };
  check(in_specs_, "in_specs");
  check(out_specs_, "out_specs");
  for (const auto& a : bax)
    if (program_uses(*body_, a))
      throw ValueError("[shard_map] the body has a collective over '" + a + "', the " + what +
                       ". Got a collective over the axis the batch is split over; expected "
                       "collectives over other axes (each device holds different examples "
                       "along it). Use another mesh axis for the batch.");
  if (k > 1 && !ba.name.empty() && program_uses(*body_, ba.name))
    throw NotImplementedError(
        "[shard_map] a collective over the vmap axis_name '" + ba.name +
        "' inside a shard_map whose batch is split over " + axis_names_tuple(bax) +
        " is not implemented. Got both; expected one. Drop spmd_axis_name, or reduce over "
        "the batch outside the shard_map.");
  // Specs with the batch entry inserted where the batch is.
  auto with_batch = [&](const PartitionSpec& sp, int ndim, int d) {
    std::vector<PartitionEntry> e = sp.normalized(ndim).entries();
    e.insert(e.begin() + d, PartitionEntry(bax));
    return PartitionSpec(e);
  };
  const Program& b = *body_;
  std::vector<PartitionSpec> in_sp = in_specs_, out_sp;
  for (size_t i = 0; i < args.size(); ++i)
    if (dims[i] >= 0) in_sp[i] = with_batch(in_specs_[i], b.in_vars[i]->type.ndim(), dims[i]);
  for (size_t j = 0; j < out_specs_.size(); ++j)
    out_sp.push_back(with_batch(out_specs_[j], b.out_vars[j]->type.ndim(), 0));
  // Each device batches ba.size / k examples, unsplit inside its block.
  BatchAxisScope inner({ba.size / k, PartitionEntry(), AbstractMesh(), ba.name, {}});
  std::vector<ArrayType> in_t;
  for (size_t i = 0; i < args.size(); ++i) {
    in_t.push_back(dims[i] >= 0 ? batched_type(b.in_vars[i]->type, dims[i]) : b.in_vars[i]->type);
    // Devices along the batch axes hold different examples: the block varies over them.
    if (dims[i] >= 0 && check_vma_) in_t.back().vma.insert(bax.begin(), bax.end());
  }
  std::vector<Array> consts;
  Program bp = trace_body(
      [&](const std::vector<Array>& a) {
        BatchResult r = batch_eval(b, a, dims);
        for (size_t j = 0; j < r.outs.size(); ++j) r.outs[j] = batch_at_front(r.outs[j], r.dims[j]);
        return r.outs;
      },
      in_t, consts);
  std::vector<Array> outs = call(std::move(bp), consts, args, std::move(in_sp), std::move(out_sp));
  return {outs, std::vector<int>(outs.size(), 0)};
}

}  // namespace tsr::prim
