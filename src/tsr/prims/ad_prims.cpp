// Rules of the autodiff primitives: stop_gradient, custom_jvp_call,
// custom_vjp_call / custom_lin and checkpoint (remat).
#include "tsr/prims/ad_prims.h"

#include "tsr/error.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/ops.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("stop_gradient") && register_primitive("custom_jvp_call") &&
    register_primitive("custom_vjp_call") && register_primitive("custom_lin") &&
    register_primitive("checkpoint") &&
    declare_ad("stop_gradient", AdKind::NonDifferentiable, "its tangent is zero by definition") &&
    declare_ad("custom_jvp_call", AdKind::Differentiable) &&
    declare_ad("custom_vjp_call", AdKind::Differentiable) &&
    declare_ad("custom_lin", AdKind::TransposeOnly,
               "forward mode through a custom_vjp function is refused, as in JAX") &&
    declare_ad("checkpoint", AdKind::Linear);

std::vector<ArrayType> types_of(const std::vector<Array>& xs) {
  std::vector<ArrayType> t;
  for (const auto& x : xs) t.push_back(x.type());
  return t;
}

// The call's inputs are the program's inputs (consts first); a higher-order
// primitive is only built by its API, so a mismatch is a bug.
void check_inputs(const char* name, const Program& p, const std::vector<ArrayType>& in) {
  std::vector<ArrayType> want = p.in_types();
  if (want.size() != in.size())
    throw TypeError(std::string("[") + name + "] the call has " + std::to_string(in.size()) +
                    " inputs. Got " + std::to_string(in.size()) + "; expected " +
                    std::to_string(want.size()) + ". This is a bug in Tessera: please report it.");
}

}  // namespace

std::vector<ArrayType> StopGradient::infer(const std::vector<ArrayType>& in) const {
  return {in.at(0)};
}

std::vector<Array> StopGradient::jvp(const std::vector<Array>&, const std::vector<Array>&,
                                     std::vector<Array>&) const {
  return {Array()};
}

std::vector<ArrayType> CustomJvpCall::infer(const std::vector<ArrayType>& in) const {
  check_inputs("custom_jvp_call", *fun_, in);
  return fun_->out_types();
}

std::vector<Array> CustomJvpCall::jvp(const std::vector<Array>& primals,
                                      const std::vector<Array>& tangents,
                                      std::vector<Array>& outs) const {
  size_t nc = fun_->const_vars.size();
  std::vector<Array> p(primals.begin() + static_cast<long>(nc), primals.end());
  std::vector<Array> t;
  for (size_t i = nc; i < primals.size(); ++i)
    t.push_back(ad::instantiate(tangents[i], primals[i].type(), primals[i]));
  std::vector<Array> r = rule_(p, t);
  std::vector<ArrayType> want = fun_->out_types();
  size_t n = want.size();
  if (r.size() != 2 * n)
    throw TypeError("[custom_jvp] Custom JVP rule for function " + fn_ +
                    " must produce primal and tangent outputs with equal container (pytree) "
                    "structures, but got " +
                    std::to_string(r.size()) + " leaves for " + std::to_string(n) +
                    " outputs. Return a pair (primal_out, tangent_out) shaped like the "
                    "function's result.");
  outs.assign(r.begin(), r.begin() + static_cast<long>(n));
  std::vector<Array> touts(r.begin() + static_cast<long>(n), r.end());
  std::vector<ArrayType> got = types_of(outs);
  for (size_t j = 0; j < n; ++j)
    if (want[j].shape != got[j].shape || want[j].dtype != got[j].dtype)
      throw TypeError(
          "[custom_jvp] Custom JVP rule for function " + fn_ +
          " must produce a pair (list or tuple of length two) where the first element "
          "represents the primal output (equal in value to the output of the "
          "custom_jvp-decorated function " +
          fn_ +
          ", and in particular with leaves of the same shape/dtype), but instead the JVP rule "
          "output's first element had shapes/dtypes of:\n    " +
          ad::types_str(got) + "\nwhile the custom_jvp-decorated function " + fn_ +
          " had output shapes/dtypes of:\n    " + ad::types_str(want));
  for (size_t j = 0; j < n; ++j) {
    if (!has_tangent_space(outs[j].dtype())) {
      touts[j] = Array();
      continue;
    }
    std::string why = ad::mismatch(outs[j].type(), touts[j].type());
    if (!why.empty())
      throw TypeError("[custom_jvp] Custom JVP rule must produce primal and tangent outputs with "
                      "corresponding shapes and dtypes. Expected " +
                      outs[j].type().str() + " (tangent type of " + outs[j].type().str() +
                      ") but got " + touts[j].type().str() + why +
                      ". A tangent has its primal's type: reshard(t, typeof(out).sharding) or "
                      "astype fixes a sharding or dtype.");
  }
  return touts;
}

