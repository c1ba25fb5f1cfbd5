// Forward mode (DESIGN §1): an interpreter over a Program that binds each
// equation's primal and asks its jvp rule for the output tangents; jvp_program
// wraps it in a trace. Also the shared pieces: trace_program, eval_program, types.
#include <unordered_map>

#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"

namespace tsr::detail {

namespace {
thread_local RuleLog* t_log = nullptr;
}

RuleLog::RuleLog() : prev_(t_log) { t_log = this; }
RuleLog::~RuleLog() { t_log = prev_; }
void RuleLog::note(const char* kind, const char* prim) {
  if (t_log) t_log->seen_.push_back(std::string(kind) + ":" + prim);
}

Program trace_program(const FlatFn& fn, const std::vector<ArrayType>& in_types,
                      const std::function<ArrayType(const ArrayType&)>& capture_type) {
  Trace trace;
  if (capture_type) trace.set_capture_type(capture_type);
  std::vector<Array> ins;
  ins.reserve(in_types.size());
  for (const auto& t : in_types) ins.push_back(trace.new_input(t));
  std::vector<Array> outs = fn(ins);
  for (const auto& o : outs)
    if (!o.valid())
      throw ValueError(
          "[trace] a traced function returned an empty Array handle. Got a "
          "default-constructed Array among the results; expected arrays made by ops.");
  return dce(cse(trace.finish(outs)));
}

std::vector<Array> eval_program(const Program& p, const std::vector<Array>& args) {
  if (args.size() != p.in_vars.size())
    throw ValueError("[eval] the program takes " + std::to_string(p.in_vars.size()) +
                     " inputs. Got " + std::to_string(args.size()) + "; expected " +
                     std::to_string(p.in_vars.size()) + ".");
  std::unordered_map<const Var*, Array> env;
  for (size_t i = 0; i < p.const_vars.size(); ++i) env[p.const_vars[i].get()] = p.consts[i];
  for (size_t i = 0; i < p.in_vars.size(); ++i) env[p.in_vars[i].get()] = args[i];
  for (const Eqn& e : p.eqns) {
    EqnMeshScope ms(e);
    std::vector<Array> ins;
    ins.reserve(e.ins.size());
    for (const auto& v : e.ins) ins.push_back(env.at(v.get()));
    std::vector<Array> outs = detail::bind(e.prim, ins);
    for (size_t j = 0; j < e.outs.size(); ++j) env[e.outs[j].get()] = outs[j];
  }
  std::vector<Array> out;
  out.reserve(p.out_vars.size());
  for (const auto& v : p.out_vars) out.push_back(env.at(v.get()));
  return out;
}

bool has_tangent_space(DType t) { return is_inexact(t); }

ArrayType ct_type(const ArrayType& t) {
  const PartitionSpec& s = t.sharding.spec();
  if (s.unreduced().empty() && s.reduced().empty() && t.munreduced.empty() && t.mreduced.empty())
    return t;
  ArrayType c = t;
  std::swap(c.munreduced, c.mreduced);  // manual axes' sets swap too (pcast, §3.6)
  if (s.unreduced().empty() && s.reduced().empty()) return c;
  // Unreduced cotangents are always of kind sum: they accumulate by addition.
  PartitionSpec swapped(s.entries(), s.reduced(), s.unreduced());
  c.sharding = c.sharding.with_spec(swapped);
  return c;
}

void jvp_eval(const Program& p, const std::vector<Array>& primals,
              const std::vector<Array>& tangents, std::vector<Array>& outs,
              std::vector<Array>& out_tangents) {
  std::unordered_map<const Var*, Array> env, tenv;
  for (size_t i = 0; i < p.const_vars.size(); ++i) env[p.const_vars[i].get()] = p.consts[i];
  for (size_t i = 0; i < p.in_vars.size(); ++i) {
    env[p.in_vars[i].get()] = primals.at(i);
    if (tangents.at(i).valid() && has_tangent_space(p.in_vars[i]->type.dtype))
      tenv[p.in_vars[i].get()] = tangents[i];
  }
  for (const Eqn& e : p.eqns) {
    EqnMeshScope ms(e);
    std::vector<Array> ins, tins;
    bool any = false;
    for (const auto& v : e.ins) {
      ins.push_back(env.at(v.get()));
      auto it = tenv.find(v.get());
      tins.push_back(it == tenv.end() ? Array() : it->second);
      any = any || tins.back().valid();
    }
    std::vector<Array> res;
    std::vector<Array> touts;
    bool float_out = false;  // integer/bool results have no tangents: skip the rule
    for (const auto& v : e.outs) float_out = float_out || has_tangent_space(v->type.dtype);
    if (!any || !float_out) {
      res = detail::bind(e.prim, ins);
    } else {
      RuleLog::note("jvp", e.prim->name());
      if (!e.prim->jvp_makes_outputs()) res = detail::bind(e.prim, ins);
      touts = e.prim->jvp(ins, tins, res);
      if (touts.size() != e.outs.size() || res.size() != e.outs.size())
        throw TypeError(std::string("[jvp] the jvp rule of '") + e.prim->name() + "' returned " +
                        std::to_string(touts.size()) + " tangents for " +
                        std::to_string(e.outs.size()) +
                        " outputs. Got a malformed rule result; expected one tangent per "
                        "output. This is a bug in Tessera: please report it.");
    }
    for (size_t j = 0; j < e.outs.size(); ++j) {
      env[e.outs[j].get()] = res[j];
      if (j < touts.size() && touts[j].valid() && has_tangent_space(res[j].dtype()))
        tenv[e.outs[j].get()] = ad::coerce(touts[j], res[j].type(), e.prim->name(), "tangent");
    }
  }
  outs.clear();
  out_tangents.clear();
  for (const auto& v : p.out_vars) {
    outs.push_back(env.at(v.get()));
    auto it = tenv.find(v.get());
    out_tangents.push_back(it == tenv.end() ? Array() : it->second);
  }
}

Program jvp_program(const Program& p, const std::vector<bool>& with_tangent) {
  std::vector<ArrayType> in_t;
  for (const auto& v : p.in_vars) in_t.push_back(v->type);
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    if (with_tangent.at(i)) in_t.push_back(p.in_vars[i]->type);
  size_t n = p.in_vars.size();
  return trace_program(
      [&](const std::vector<Array>& a) {
        std::vector<Array> primals(a.begin(), a.begin() + static_cast<long>(n));
        std::vector<Array> tangents(n);
        size_t k = n;
        for (size_t i = 0; i < n; ++i)
          if (with_tangent[i]) tangents[i] = a[k++];
        std::vector<Array> outs, touts;
        jvp_eval(p, primals, tangents, outs, touts);
        std::vector<Array> r = outs;
        for (size_t j = 0; j < outs.size(); ++j)
          if (has_tangent_space(outs[j].dtype()))
            r.push_back(ad::instantiate(touts[j], outs[j].type(), outs[j]));
        return r;
      },
      in_t);
}

}  // namespace tsr::detail
