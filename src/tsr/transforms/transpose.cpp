// transpose: the reverse sweep over a Program linear in some of its inputs (vjp =
// linearize + transpose). Cotangents accumulate per variable with symbolic zeros,
// so branches that receive none cost nothing; each is given exactly its variable's
// cotangent type (spec §9: unreduced <-> reduced), which is where the partitioner
// gets the reductions a sharded gradient needs.
#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/split.h"

namespace tsr::detail {

std::vector<Array> backward_pass(const Program& p, const std::vector<Array>& args,
                                 const std::vector<Array>& cts, const char* api) {
  std::unordered_map<const Var*, Array> env;
  std::unordered_set<const Var*> linear;
  for (size_t i = 0; i < p.const_vars.size(); ++i) env[p.const_vars[i].get()] = p.consts[i];
  for (size_t i = 0; i < p.in_vars.size(); ++i) {
    if (args.at(i).valid())
      env[p.in_vars[i].get()] = args[i];
    else
      linear.insert(p.in_vars[i].get());
  }
  // Forward: evaluate what does not depend on the linear inputs.
  std::vector<const Eqn*> lin;
  std::deque<Eqn> split_eqns;  // the unknown halves of split control flow (stable addresses)
  for (const Eqn& e : p.eqns) {
    EqnMeshScope ms(e);
    std::vector<bool> flags;
    bool any = false;
    for (const auto& v : e.ins) {
      flags.push_back(linear.count(v.get()) > 0);
      any = any || flags.back();
    }
    if (any) {
      // Control flow (the jvp of a cond or scan, recomputed inside a checkpoint's
      // transpose) whose outputs are partly primal: split as partial_eval splits it.
      // The known part runs forward (primal outputs and residuals); the unknown part,
      // linear in the linear inputs, is what gets transposed.
      std::vector<bool> cl;
      EqnSplit sp;
      if (control_unknown_outs(*e.prim, flags, cl) &&
          std::find(cl.begin(), cl.end(), false) != cl.end() && split_control(*e.prim, flags, sp)) {
        if (sp.known_ins.empty())
          for (size_t i = 0; i < e.ins.size(); ++i)
            if (!flags[i]) sp.known_ins.push_back(static_cast<int>(i));
        std::vector<Array> kin;
        for (int i : sp.known_ins) kin.push_back(env.at(e.ins[static_cast<size_t>(i)].get()));
        std::vector<Array> kout = detail::bind(sp.known, kin);
        size_t k = 0;
        for (size_t j = 0; j < e.outs.size(); ++j) {
          if (sp.unknown_outs[j])
            linear.insert(e.outs[j].get());
          else
            env[e.outs[j].get()] = kout.at(k++);
        }
        // A while's unknown part is the loop again: the equation itself is transposed
        // (which refuses reverse mode through a while, as without the checkpoint).
        if (!control_split_is_linear(*e.prim)) {
          lin.push_back(&e);
          continue;
        }
        Eqn& ue = split_eqns.emplace_back();
        ue.prim = sp.unknown;
        ue.ctx = e.ctx;
        for (size_t j = 0; j < e.outs.size(); ++j)
          if (sp.unknown_outs[j]) ue.outs.push_back(e.outs[j]);
        std::vector<VarPtr> res;
        for (size_t r = 0; r < sp.num_res; ++r, ++k) {
          res.push_back(std::make_shared<Var>(Var{kout.at(k).type()}));
          env[res.back().get()] = kout[k];
        }
        for (int i : sp.unknown_ins)
          ue.ins.push_back(i >= 0 ? e.ins[static_cast<size_t>(i)]
                                  : res[static_cast<size_t>(-i - 1)]);
        lin.push_back(&ue);
        continue;
      }
      lin.push_back(&e);
      std::vector<bool> out_lin(e.outs.size(), true);
      // A checkpoint or shard_map (e.g. the jvp of one) may have outputs that do not
      // read the linear inputs: they are evaluated forward, by the same primitive over
      // the part computing them, and only the others are transposed.
      if (const Program* body = split_body(*e.prim)) {
        out_lin = unknown_outputs(*body, flags);
        if (std::find(out_lin.begin(), out_lin.end(), false) != out_lin.end()) {
          std::vector<Array> ins;
          std::vector<bool> known_ins, known_outs;
          for (size_t i = 0; i < e.ins.size(); ++i) {
            known_ins.push_back(!flags[i]);
            if (!flags[i]) ins.push_back(env.at(e.ins[i].get()));
          }
          for (bool l : out_lin) known_outs.push_back(!l);
          std::vector<Array> outs =
              detail::bind(with_split_body(*e.prim, known_outputs_program(*body, flags, out_lin),
                                           known_ins, known_outs),
                           ins);
          for (size_t j = 0, k = 0; j < e.outs.size(); ++j)
            if (!out_lin[j]) env[e.outs[j].get()] = outs.at(k++);
        }
      }
      for (size_t j = 0; j < e.outs.size(); ++j)
        if (out_lin[j]) linear.insert(e.outs[j].get());
      continue;
    }
    std::vector<Array> ins;
    for (const auto& v : e.ins) ins.push_back(env.at(v.get()));
    std::vector<Array> outs = detail::bind(e.prim, ins);
    for (size_t j = 0; j < e.outs.size(); ++j) env[e.outs[j].get()] = outs[j];
  }
  // Backward: accumulate cotangents of linear values.
  std::unordered_map<const Var*, Array> ct;
  auto accum = [&](const VarPtr& v, const Array& c, const char* prim) {
    if (!c.valid() || !linear.count(v.get()) || !has_tangent_space(v->type.dtype)) return;
    EqnMeshScope ms(v->type.sharding.mesh());
    Array g = ad::coerce(c, ct_type(v->type), prim, "cotangent");
    auto it = ct.find(v.get());
    if (it == ct.end())
      ct.emplace(v.get(), g);
    else
      it->second = ad::add(it->second, g);
  };
  for (size_t j = 0; j < p.out_vars.size(); ++j) accum(p.out_vars[j], cts.at(j), "output");
  for (auto it = lin.rbegin(); it != lin.rend(); ++it) {
    const Eqn& e = **it;
    EqnMeshScope ms(e);
    std::vector<Array> out_ct;
    bool any = false;
    for (const auto& v : e.outs) {
      auto f = ct.find(v.get());
      out_ct.push_back(f == ct.end() ? Array() : f->second);
      if (f != ct.end()) ct.erase(f);
      any = any || out_ct.back().valid();
    }
    if (!any) continue;
    std::vector<LinearIn> ins;
    for (const auto& v : e.ins) {
      LinearIn in;
      in.type = v->type;
      if (!linear.count(v.get())) in.value = env.at(v.get());
      ins.push_back(std::move(in));
    }
    RuleLog::note("transpose", e.prim->name());
    std::vector<Array> in_ct;
    try {
      in_ct = e.prim->transpose(out_ct, ins);
    } catch (const NotImplementedError&) {
      throw TypeError(std::string("[") + api + "] the function is not linear in its inputs: " +
                      "primitive '" + e.prim->name() +
                      "' is applied to a value that depends on them and has no transpose rule. "
                      "Got a non-linear primitive on a linear value; expected only linear "
                      "operations (add, sub, neg, mul or div by a value that does not depend on "
                      "the inputs, dot with such a value, reshape, transpose, slice, ...). "
                      "Transpose only linear functions, such as the one linearize returns.");
    }
    for (size_t i = 0; i < e.ins.size() && i < in_ct.size(); ++i)
      if (ins[i].linear()) accum(e.ins[i], in_ct[i], e.prim->name());
  }
  std::vector<Array> out;
  for (size_t i = 0; i < p.in_vars.size(); ++i) {
    auto f = ct.find(p.in_vars[i].get());
    out.push_back(f == ct.end() ? Array() : f->second);
  }
  return out;
}

Program transpose_program(const Program& p, const std::vector<bool>& linear_ins, const char* api) {
  std::vector<ArrayType> in_t;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (!linear_ins.at(i)) in_t.push_back(p.in_vars[i]->type);
  for (const auto& v : p.out_vars) in_t.push_back(ct_type(v->type));
  return trace_program(
      [&](const std::vector<Array>& a) {
        std::vector<Array> args(p.in_vars.size());
        size_t k = 0;
        for (size_t i = 0; i < p.in_vars.size(); ++i)
          if (!linear_ins[i]) args[i] = a[k++];
        std::vector<Array> cts(a.begin() + static_cast<long>(k), a.end());
        std::vector<Array> got = backward_pass(p, args, cts, api);
        Array like = ad::first_valid(a);
        std::vector<Array> out;
        for (size_t i = 0; i < p.in_vars.size(); ++i)
          if (linear_ins[i])
            out.push_back(ad::instantiate(got[i], ct_type(p.in_vars[i]->type), like));
        return out;
      },
      in_t);
}

}  // namespace tsr::detail