std::vector<ArrayType> CustomVjpCall::infer(const std::vector<ArrayType>& in) const {
  check_inputs("custom_vjp_call", *fun_, in);
  return fun_->out_types();
}

std::vector<Array> CustomVjpCall::jvp(const std::vector<Array>& primals,
                                      const std::vector<Array>& tangents,
                                      std::vector<Array>& outs) const {
  size_t nc = fun_->const_vars.size();
  // Only nondiff arguments (or captured constants) carry tangents: the call itself, with
  // zero output tangents (as JAX). A custom_lin over instantiated zeros would land on the
  // known side of partial_eval, where evaluating it forward is refused.
  bool any = false;
  for (size_t i = nc; i < primals.size(); ++i)
    any = any || (rules_->diff.at(i - nc) && has_tangent_space(primals[i].dtype()) &&
                  tangents[i].valid());
  if (!any) {
    outs = ad::rebind(*this, primals);
    return std::vector<Array>(outs.size());
  }
  std::vector<Array> p(primals.begin() + static_cast<long>(nc), primals.end());
  std::vector<Array> r = rules_->fwd(p);
  std::vector<ArrayType> want = fun_->out_types();
  size_t n = want.size();
  outs.assign(r.begin(), r.begin() + static_cast<long>(std::min(n, r.size())));
  std::vector<ArrayType> got = types_of(outs);
  bool ok = r.size() >= n;
  for (size_t j = 0; ok && j < n; ++j)
    ok = want[j].shape == got[j].shape && want[j].dtype == got[j].dtype;
  if (!ok)
    throw TypeError(
        "[custom_vjp] Custom VJP fwd rule for function " + rules_->fn +
        " must produce a pair (list or tuple of length two) where the first element represents "
        "the primal output (equal to the output of the custom_vjp-decorated function " +
        rules_->fn +
        ") and the second element represents residuals (i.e. values stored from the forward "
        "pass for use on the backward pass), but instead the fwd rule output's first element "
        "had shapes/dtypes of:\n    " +
        ad::types_str(got) + "\nwhile the custom_vjp-decorated function " + rules_->fn +
        " had output shapes/dtypes of:\n    " + ad::types_str(want));
  std::vector<Array> in = std::vector<Array>(r.begin() + static_cast<long>(n), r.end());
  size_t num_res = in.size();
  for (size_t i = nc; i < primals.size(); ++i)
    if (rules_->diff.at(i - nc) && has_tangent_space(primals[i].dtype()))
      in.push_back(ad::instantiate(tangents[i], primals[i].type(), primals[i]));
  auto lin = std::make_shared<CustomLin>(rules_, num_res, types_of(p), want);
  return detail::bind(lin, in);
}

std::vector<ArrayType> CustomLin::infer(const std::vector<ArrayType>&) const {
  return out_types_;
}

Lowering CustomLin::partition(const std::vector<ArrayType>&, const std::vector<ArrayType>&) const {
  throw TypeError("[custom_vjp] can't apply forward-mode autodiff (jvp) to a custom_vjp function. "
                  "Got a jvp (or a call of the function linearize returned) of `" +
                  rules_->fn +
                  "`; expected reverse mode (vjp, grad, value_and_grad). Define the function "
                  "with custom_jvp to give it a forward-mode rule.");
}

