// partial_eval: splits a Program into the part computable from the known inputs
// and the part that needs the unknown ones (linearize = jvp + partial_eval). Known
// values the unknown part reads become residuals. A checkpointed equation saves
// only its inputs: the unknown part recomputes what it needs (remat).
#include <algorithm>
#include <set>
#include <unordered_set>

#include "tsr/core/primitive.h"
#include "tsr/error.h"
#include "tsr/prims/ad_prims.h"
#include "tsr/transforms/ad.h"

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

}  // namespace

std::vector<bool> unknown_outputs(const Program& p, const std::vector<bool>& unknown_ins) {
  std::unordered_set<const Var*> unknown;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (unknown_ins[i]) unknown.insert(p.in_vars[i].get());
  for (const Eqn& e : p.eqns) {
    std::vector<bool> flags = unknown_flags(e, unknown);
    bool any = std::find(flags.begin(), flags.end(), true) != flags.end();
    bool all = std::find(flags.begin(), flags.end(), false) == flags.end();
    if (!any) continue;
    // As partial_eval splits: a checkpoint with every input unknown is unknown whole.
    const auto* ck = dynamic_cast<const prim::Checkpoint*>(e.prim.get());
    std::vector<bool> out = ck && !all ? unknown_outputs(ck->program(), flags)
                                       : std::vector<bool>(e.outs.size(), true);
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
    const auto* ck = dynamic_cast<const prim::Checkpoint*>(e.prim.get());
    if (!ck || all) {
      unknown_eqns.push_back(e);
      for (const auto& v : e.outs) unknown.insert(v.get());
      continue;
    }
    // Remat: the known side computes the known outputs from the known inputs; the
    // unknown side takes every input (the known ones as residuals) and recomputes.
    const Program& sub = ck->program();
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
      ke.prim = ck->with_program(known_outputs_program(sub, flags, out_unknown));
      known_eqns.push_back(std::move(ke));
    }
    ue.ins = e.ins;
    ue.prim = ck->with_program(restrict(sub, sub.in_vars, u_out));
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
