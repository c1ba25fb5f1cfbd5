// partial_eval: splits a Program into the part computable from the known inputs
// and the part that needs the unknown ones (linearize = jvp + partial_eval). Known
// values the unknown part reads become residuals. A checkpoint equation saves only its
// inputs: the unknown part recomputes what it needs (remat); a shard_map is split in
// two with the body's residuals passed between them.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "tsr/core/primitive.h"
#include "tsr/error.h"
#include "tsr/prims/ad_prims.h"
#include "tsr/prims/shard_map.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/split.h"

namespace tsr::detail {

namespace {

// p with other inputs and outputs (the equations are shared), then dce'd.
Program restrict(const Program& p, std::vector<VarPtr> ins, std::vector<VarPtr> outs) {
  Program q = p;
  q.in_vars = std::move(ins);
  q.out_vars = std::move(outs);
  return dce(q);
}

// Which of e's inputs are unknown.
std::vector<bool> unknown_flags(const Eqn& e, const std::unordered_set<const Var*>& unknown) {
  std::vector<bool> flags;
  for (const auto& v : e.ins) flags.push_back(unknown.count(v.get()) > 0);
  return flags;
}

// shard_map's split (manual-spmd §5.3), or control flow's: false for the others.
bool split_with_residuals(const Primitive& p, const std::vector<bool>& flags, EqnSplit& out) {
  if (split_control(p, flags, out)) return true;
  const auto* sm = dynamic_cast<const prim::ShardMap*>(&p);
  if (!sm) return false;
  prim::ShardMap::Split sp = sm->split_residuals(flags);
  out.known = sp.known;
  out.unknown = sp.unknown;
  out.unknown_outs = sp.unknown_outs;
  // A residual that is a known input is passed as that input; the others are returned.
  for (size_t r = 0; r < sp.num_res; ++r)
    out.unknown_ins.push_back(sp.res_input[r] >= 0 ? sp.res_input[r]
                                                   : -static_cast<int>(out.num_res++) - 1);
  for (size_t i = 0; i < flags.size(); ++i)
    if (flags[i]) out.unknown_ins.push_back(static_cast<int>(i));
  return true;
}

}  // namespace

// A free function over the two primitives rather than a virtual on Primitive: the
// set is closed (remat and shard_map) and the base class stays unchanged.
const Program* split_body(const Primitive& p) {
  if (const auto* ck = dynamic_cast<const prim::Checkpoint*>(&p)) return &ck->program();
  if (const auto* sm = dynamic_cast<const prim::ShardMap*>(&p)) return &sm->body();
  return nullptr;
}

PrimPtr with_split_body(const Primitive& p, Program body, const std::vector<bool>& ins,
                        const std::vector<bool>& outs) {
  if (const auto* ck = dynamic_cast<const prim::Checkpoint*>(&p))
    return ck->with_program(std::move(body));
  if (const auto* sm = dynamic_cast<const prim::ShardMap*>(&p))
    return sm->with_split_body(std::move(body), ins, outs);
  throw TypeError(std::string("[partial_eval] primitive '") + p.name() +
                  "' has no body to split. Got a first-order primitive; expected checkpoint or "
                  "shard_map. This is a bug in Tessera: please report it.");
}

std::vector<bool> unknown_outputs(const Program& p, const std::vector<bool>& unknown_ins) {
  std::unordered_set<const Var*> unknown;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (unknown_ins[i]) unknown.insert(p.in_vars[i].get());
  for (const Eqn& e : p.eqns) {
    std::vector<bool> flags = unknown_flags(e, unknown);
    bool any = std::find(flags.begin(), flags.end(), true) != flags.end();
    bool all = std::find(flags.begin(), flags.end(), false) == flags.end();
    if (!any) continue;
    std::vector<bool> cf;
    if (!all && control_unknown_outs(*e.prim, flags, cf)) {
      for (size_t j = 0; j < e.outs.size(); ++j)
        if (cf[j]) unknown.insert(e.outs[j].get());
      continue;
    }
    // As partial_eval splits: a checkpoint (shard_map) with every input unknown is
    // unknown whole.
    const Program* body = split_body(*e.prim);
    std::vector<bool> out =
        body && !all ? unknown_outputs(*body, flags) : std::vector<bool>(e.outs.size(), true);
    for (size_t j = 0; j < e.outs.size(); ++j)
      if (out[j]) unknown.insert(e.outs[j].get());
  }
  std::vector<bool> out;
  for (const auto& v : p.out_vars) out.push_back(unknown.count(v.get()) > 0);
  return out;
}

Program known_outputs_program(const Program& p, const std::vector<bool>& unknown_ins,
                              const std::vector<bool>& unknown_outs) {
  PartialEval pe = partial_eval(p, unknown_ins, unknown_outs);
  pe.known.out_vars.resize(pe.known.out_vars.size() - pe.num_res);
  return dce(pe.known);
}

PartialEval partial_eval(const Program& p, const std::vector<bool>& unknown_ins,
                         const std::vector<bool>& unknown_outs) {
  std::unordered_set<const Var*> unknown;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (unknown_ins.at(i)) unknown.insert(p.in_vars[i].get());
  std::vector<Eqn> known_eqns, unknown_eqns;
  for (const Eqn& e : p.eqns) {
    std::vector<bool> flags = unknown_flags(e, unknown);
    bool any = std::find(flags.begin(), flags.end(), true) != flags.end();
    bool all = std::find(flags.begin(), flags.end(), false) == flags.end();
    if (!any) {
      known_eqns.push_back(e);
      continue;
    }
    if (EqnSplit sp; !all && split_with_residuals(*e.prim, flags, sp)) {
      // shard_map and control flow: the known side runs the known part of the body and
      // saves residuals; the unknown side reads them (never redoing the known inputs'
      // primal work, or a shard_map body's collectives).
      Eqn ke, ue;
      ke.ctx = ue.ctx = e.ctx;
      std::vector<ArrayType> kt;
      if (sp.known_ins.empty())
        for (size_t i = 0; i < e.ins.size(); ++i)
          if (!flags[i]) sp.known_ins.push_back(static_cast<int>(i));
      for (int i : sp.known_ins) {
        ke.ins.push_back(e.ins[static_cast<size_t>(i)]);
        kt.push_back(e.ins[static_cast<size_t>(i)]->type);
      }
      for (size_t j = 0; j < e.outs.size(); ++j) {
        if (!sp.unknown_outs[j]) {
          ke.outs.push_back(e.outs[j]);
          continue;
        }
        ue.outs.push_back(e.outs[j]);
        unknown.insert(e.outs[j].get());
      }
      std::vector<ArrayType> ot = sp.known->infer(kt);
      std::vector<VarPtr> res;
      for (size_t r = 0; r < sp.num_res; ++r) {
        res.push_back(std::make_shared<Var>(Var{ot.at(ke.outs.size())}));
        ke.outs.push_back(res.back());
      }
      for (int k : sp.unknown_ins)
        ue.ins.push_back(k >= 0 ? e.ins[static_cast<size_t>(k)] : res[static_cast<size_t>(-k - 1)]);
      ke.prim = sp.known;
      ue.prim = sp.unknown;
      if (!ke.outs.empty()) known_eqns.push_back(std::move(ke));
      unknown_eqns.push_back(std::move(ue));
      continue;
    }
    const Program* body = split_body(*e.prim);
    if (!body || all) {
      unknown_eqns.push_back(e);
      for (const auto& v : e.outs) unknown.insert(v.get());
      continue;
    }
    // Remat: the known side computes the known outputs from the known inputs; the
    // unknown side takes every input (the known ones as residuals) and recomputes.
    const Program& sub = *body;
    std::vector<bool> out_unknown = unknown_outputs(sub, flags);
    std::vector<VarPtr> u_out;
    Eqn ke, ue;
    for (size_t i = 0; i < e.ins.size(); ++i)
      if (!flags[i]) ke.ins.push_back(e.ins[i]);
    for (size_t j = 0; j < e.outs.size(); ++j) {
      if (out_unknown[j]) {
        u_out.push_back(sub.out_vars[j]);
        ue.outs.push_back(e.outs[j]);
        unknown.insert(e.outs[j].get());
      } else {
        ke.outs.push_back(e.outs[j]);
      }
    }
    if (!ke.outs.empty()) {
      // The known outputs from the known inputs: a split of the sub-program itself (a
      // nested checkpoint may read unknown inputs for its other outputs).
      std::vector<bool> known_ins(flags.size()), known_outs(out_unknown.size());
      for (size_t i = 0; i < flags.size(); ++i) known_ins[i] = !flags[i];
      for (size_t j = 0; j < out_unknown.size(); ++j) known_outs[j] = !out_unknown[j];
      ke.prim = with_split_body(*e.prim, known_outputs_program(sub, flags, out_unknown), known_ins,
                                known_outs);
      known_eqns.push_back(std::move(ke));
    }
    ue.ins = e.ins;
    ue.prim = with_split_body(*e.prim, restrict(sub, sub.in_vars, u_out),
                              std::vector<bool>(e.ins.size(), true), out_unknown);
    unknown_eqns.push_back(std::move(ue));
  }

  // Only live unknown equations count, so a dead one saves no residual.
  {
    Program live;
    live.eqns = std::move(unknown_eqns);
    for (size_t j = 0; j < p.out_vars.size(); ++j)
      if (unknown_outs.at(j)) live.out_vars.push_back(p.out_vars[j]);
    unknown_eqns = dce(live).eqns;
  }
  // Residuals: known (non-const) values the unknown side reads, in first-use order.
  std::set<const Var*> consts;
  for (const auto& v : p.const_vars) consts.insert(v.get());
  std::vector<VarPtr> res;
  std::unordered_set<const Var*> seen;
  std::set<const Var*> used_consts;
  auto need = [&](const VarPtr& v) {
    if (unknown.count(v.get())) return;
    if (consts.count(v.get())) {
      used_consts.insert(v.get());
      return;
    }
    if (seen.insert(v.get()).second) res.push_back(v);
  };
  for (const Eqn& e : unknown_eqns)
    for (const auto& v : e.ins) need(v);
  for (size_t j = 0; j < p.out_vars.size(); ++j)
    if (unknown_outs.at(j)) need(p.out_vars[j]);

  PartialEval r;
  r.num_res = res.size();
  r.known.const_vars = p.const_vars;
  r.known.consts = p.consts;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (!unknown_ins[i]) r.known.in_vars.push_back(p.in_vars[i]);
  r.known.eqns = std::move(known_eqns);
  for (size_t j = 0; j < p.out_vars.size(); ++j)
    if (!unknown_outs[j]) {
      if (unknown.count(p.out_vars[j].get()))
        throw TypeError(
            "[partial_eval] an output asked for on the known side depends on unknown inputs. "
            "Got output " +
            std::to_string(j) + " of type " + p.out_vars[j]->type.str() +
            "; expected it to be computable from the known inputs. This is a bug in Tessera: "
            "please report it.");
      r.known.out_vars.push_back(p.out_vars[j]);
    }
  r.known.out_vars.insert(r.known.out_vars.end(), res.begin(), res.end());
  r.known = dce(r.known);

  for (size_t i = 0; i < p.const_vars.size(); ++i)
    if (used_consts.count(p.const_vars[i].get())) {
      r.unknown.const_vars.push_back(p.const_vars[i]);
      r.unknown.consts.push_back(p.consts[i]);
    }
  r.unknown.in_vars = res;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (unknown_ins[i]) r.unknown.in_vars.push_back(p.in_vars[i]);
  r.unknown.eqns = std::move(unknown_eqns);
  for (size_t j = 0; j < p.out_vars.size(); ++j)
    if (unknown_outs[j]) r.unknown.out_vars.push_back(p.out_vars[j]);
  return r;
}

}  // namespace tsr::detail