std::vector<Array> CustomLin::transpose(const std::vector<Array>& cts,
                                        const std::vector<LinearIn>& ins) const {
  std::vector<Array> res;
  for (size_t i = 0; i < num_res_; ++i) res.push_back(ins.at(i).value);
  Array like = ad::first_valid(cts);
  std::vector<Array> g;
  for (size_t j = 0; j < cts.size(); ++j)
    g.push_back(ad::instantiate(cts[j], ct_type(out_types_[j]), like));
  std::vector<Array> r = rules_->bwd(res, g);
  if (r.size() != in_types_.size())
    throw TypeError(
        "[custom_vjp] Custom VJP bwd rule must produce an output with the same container "
        "(pytree) structure as the args tuple of the primal function, and in particular must "
        "produce a tuple of length equal to the number of arguments to the primal function, "
        "but got bwd output structure with " +
        std::to_string(r.size()) + " leaves for primal input structure with " +
        std::to_string(in_types_.size()) + " leaves (function " + rules_->fn + ").");
  std::vector<Array> out(num_res_);
  for (size_t i = 0; i < in_types_.size(); ++i) {
    if (!rules_->diff.at(i) || !has_tangent_space(in_types_[i].dtype)) continue;
    if (r[i].valid()) {
      ArrayType want = ct_type(in_types_[i]);
      std::string why = ad::mismatch(want, r[i].type());
      if (!why.empty()) {
        std::string path = i < rules_->in_paths.size() ? rules_->in_paths[i] : "[" + std::to_string(i) + "]";
        throw ValueError("[custom_vjp] Custom VJP bwd rule attached to " + rules_->fn +
                         " must produce an output with the same type as the args tuple of the "
                         "primal function, but at output" +
                         path + " the bwd rule produced an output of type " + r[i].type().str() +
                         " corresponding to an input of type " + want.str() + why +
                         ". Return each cotangent with its input's shape, dtype and sharding "
                         "(reshard(ct, typeof(x).sharding) fixes a sharding).");
      }
    }
    out.push_back(r[i]);
  }
  return out;
}

PrimPtr Checkpoint::with_program(Program p) const {
  return std::make_shared<Checkpoint>(std::make_shared<const Program>(std::move(p)), fn_);
}

std::vector<ArrayType> Checkpoint::infer(const std::vector<ArrayType>& in) const {
  check_inputs("checkpoint", *prog_, in);
  return prog_->out_types();
}

bool Checkpoint::equals(const Primitive& o) const {
  const auto* c = dynamic_cast<const Checkpoint*>(&o);
  return c && c->prog_ == prog_;
}

size_t Checkpoint::hash() const { return std::hash<const void*>()(prog_.get()); }

std::vector<Array> Checkpoint::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents,
                                   std::vector<Array>& outs) const {
  // One checkpoint computing primals and tangents, so partial_eval can split it
  // into a known part and a recomputing unknown part.
  std::vector<bool> flags;
  std::vector<Array> in = primals;
  for (const auto& t : tangents) {
    flags.push_back(t.valid());
    if (t.valid()) in.push_back(t);
  }
  Program jp = jvp_program(*prog_, flags);
  // Tangent outputs that read no tangent input are zeros (jvp_program instantiates
  // them): symbolic zeros here, as for any other primitive, so that what follows (a
  // custom_vjp, whose custom_lin cannot run forward) sees no tangent.
  std::vector<bool> is_tangent(jp.in_vars.size(), false);
  for (size_t i = primals.size(); i < is_tangent.size(); ++i) is_tangent[i] = true;
  std::vector<bool> reads_tangents = unknown_outputs(jp, is_tangent);
  std::vector<Array> ins = jp.consts;
  ins.insert(ins.end(), in.begin(), in.end());
  std::vector<Array> r = detail::bind(with_program(lift_consts(jp)), ins);
  size_t n = prog_->out_vars.size();
  outs.assign(r.begin(), r.begin() + static_cast<long>(n));
  std::vector<Array> touts(n);
  size_t k = n;
  for (size_t j = 0; j < n; ++j)
    if (has_tangent_space(outs[j].dtype())) {
      if (reads_tangents[k]) touts[j] = r[k];
      ++k;
    }
  return touts;
}

std::vector<Array> Checkpoint::transpose(const std::vector<Array>& cts,
                                         const std::vector<LinearIn>& ins) const {
  // The transpose recomputes inside its own checkpoint, so no pass merges the
  // recomputation with the forward values (which would keep those alive).
  std::vector<bool> linear;
  std::vector<Array> in;
  for (const auto& x : ins) {
    linear.push_back(x.linear());
    if (!x.linear()) in.push_back(x.value);
  }
  Array like = ad::first_valid(cts);
  for (size_t j = 0; j < cts.size(); ++j)
    in.push_back(ad::instantiate(cts[j], ct_type(prog_->out_vars[j]->type), like));
  Program tp = transpose_program(*prog_, linear, "grad");
  std::vector<Array> args = tp.consts;
  args.insert(args.end(), in.begin(), in.end());
  std::vector<Array> r = detail::bind(with_program(lift_consts(tp)), args);
  std::vector<Array> out(ins.size());
  size_t k = 0;
  for (size_t i = 0; i < ins.size(); ++i)
    if (linear[i]) out[i] = r[k++];
  return out;
}

// ---- batching rules ------------------------------------------------------------------
// The higher-order primitives batch their programs (captured constants lifted to
// inputs, so the batched call takes the same operands); the user's rules are batched
// when they run, under the vmap they were batched in (every output with the batch at
// 0, as the batched program's outputs are).

detail::Batched StopGradient::batch(const std::vector<Array>& args,
                                    const std::vector<int>& dims) const {
  return {{detail::bind1(shared_from_this(), args)}, {dims[0]}};
}

detail::Batched Checkpoint::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  std::vector<int> out_dims;
  Program bp = detail::batch_program(lift_consts(*prog_), dims, out_dims);
  return {detail::bind(with_program(std::move(bp)), args), out_dims};
}

detail::Batched CustomJvpCall::batch(const std::vector<Array>& args,
                                     const std::vector<int>& dims) const {
  std::vector<int> out_dims;
  auto fun = std::make_shared<const Program>(
      detail::batch_program(lift_consts(*fun_), dims, out_dims, true));
  size_t nc = fun_->const_vars.size();
  // rule'(primals, tangents): the rule per example, over the non-constant operands.
  CustomJvpRule rule = [rule = rule_, nc, dims, axis = detail::batch_axis()](
                           const std::vector<Array>& ps, const std::vector<Array>& ts) {
    size_t n = ps.size();
    FlatFn per = [&](const std::vector<Array>& a) {
      return rule(std::vector<Array>(a.begin() + static_cast<long>(nc), a.begin() + static_cast<long>(n)),
                  std::vector<Array>(a.begin() + static_cast<long>(n + nc), a.end()));
    };
    std::vector<Array> all = ps;
    all.insert(all.end(), ts.begin(), ts.end());
    std::vector<int> d2 = dims;
    d2.insert(d2.end(), dims.begin(), dims.end());
    return detail::batch_fn_front(per, all, d2, axis);
  };
  auto p = std::make_shared<CustomJvpCall>(fun, std::move(rule), fn_);
  return {detail::bind(p, args), out_dims};
}

detail::Batched CustomVjpCall::batch(const std::vector<Array>& args,
                                     const std::vector<int>& dims) const {
  std::vector<int> out_dims;
  auto fun = std::make_shared<const Program>(
      detail::batch_program(lift_consts(*fun_), dims, out_dims, true));
  size_t nc = fun_->const_vars.size();
  std::vector<ArrayType> in_types = fun_->in_types();
  auto rules = std::make_shared<CustomVjpRules>(*rules_);
  rules->diff.insert(rules->diff.begin(), nc, false);
  rules->in_paths.insert(rules->in_paths.begin(), nc, "<captured constant>");
  detail::BatchAxis axis = detail::batch_axis();
  rules->fwd = [fwd = rules_->fwd, nc, dims, axis](const std::vector<Array>& ps) {
    FlatFn per = [&](const std::vector<Array>& a) {
      return fwd(std::vector<Array>(a.begin() + static_cast<long>(nc), a.end()));
    };
    return detail::batch_fn_front(per, ps, dims, axis);
  };
  // bwd'(residuals, cotangents), all batched at 0: the per-example cotangents, summed
  // over the batch for an unbatched input (it was broadcast to every example).
  rules->bwd = [bwd = rules_->bwd, nc, dims, axis, in_types](const std::vector<Array>& res,
                                                             const std::vector<Array>& cts) {
    size_t nr = res.size();
    FlatFn per = [&](const std::vector<Array>& a) {
      std::vector<Array> g = bwd(std::vector<Array>(a.begin(), a.begin() + static_cast<long>(nr)),
                                 std::vector<Array>(a.begin() + static_cast<long>(nr), a.end()));
      for (size_t i = 0; i < g.size(); ++i)
        if (!g[i].valid()) g[i] = zeros_of(in_types[nc + i], a.front());
      return g;
    };
    std::vector<Array> all = res;
    all.insert(all.end(), cts.begin(), cts.end());
    std::vector<Array> g = detail::batch_fn_front(per, all, std::vector<int>(all.size(), 0), axis);
    std::vector<Array> out(nc);
    for (size_t i = 0; i < g.size(); ++i) {
      int d = dims[nc + i];
      out.push_back(d >= 0 ? detail::move_batch(g[i], 0, d) : tsr::sum(g[i], 0));
    }
    return out;
  };
  auto p = std::make_shared<CustomVjpCall>(fun, rules);
  return {detail::bind(p, args), out_dims};
}

}  // namespace tsr::prim
