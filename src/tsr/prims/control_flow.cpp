// Control flow: cond/switch, while and scan with their infer, jvp, partial-eval split,
// transpose and batch rules together (DESIGN §6). Bodies are closed programs; rules
// re-trace them with the AD and vmap passes, so every rule composes.
#include "tsr/prims/control_flow.h"

#include <algorithm>
#include <functional>
#include <set>

#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

const bool registered = register_primitive("cond") && register_primitive("while") &&
                        register_primitive("scan") && declare_ad("cond", AdKind::Linear) &&
                        declare_ad("scan", AdKind::Linear) &&
                        declare_ad("while", AdKind::Differentiable);

template <class T>
std::vector<T> slice(const std::vector<T>& v, size_t from, size_t to) {
  return std::vector<T>(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to));
}
template <class T>
std::vector<T> cat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<bool> cat(std::vector<bool> a, const std::vector<bool>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<ArrayType> types_of(const std::vector<VarPtr>& vs) {
  std::vector<ArrayType> t;
  for (const auto& v : vs) t.push_back(v->type);
  return t;
}

std::vector<VarPtr> fresh_vars(const std::vector<ArrayType>& ts) {
  std::vector<VarPtr> v;
  for (const auto& t : ts) v.push_back(std::make_shared<Var>(Var{t}));
  return v;
}

std::string axes_tuple(const std::set<std::string>& s) {
  return axis_names_tuple(std::vector<std::string>(s.begin(), s.end()));
}

// True when p (or a body of it) runs a collective that communicates: devices must agree
// on whether it runs. pvary and axis_index move nothing, so any device may skip them.
bool has_collective(const Program& p) {
  for (const auto& e : p.eqns) {
    const auto* c = dynamic_cast<const Collective*>(e.prim.get());
    if ((c && c->communicates()) || dynamic_cast<const LayoutCollective*>(e.prim.get()))
      return true;
    for (const auto& [n, b] : e.prim->bodies())
      if (has_collective(*b)) return true;
  }
  return false;
}

bool program_uses(const Program& p, const std::string& n) {
  for (const auto& e : p.eqns) {
    if (e.prim->uses_axis_name(n)) return true;
    for (const auto& [k, b] : e.prim->bodies())
      if (program_uses(*b, n)) return true;
  }
  return false;
}

// The operands given must be what the body takes (a bug in a rule when not).
void check_body_inputs(const char* op, const char* what, const Program& body,
                       const std::vector<ArrayType>& got) {
  std::vector<ArrayType> want = body.in_types();
  if (want.size() != got.size())
    throw TypeError(std::string("[") + op + "] the " + what + " takes " +
                    std::to_string(want.size()) + " operands. Got " + std::to_string(got.size()) +
                    "; expected " + std::to_string(want.size()) +
                    ". This is a bug in Tessera: please report it.");
  for (size_t i = 0; i < want.size(); ++i)
    if (!(want[i] == got[i]) || want[i].dtype != got[i].dtype)
      throw TypeError(std::string("[") + op + "] operand " + std::to_string(i) + " of the " + what +
                      " has type " + got[i].str() + ". Got that; expected " + want[i].str() +
                      ad::mismatch(want[i], got[i]) +
                      ". This is a bug in Tessera: please report it.");
}

// Devices that disagree on a predicate run different collectives: refuse (a hang).
void check_invariant_pred(const char* op, const char* what, const ArrayType& pred,
                          const std::vector<const Program*>& bodies) {
  if (pred.vma.empty()) return;
  for (const Program* b : bodies)
    if (has_collective(*b))
      throw ValueError(std::string("[") + op + "] the " + what + " varies over manual axes " +
                       axes_tuple(pred.vma) + " but the body runs a collective. Got a varying " +
                       what +
                       "; expected an invariant one, so that every device runs the same "
                       "collectives. Make it invariant (psum/pmax it, or compute it from "
                       "invariant values), or move the collective out of the " +
                       (std::string(op) == "cond" ? "branches." : "loop."));
}

// A loop's carry k must come out of the body with its input type (no implicit pvary).
void check_carry(const std::string& what, const ArrayType& in, const ArrayType& out, size_t k) {
  if (in == out && in.dtype == out.dtype) return;
  std::set<std::string> more, less;
  std::set_difference(out.vma.begin(), out.vma.end(), in.vma.begin(), in.vma.end(),
                      std::inserter(more, more.end()));
  std::set_difference(in.vma.begin(), in.vma.end(), out.vma.begin(), out.vma.end(),
                      std::inserter(less, less.end()));
  const std::string c = "carry[" + std::to_string(k) + "]";
  // JAX's pcast hint (manual-spmd §3.4): the carry gains axes in the body, so the initial
  // value must vary over them too; a carry that loses axes (a psum in the body) needs
  // the body's output carry varying again.
  std::string hint;
  if (!more.empty())
    hint = " This might be fixed by applying `tsr::pvary(..., " + axes_tuple(more) +
           ")` (tsr::pcast to varying) to the initial carry value corresponding to " + c + ".";
  else if (!less.empty())
    hint = " This might be fixed by applying `tsr::pvary(..., " + axes_tuple(less) +
           ")` (tsr::pcast to varying) to the output carry component " + c +
           " the body returns, or by starting from an initial carry that does not vary over " +
           axes_tuple(less) + ".";
  else
    hint =
        " Make the body return the carry's shapes, dtypes and shardings (tsr::reshard or "
        "astype the output).";
  throw TypeError(what + ", but they differ: the input carry component " + c + " has type " +
                  in.str() + " but the corresponding output carry component has type " + out.str() +
                  ad::mismatch(in, out) + ". Got different types; expected equal ones." + hint);
}

// Which carries depend on the flagged inputs: `step(carry flags)` gives the body's
// unknown outputs; iterate to a fixed point (a carry stays unknown once it is).
std::vector<bool> carry_fixed_point(
    std::vector<bool> carry,
    const std::function<std::vector<bool>(const std::vector<bool>&)>& step) {
  for (;;) {
    std::vector<bool> out = step(carry);
    bool changed = false;
    for (size_t k = 0; k < carry.size(); ++k)
      if (out[k] && !carry[k]) carry[k] = changed = true;
    if (!changed) return carry;
  }
}

// Traces fn at `in` in the current context; the program must capture nothing (its
// inputs are all operands of the new equation).
ProgramPtr trace_closed(const FlatFn& fn, const std::vector<ArrayType>& in, const char* op) {
  Program p = trace_program(fn, in);
  if (!p.consts.empty())
    throw TypeError(std::string("[") + op + "] a rule's body captured " +
                    std::to_string(p.consts.size()) +
                    " arrays. Got captured constants; expected none. This is a bug in Tessera: "
                    "please report it.");
  return std::make_shared<const Program>(std::move(p));
}

// Program p with its inputs reordered (`order[i]` = old index of new input i).
ProgramPtr reorder_inputs(Program p, const std::vector<size_t>& order) {
  std::vector<VarPtr> in;
  for (size_t i : order) in.push_back(p.in_vars[i]);
  p.in_vars = std::move(in);
  return std::make_shared<const Program>(std::move(p));
}

std::vector<size_t> range(size_t from, size_t to) {
  std::vector<size_t> r;
  for (size_t i = from; i < to; ++i) r.push_back(i);
  return r;
}

size_t count(const std::vector<bool>& v) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), true));
}

bool same_bodies(const std::vector<ProgramPtr>& a, const std::vector<ProgramPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && !same_program(*a[i], *b[i])) return false;
  return true;
}

}  // namespace

void check_xs_unsharded(const std::vector<ArrayType>& xs) {
  std::vector<std::string> bad;
  for (const auto& x : xs)
    if (x.ndim() > 0 && !entries_of(x)[0].axes().empty()) bad.push_back(x.sharding.spec().repr());
  if (bad.empty()) return;
  std::string got = "(";
  for (size_t i = 0; i < bad.size(); ++i) got += (i ? ", " : "") + bad[i];
  throw ValueError("[scan] 0th dimension of all xs should be replicated. Got " + got +
                   (bad.size() == 1 ? ",)" : ")") +
                   "; expected dim 0 unsharded. Reshard xs so that dim 0 is not sharded "
                   "(tsr::reshard), or scan over another dimension.");
}

ArrayType slice_type(const ArrayType& t) {
  std::vector<PartitionEntry> e = entries_of(t);
  e.erase(e.begin());
  ArrayType r = make_type(Shape(t.shape.begin() + 1, t.shape.end()), t.dtype, t.weak,
                          t.sharding.mesh(), e, t.sharding.spec());
  r.vma = t.vma;
  return r;
}

ArrayType stacked_type(const ArrayType& t, int64_t length) {
  std::vector<PartitionEntry> e = entries_of(t);
  e.insert(e.begin(), PartitionEntry());
  Shape s = t.shape;
  s.insert(s.begin(), length);
  ArrayType r = make_type(s, t.dtype, t.weak, t.sharding.mesh(), e, t.sharding.spec());
  r.vma = t.vma;
  return r;
}

// ---- cond ------------------------------------------------------------------------------

std::vector<ArrayType> Cond::infer(const std::vector<ArrayType>& in) const {
  if (in.empty() || in[0].dtype != DType::Int32 || in[0].ndim() != 0)
    throw TypeError("[cond] the branch index must be an i32 scalar. Got " +
                    (in.empty() ? std::string("no operands") : short_type(in[0])) +
                    "; expected i32[]. Pass a bool predicate to tsr::cond or an integer scalar "
                    "index to tsr::switch_case.");
  if (!unreduced_of(in[0]).empty())
    throw ShardingTypeError(
        "[cond] the branch index is unreduced over " + axes_tuple(unreduced_of(in[0])) + ". Got " +
        short_type(in[0]) +
        "; expected a value every device holds whole. Reshard it to P() first.");
  std::vector<ArrayType> ops = slice(in, 1, in.size());
  for (const auto& b : branches_) check_body_inputs("cond", "branch", *b, ops);
  std::vector<ArrayType> out = branches_[0]->out_types();
  for (size_t b = 1; b < branches_.size(); ++b) {
    std::vector<ArrayType> ob = branches_[b]->out_types();
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] == ob[j] && out[j].dtype == ob[j].dtype) continue;
      std::string hint;
      std::set<std::string> more;
      std::set_difference(ob[j].vma.begin(), ob[j].vma.end(), out[j].vma.begin(), out[j].vma.end(),
                          std::inserter(more, more.end()));
      std::set<std::string> less;
      std::set_difference(out[j].vma.begin(), out[j].vma.end(), ob[j].vma.begin(), ob[j].vma.end(),
                          std::inserter(less, less.end()));
      if (!less.empty())
        hint = " This might be fixed by applying `tsr::pvary(..., " + axes_tuple(less) +
               ")` to output " + std::to_string(j) + " of branch " + std::to_string(b) + ".";
      else if (!more.empty())
        hint = " This might be fixed by applying `tsr::pvary(..., " + axes_tuple(more) +
               ")` to output " + std::to_string(j) + " of branch 0.";
      else
        hint =
            " Make every branch return the same shapes, dtypes and shardings (tsr::reshard "
            "one of them).";
      throw TypeError("[cond] cond branches must have equal output types but they differ. Got " +
                      out[j].str() + " from branch 0 and " + ob[j].str() + " from branch " +
                      std::to_string(b) + " for output " + std::to_string(j) +
                      ad::mismatch(out[j], ob[j]) + "; expected equal types." + hint);
    }
  }
  std::vector<const Program*> bs;
  for (const auto& b : branches_) bs.push_back(b.get());
  check_invariant_pred("cond", "branch index", in[0], bs);
  return out;
}

std::string Cond::params() const { return ""; }

std::vector<std::pair<std::string, const Program*>> Cond::bodies() const {
  std::vector<std::pair<std::string, const Program*>> r;
  for (size_t b = 0; b < branches_.size(); ++b)
    r.emplace_back("branch" + std::to_string(b), branches_[b].get());
  return r;
}

bool Cond::equals(const Primitive& o) const {
  const auto* c = dynamic_cast<const Cond*>(&o);
  return c && same_bodies(branches_, c->branches_);
}

size_t Cond::hash() const { return std::hash<std::string>()("cond") ^ branches_.size(); }

bool Cond::uses_axis_name(const std::string& n) const {
  for (const auto& b : branches_)
    if (program_uses(*b, n)) return true;
  return false;
}

std::vector<Array> Cond::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                             std::vector<Array>& outs) const {
  std::vector<bool> flags;
  std::vector<Array> args = primals;
  for (size_t i = 1; i < primals.size(); ++i) {
    flags.push_back(tangents[i].valid());
    if (tangents[i].valid()) args.push_back(tangents[i]);
  }
  std::vector<ProgramPtr> jb;
  std::vector<bool> reads;
  for (const auto& b : branches_) {
    Program jp = jvp_program(*b, flags);
    if (!jp.consts.empty())
      throw TypeError("[cond] the jvp of a branch captured arrays. This is a bug in Tessera.");
    std::vector<bool> is_t(jp.in_vars.size(), false);
    for (size_t i = primals.size() - 1; i < is_t.size(); ++i) is_t[i] = true;
    std::vector<bool> r = unknown_outputs(jp, is_t);
    if (reads.empty()) reads = r;
    for (size_t j = 0; j < r.size(); ++j) reads[j] = reads[j] || r[j];
    jb.push_back(std::make_shared<const Program>(std::move(jp)));
  }
  std::vector<Array> r = detail::bind(std::make_shared<Cond>(std::move(jb)), args);
  size_t m = branches_[0]->out_vars.size();
  outs.assign(r.begin(), r.begin() + static_cast<long>(m));
  std::vector<Array> touts(m);
  for (size_t j = 0, k = m; j < m; ++j)
    if (has_tangent_space(outs[j].dtype())) {
      if (reads[k]) touts[j] = r[k];
      ++k;
    }
  return touts;
}

std::vector<bool> Cond::unknown_outs(const std::vector<bool>& unknown_ins) const {
  size_t m = branches_[0]->out_vars.size();
  if (unknown_ins[0]) return std::vector<bool>(m, true);
  std::vector<bool> u(m, false);
  std::vector<bool> f = slice(unknown_ins, 1, unknown_ins.size());
  for (const auto& b : branches_) {
    std::vector<bool> r = unknown_outputs(*b, f);
    for (size_t j = 0; j < m; ++j) u[j] = u[j] || r[j];
  }
  return u;
}

EqnSplit Cond::split(const std::vector<bool>& unknown_ins) const {
  // JAX's _cond_partial_eval: every branch split alike; residuals are the union over
  // branches, each branch filling the others' with zeros.
  EqnSplit sp;
  sp.unknown_outs = unknown_outs(unknown_ins);
  std::vector<bool> f = slice(unknown_ins, 1, unknown_ins.size());
  std::vector<PartialEval> pes;
  std::vector<std::vector<ArrayType>> res_t;
  for (const auto& b : branches_) {
    pes.push_back(partial_eval(*b, f, sp.unknown_outs));
    const Program& k = pes.back().known;
    res_t.push_back(
        types_of(slice(k.out_vars, k.out_vars.size() - pes.back().num_res, k.out_vars.size())));
    sp.num_res += pes.back().num_res;
  }
  std::vector<ArrayType> known_t;
  for (size_t i = 0; i < f.size(); ++i)
    if (!f[i]) known_t.push_back(branches_[0]->in_vars[i]->type);
  std::vector<ProgramPtr> kb, ub;
  for (size_t b = 0; b < branches_.size(); ++b) {
    const PartialEval& pe = pes[b];
    kb.push_back(trace_closed(
        [&](const std::vector<Array>& a) {
          std::vector<Array> r = eval_program(pe.known, a);
          size_t nk = r.size() - pe.num_res;
          std::vector<Array> out = slice(r, 0, nk);
          Array like = a.empty() ? Array() : a[0];
          for (size_t c = 0; c < branches_.size(); ++c) {
            if (c == b) {
              for (size_t q = nk; q < r.size(); ++q) out.push_back(r[q]);
              continue;
            }
            for (const auto& t : res_t[c]) out.push_back(zeros_of(t, like));
          }
          return out;
        },
        known_t, "cond"));
    Program u = pe.unknown;
    std::vector<VarPtr> in;
    for (size_t c = 0; c < branches_.size(); ++c)
      in = cat(in, c == b ? slice(u.in_vars, 0, pe.num_res) : fresh_vars(res_t[c]));
    u.in_vars = cat(in, slice(u.in_vars, pe.num_res, u.in_vars.size()));
    ub.push_back(std::make_shared<const Program>(std::move(u)));
  }
  sp.known = std::make_shared<Cond>(std::move(kb));
  sp.unknown = std::make_shared<Cond>(std::move(ub));
  sp.unknown_ins.push_back(0);
  for (size_t r = 0; r < sp.num_res; ++r) sp.unknown_ins.push_back(-static_cast<int>(r) - 1);
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i]) sp.unknown_ins.push_back(static_cast<int>(i) + 1);
  return sp;
}

std::vector<Array> Cond::transpose(const std::vector<Array>& cts,
                                   const std::vector<LinearIn>& ins) const {
  std::vector<bool> linear;
  std::vector<Array> args{ins[0].value};
  for (size_t i = 1; i < ins.size(); ++i) {
    linear.push_back(ins[i].linear());
    if (!ins[i].linear()) args.push_back(ins[i].value);
  }
  Array like = ad::first_valid(cts);
  const Program& b0 = *branches_[0];
  for (size_t j = 0; j < cts.size(); ++j)
    args.push_back(ad::instantiate(cts[j], ct_type(b0.out_vars[j]->type), like));
  std::vector<ProgramPtr> tb;
  for (const auto& b : branches_) {
    Program tp = transpose_program(*b, linear, "grad");
    if (!tp.consts.empty())
      throw TypeError(
          "[cond] the transpose of a branch captured arrays. This is a bug in Tessera.");
    tb.push_back(std::make_shared<const Program>(std::move(tp)));
  }
  std::vector<Array> r = detail::bind(std::make_shared<Cond>(std::move(tb)), args);
  std::vector<Array> out(ins.size());
  for (size_t i = 1, k = 0; i < ins.size(); ++i)
    if (linear[i - 1]) out[i] = r[k++];
  return out;
}

Batched Cond::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<int> in_dims = slice(dims, 1, dims.size());
  std::vector<Array> ops = slice(args, 1, args.size());
  std::vector<ProgramPtr> bb;
  std::vector<int> od;
  for (const auto& b : branches_)
    bb.push_back(std::make_shared<const Program>(batch_program(*b, in_dims, od, true)));
  if (dims[0] < 0) {
    std::vector<Array> in = cat(std::vector<Array>{args[0]}, ops);
    return {detail::bind(std::make_shared<Cond>(std::move(bb)), in), od};
  }
  // A batched index: every branch runs and select_n picks per example (as JAX).
  Array idx = move_batch(args[0], dims[0], 0);
  idx = clamp(0, idx, static_cast<int64_t>(branches_.size()) - 1);
  std::vector<std::vector<Array>> outs;
  for (const auto& b : bb) outs.push_back(eval_program(*b, ops));
  std::vector<Array> r;
  for (size_t j = 0; j < outs[0].size(); ++j) {
    std::vector<Array> cases;
    for (const auto& o : outs) cases.push_back(o[j]);
    Shape s(static_cast<size_t>(cases[0].ndim()), 1);
    s[0] = idx.shape()[0];
    Array which = broadcast_to(reshape(idx, s), cases[0].shape());
    r.push_back(select_n(which, cases));
  }
  return {r, std::vector<int>(r.size(), 0)};
}

// ---- while -----------------------------------------------------------------------------

std::vector<ArrayType> While::infer(const std::vector<ArrayType>& in) const {
  std::vector<ArrayType> carry = slice(in, ncc_ + nbc_, in.size());
  check_body_inputs("while_loop", "cond_fun", *cond_, cat(slice(in, 0, ncc_), carry));
  std::vector<ArrayType> pt = cond_->out_types();
  if (pt.size() != 1 || pt[0].dtype != DType::Bool || pt[0].ndim() != 0)
    throw TypeError("[while_loop] cond_fun must return a boolean scalar, but got output type(s) " +
                    ad::types_str(pt) +
                    ". Got that; expected bool[]. Compare or reduce to one bool (tsr::any).");
  std::vector<ArrayType> bin = body_->in_types();
  std::vector<ArrayType> bout = body_->out_types();
  std::vector<ArrayType> want = cat(slice(in, ncc_, ncc_ + nbc_), carry);
  if (bout.size() == carry.size())
    for (size_t k = 0; k < carry.size(); ++k)
      check_carry("[while_loop] body_fun output and input must have identical types", carry[k],
                  bout[k], k);
  check_body_inputs("while_loop", "body_fun", *body_, want);
  if (bout.size() != carry.size())
    throw TypeError("[while_loop] body_fun returns " + std::to_string(bout.size()) +
                    " values. Got that; expected " + std::to_string(carry.size()) +
                    " (the carry). Return the carry's structure.");
  check_invariant_pred("while_loop", "predicate", pt[0], {cond_.get(), body_.get()});
  return carry;
}

std::string While::params() const {
  return "cond_nconsts=" + std::to_string(ncc_) + " body_nconsts=" + std::to_string(nbc_);
}

std::vector<std::pair<std::string, const Program*>> While::bodies() const {
  return {{"cond", cond_.get()}, {"body", body_.get()}};
}

bool While::equals(const Primitive& o) const {
  const auto* w = dynamic_cast<const While*>(&o);
  return w && w->ncc_ == ncc_ && w->nbc_ == nbc_ &&
         same_bodies({cond_, body_}, {w->cond_, w->body_});
}

size_t While::hash() const { return std::hash<std::string>()("while") ^ (ncc_ * 31 + nbc_); }

bool While::uses_axis_name(const std::string& n) const {
  return program_uses(*cond_, n) || program_uses(*body_, n);
}

std::vector<Array> While::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                              std::vector<Array>& outs) const {
  const size_t nk = primals.size() - ncc_ - nbc_;
  // Every float carry gets a tangent (zeros where none comes in): the loop's tangent
  // carry must have one type every iteration.
  std::vector<bool> flags;
  std::vector<Array> bct;
  for (size_t i = ncc_; i < ncc_ + nbc_; ++i) {
    flags.push_back(tangents[i].valid());
    if (tangents[i].valid()) bct.push_back(tangents[i]);
  }
  std::vector<Array> carry = slice(primals, ncc_ + nbc_, primals.size()), ct;
  Array like = ad::first_valid(tangents);
  for (size_t k = 0; k < nk; ++k) {
    bool f = has_tangent_space(carry[k].dtype());
    flags.push_back(f);
    if (f) ct.push_back(ad::instantiate(tangents[ncc_ + nbc_ + k], carry[k].type(), like));
  }
  Program jp = jvp_program(*body_, flags);
  if (!jp.consts.empty())
    throw TypeError("[while_loop] the jvp of the body captured arrays. This is a bug in Tessera.");
  // jvp_program's inputs: (consts, carry, const tangents, carry tangents); the loop
  // wants (consts, const tangents, carry, carry tangents).
  const size_t nbt = bct.size(), nkt = ct.size();
  std::vector<size_t> order = range(0, nbc_);
  order = cat(order, range(nbc_ + nk, nbc_ + nk + nbt));
  order = cat(order, range(nbc_, nbc_ + nk));
  order = cat(order, range(nbc_ + nk + nbt, nbc_ + nk + nbt + nkt));
  ProgramPtr body = reorder_inputs(std::move(jp), order);
  Program c = *cond_;
  for (const auto& t : ct) c.in_vars.push_back(std::make_shared<Var>(Var{t.type()}));
  auto w = std::make_shared<While>(std::make_shared<const Program>(std::move(c)), body, ncc_,
                                   nbc_ + nbt);
  std::vector<Array> in = cat(slice(primals, 0, ncc_ + nbc_), bct);
  in = cat(cat(in, carry), ct);
  std::vector<Array> r = detail::bind(w, in);
  outs = slice(r, 0, nk);
  std::vector<Array> touts(nk);
  for (size_t k = 0, q = nk; k < nk; ++k)
    if (flags[nbc_ + k]) touts[k] = r[q++];
  return touts;
}

std::vector<bool> While::unknown_outs(const std::vector<bool>& unknown_ins) const {
  const size_t nk = unknown_ins.size() - ncc_ - nbc_;
  std::vector<bool> cc = slice(unknown_ins, 0, ncc_), bc = slice(unknown_ins, ncc_, ncc_ + nbc_);
  std::vector<bool> carry = carry_fixed_point(
      slice(unknown_ins, ncc_ + nbc_, unknown_ins.size()),
      [&](const std::vector<bool>& c) { return unknown_outputs(*body_, cat(bc, c)); });
  // A predicate that reads an unknown value makes every carry unknown.
  if (unknown_outputs(*cond_, cat(cc, carry))[0]) return std::vector<bool>(nk, true);
  return carry;
}

EqnSplit While::split(const std::vector<bool>& unknown_ins) const {
  const size_t n = unknown_ins.size(), nk = n - ncc_ - nbc_;
  EqnSplit sp;
  sp.unknown_outs = unknown_outs(unknown_ins);
  std::vector<bool> carry_u = sp.unknown_outs;
  // The known loop: the known carries only (the predicate reads none of the others).
  Program c = *cond_;
  std::vector<VarPtr> cin;
  for (size_t i = 0; i < ncc_; ++i)
    if (!unknown_ins[i]) cin.push_back(c.in_vars[i]);
  for (size_t k = 0; k < nk; ++k)
    if (!carry_u[k]) cin.push_back(c.in_vars[ncc_ + k]);
  c.in_vars = cin;
  std::vector<bool> bflags = cat(slice(unknown_ins, ncc_, ncc_ + nbc_), carry_u);
  Program kb = known_outputs_program(*body_, bflags, carry_u);
  size_t nbk = 0;
  for (size_t i = ncc_; i < ncc_ + nbc_; ++i) nbk += unknown_ins[i] ? 0 : 1;
  size_t nck = 0;
  for (size_t i = 0; i < ncc_; ++i) nck += unknown_ins[i] ? 0 : 1;
  sp.known = std::make_shared<While>(std::make_shared<const Program>(std::move(c)),
                                     std::make_shared<const Program>(std::move(kb)), nck, nbk);
  // The known operands: known consts and the known carries' initial values.
  for (size_t i = 0; i < n; ++i)
    if (!unknown_ins[i] && (i < ncc_ + nbc_ || !carry_u[i - ncc_ - nbc_]))
      sp.known_ins.push_back(static_cast<int>(i));
  // The unknown side recomputes the whole loop and returns the unknown carries.
  auto whole = std::static_pointer_cast<const While>(shared_from_this());
  std::vector<ArrayType> all_t =
      cat(cat(slice(cond_->in_types(), 0, ncc_), slice(body_->in_types(), 0, nbc_)),
          slice(body_->in_types(), nbc_, nbc_ + nk));
  ProgramPtr up = trace_closed(
      [&](const std::vector<Array>& a) {
        std::vector<Array> r = detail::bind(whole, a), out;
        for (size_t k = 0; k < nk; ++k)
          if (carry_u[k]) out.push_back(r[k]);
        return out;
      },
      all_t, "while_loop");
  sp.unknown =
      std::make_shared<JitCall>(up, "while_loop", std::vector<std::optional<NamedSharding>>{});
  for (size_t i = 0; i < n; ++i) sp.unknown_ins.push_back(static_cast<int>(i));
  return sp;
}

std::vector<Array> While::transpose(const std::vector<Array>&, const std::vector<LinearIn>&) const {
  throw ValueError(
      "[while_loop] Reverse-mode differentiation does not work for while_loop or fori_loop "
      "with dynamic start/stop values. Got grad/vjp through a while loop; expected forward "
      "mode (jvp, linearize) only. Try tsr::scan, or fori_loop with static (int) start/stop.");
}

Batched While::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  const size_t nk = args.size() - ncc_ - nbc_;
  std::vector<Array> in;
  std::vector<int> d;
  for (size_t i = 0; i < ncc_ + nbc_; ++i) {
    in.push_back(dims[i] >= 0 ? move_batch(args[i], dims[i], 0) : args[i]);
    d.push_back(dims[i] >= 0 ? 0 : -1);
  }
  // Every carry batched at 0: the loop's carry type must not change between iterations.
  for (size_t k = 0; k < nk; ++k) {
    in.push_back(batch_at_front(args[ncc_ + nbc_ + k], dims[ncc_ + nbc_ + k]));
    d.push_back(0);
  }
  std::vector<int> cd = cat(slice(d, 0, ncc_), slice(d, ncc_ + nbc_, d.size()));
  std::vector<int> bd = slice(d, ncc_, d.size());
  std::vector<int> pod, bod;
  auto cp = std::make_shared<const Program>(batch_program(*cond_, cd, pod));
  auto bp = std::make_shared<const Program>(batch_program(*body_, bd, bod, true));
  if (pod[0] < 0)
    return {detail::bind(std::make_shared<While>(cp, bp, ncc_, nbc_), in), std::vector<int>(nk, 0)};
  // A batched predicate: loop while any example runs; finished examples keep their carry.
  std::vector<ArrayType> ct = types_of(cp->in_vars), bt = types_of(bp->in_vars);
  std::vector<ArrayType> carry_t = slice(bt, nbc_, bt.size());
  ProgramPtr c2 = trace_closed(
      [&](const std::vector<Array>& a) { return std::vector<Array>{any(eval_program(*cp, a)[0])}; },
      ct, "while_loop");
  std::vector<ArrayType> b2t = cat(cat(slice(ct, 0, ncc_), slice(bt, 0, nbc_)), carry_t);
  ProgramPtr b2 = trace_closed(
      [&](const std::vector<Array>& a) {
        std::vector<Array> carry = slice(a, ncc_ + nbc_, a.size());
        Array p = eval_program(*cp, cat(slice(a, 0, ncc_), carry))[0];
        std::vector<Array> next = eval_program(*bp, slice(a, ncc_, a.size()));
        for (size_t k = 0; k < nk; ++k) {
          Shape s(static_cast<size_t>(carry[k].ndim()), 1);
          s[0] = p.shape()[0];
          next[k] = where(reshape(p, s), next[k], carry[k]);
        }
        return next;
      },
      b2t, "while_loop");
  std::vector<Array> in2 =
      cat(cat(slice(in, 0, ncc_), slice(in, 0, ncc_ + nbc_)), slice(in, ncc_ + nbc_, in.size()));
  return {detail::bind(std::make_shared<While>(c2, b2, ncc_, ncc_ + nbc_), in2),
          std::vector<int>(nk, 0)};
}

// ---- scan ------------------------------------------------------------------------------

std::vector<ArrayType> Scan::infer(const std::vector<ArrayType>& in) const {
  std::vector<ArrayType> xs = slice(in, nc_ + nk_, in.size());
  for (const auto& x : xs) {
    if (x.ndim() == 0 || x.shape[0] != length_)
      throw ValueError("[scan] scan got `length` argument of " + std::to_string(length_) +
                       " which disagrees with leading axis sizes " +
                       (x.ndim() == 0 ? std::string("() (a scalar)") : std::to_string(x.shape[0])) +
                       ". Got that; expected every xs leaf to have length " +
                       std::to_string(length_) + " along dim 0. Pass xs of equal length.");
  }
  check_xs_unsharded(xs);
  std::vector<ArrayType> carry = slice(in, nc_, nc_ + nk_);
  std::vector<ArrayType> bout = body_->out_types();
  if (bout.size() < nk_)
    throw TypeError("[scan] the body returns " + std::to_string(bout.size()) +
                    " values. Got that; expected at least the " + std::to_string(nk_) +
                    " carries. This is a bug in Tessera: please report it.");
  for (size_t k = 0; k < nk_; ++k)
    check_carry("[scan] scan body function carry input and carry output must have equal types",
                carry[k], bout[k], k);
  std::vector<ArrayType> want = slice(in, 0, nc_ + nk_);
  for (const auto& x : xs) want.push_back(slice_type(x));
  check_body_inputs("scan", "body", *body_, want);
  std::vector<ArrayType> out = carry;
  for (size_t j = nk_; j < bout.size(); ++j) out.push_back(stacked_type(bout[j], length_));
  return out;
}

std::string Scan::params() const {
  return "length=" + std::to_string(length_) + " reverse=" + (reverse_ ? "True" : "False") +
         " num_consts=" + std::to_string(nc_) + " num_carry=" + std::to_string(nk_) +
         (unroll_ != 1 ? " unroll=" + std::to_string(unroll_) : "");
}

std::vector<std::pair<std::string, const Program*>> Scan::bodies() const {
  return {{"body", body_.get()}};
}

bool Scan::equals(const Primitive& o) const {
  const auto* s = dynamic_cast<const Scan*>(&o);
  return s && s->nc_ == nc_ && s->nk_ == nk_ && s->length_ == length_ && s->reverse_ == reverse_ &&
         s->unroll_ == unroll_ && same_bodies({body_}, {s->body_});
}

size_t Scan::hash() const {
  return std::hash<std::string>()("scan") ^ static_cast<size_t>(length_ * 131 + nc_ * 7 + nk_);
}

bool Scan::uses_axis_name(const std::string& n) const { return program_uses(*body_, n); }

PrimPtr Scan::with(ProgramPtr body, size_t n_consts, size_t n_carry, bool reverse) const {
  return std::make_shared<Scan>(std::move(body), n_consts, n_carry, length_, reverse, unroll_);
}

std::vector<Array> Scan::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                             std::vector<Array>& outs) const {
  const size_t nx = primals.size() - nc_ - nk_;
  const size_t ny = body_->out_vars.size() - nk_;
  Array like = ad::first_valid(tangents);
  std::vector<bool> fc, fk, fx;
  std::vector<Array> tc, tk, tx;
  for (size_t i = 0; i < nc_; ++i) {
    fc.push_back(tangents[i].valid());
    if (tangents[i].valid()) tc.push_back(tangents[i]);
  }
  for (size_t k = 0; k < nk_; ++k) {
    const Array& c = primals[nc_ + k];
    fk.push_back(has_tangent_space(c.dtype()));
    if (fk.back()) tk.push_back(ad::instantiate(tangents[nc_ + k], c.type(), like));
  }
  for (size_t i = 0; i < nx; ++i) {
    fx.push_back(tangents[nc_ + nk_ + i].valid());
    if (fx.back()) tx.push_back(tangents[nc_ + nk_ + i]);
  }
  Program jp = jvp_program(*body_, cat(cat(fc, fk), fx));
  if (!jp.consts.empty())
    throw TypeError("[scan] the jvp of the body captured arrays. This is a bug in Tessera.");
  // jvp_program: inputs (consts, carry, x, their tangents), outputs (carry, y, their
  // float tangents); the scan wants (consts, t, carry, t, x, t) -> (carry, t, y, t).
  const size_t n = nc_ + nk_ + nx;
  std::vector<size_t> order = range(0, nc_);
  order = cat(order, range(n, n + tc.size()));
  order = cat(order, range(nc_, nc_ + nk_));
  order = cat(order, range(n + tc.size(), n + tc.size() + tk.size()));
  order = cat(order, range(nc_ + nk_, n));
  order = cat(order, range(n + tc.size() + tk.size(), jp.in_vars.size()));
  std::vector<bool> fy;
  for (size_t j = 0; j < ny; ++j)
    fy.push_back(has_tangent_space(body_->out_vars[nk_ + j]->type.dtype));
  const size_t nkt = count(fk), nyt = count(fy);
  std::vector<VarPtr> o = slice(jp.out_vars, 0, nk_);
  o = cat(o, slice(jp.out_vars, nk_ + ny, nk_ + ny + nkt));
  o = cat(o, slice(jp.out_vars, nk_, nk_ + ny));
  o = cat(o, slice(jp.out_vars, nk_ + ny + nkt, nk_ + ny + nkt + nyt));
  jp.out_vars = o;
  ProgramPtr body = reorder_inputs(std::move(jp), order);
  std::vector<Array> in = cat(slice(primals, 0, nc_), tc);
  in = cat(cat(in, slice(primals, nc_, nc_ + nk_)), tk);
  in = cat(cat(in, slice(primals, nc_ + nk_, primals.size())), tx);
  std::vector<Array> r = detail::bind(with(body, nc_ + tc.size(), nk_ + nkt, reverse_), in);
  outs = cat(slice(r, 0, nk_), slice(r, nk_ + nkt, nk_ + nkt + ny));
  std::vector<Array> touts(nk_ + ny);
  for (size_t k = 0, q = nk_; k < nk_; ++k)
    if (fk[k]) touts[k] = r[q++];
  for (size_t j = 0, q = nk_ + nkt + ny; j < ny; ++j)
    if (fy[j]) touts[nk_ + j] = r[q++];
  return touts;
}

std::vector<bool> Scan::unknown_outs(const std::vector<bool>& unknown_ins) const {
  std::vector<bool> c = slice(unknown_ins, 0, nc_),
                    x = slice(unknown_ins, nc_ + nk_, unknown_ins.size());
  std::vector<bool> carry = carry_fixed_point(
      slice(unknown_ins, nc_, nc_ + nk_),
      [&](const std::vector<bool>& k) { return unknown_outputs(*body_, cat(cat(c, k), x)); });
  std::vector<bool> u = unknown_outputs(*body_, cat(cat(c, carry), x));
  for (size_t k = 0; k < nk_; ++k) u[k] = carry[k];
  return u;
}

EqnSplit Scan::split(const std::vector<bool>& unknown_ins) const {
  const size_t n = unknown_ins.size();
  EqnSplit sp;
  sp.unknown_outs = unknown_outs(unknown_ins);
  std::vector<bool> bflags = unknown_ins;
  for (size_t k = 0; k < nk_; ++k) bflags[nc_ + k] = sp.unknown_outs[k];
  PartialEval pe = partial_eval(*body_, bflags, sp.unknown_outs);
  auto nknown = [&](size_t from, size_t to) {
    size_t c = 0;
    for (size_t i = from; i < to; ++i) c += bflags[i] ? 0 : 1;
    return c;
  };
  const size_t kc = nknown(0, nc_), kk = nknown(nc_, nc_ + nk_);
  const size_t r = pe.num_res;
  // A residual that is a known constant of the body is loop-invariant: the unknown scan
  // takes it as a constant (the outer operand) instead of a copy stacked per iteration.
  Program& k = pe.known;
  const size_t first_res = k.out_vars.size() - r;
  std::vector<int> fwd(r, -1);  // per residual: the scan operand it is, or -1
  for (size_t q = 0; q < r; ++q)
    for (size_t i = 0; i < nc_; ++i)
      if (!bflags[i] && k.out_vars[first_res + q] == body_->in_vars[i])
        fwd[q] = static_cast<int>(i);
  std::vector<VarPtr> kouts(k.out_vars.begin(), k.out_vars.begin() + static_cast<long>(first_res));
  std::vector<size_t> fwd_res, stacked_res;
  for (size_t q = 0; q < r; ++q) {
    if (fwd[q] >= 0) {
      fwd_res.push_back(q);
      continue;
    }
    stacked_res.push_back(q);
    kouts.push_back(k.out_vars[first_res + q]);
  }
  k.out_vars = kouts;
  sp.num_res = stacked_res.size();
  // Known scan: (known consts, known carries, known xs) -> (known carries, known ys,
  // residuals stacked as extra ys).
  sp.known = with(std::make_shared<const Program>(k), kc, kk, reverse_);
  for (size_t i = 0; i < n; ++i)
    if (!bflags[i]) sp.known_ins.push_back(static_cast<int>(i));
  // Unknown scan: (unknown consts, forwarded constants, unknown carries, stacked
  // residuals, unknown xs); pe.unknown's inputs are (residuals, unknown inputs).
  Program u = pe.unknown;
  const size_t uc = nc_ - kc, uk = nk_ - kk;
  std::vector<size_t> order = range(r, r + uc);
  order = cat(order, fwd_res);
  order = cat(order, range(r + uc, r + uc + uk));
  order = cat(order, stacked_res);
  order = cat(order, range(r + uc + uk, u.in_vars.size()));
  sp.unknown = with(reorder_inputs(std::move(u), order), uc + fwd_res.size(), uk, reverse_);
  for (size_t i = 0; i < nc_; ++i)
    if (bflags[i]) sp.unknown_ins.push_back(static_cast<int>(i));
  for (size_t q : fwd_res) sp.unknown_ins.push_back(fwd[q]);
  for (size_t i = nc_; i < nc_ + nk_; ++i)
    if (bflags[i]) sp.unknown_ins.push_back(static_cast<int>(i));
  for (size_t q = 0; q < stacked_res.size(); ++q)
    sp.unknown_ins.push_back(-static_cast<int>(q) - 1);
  for (size_t i = nc_ + nk_; i < n; ++i)
    if (bflags[i]) sp.unknown_ins.push_back(static_cast<int>(i));
  return sp;
}

std::vector<Array> Scan::transpose(const std::vector<Array>& cts,
                                   const std::vector<LinearIn>& ins) const {
  // The reverse scan of the body's transpose: constants' cotangents accumulate in the
  // carry, the carry's cotangent flows backwards, xs' cotangents are the stacked ys.
  const size_t nx = ins.size() - nc_ - nk_;
  const Program& b = *body_;
  // A carry whose initial value is known is an instantiated zero tangent (partial eval
  // made it unknown through the body): transposed as linear, its cotangent dropped.
  Array like = ad::first_valid(cts);
  std::vector<Array> nlc, nlx, acc, ctc, cty;
  std::vector<ArrayType> nlc_t, acc_t, ctc_t, nlx_t, cty_t;
  for (size_t i = 0; i < nc_; ++i) {
    if (ins[i].linear()) {
      acc_t.push_back(ct_type(b.in_vars[i]->type));
      acc.push_back(zeros_of(acc_t.back(), like));
    } else {
      nlc.push_back(ins[i].value);
      nlc_t.push_back(b.in_vars[i]->type);
    }
  }
  for (size_t k = 0; k < nk_; ++k) {
    ctc_t.push_back(ct_type(b.out_vars[k]->type));
    ctc.push_back(ad::instantiate(cts[k], ctc_t.back(), like));
  }
  for (size_t i = 0; i < nx; ++i)
    if (!ins[nc_ + nk_ + i].linear()) {
      nlx.push_back(ins[nc_ + nk_ + i].value);
      nlx_t.push_back(b.in_vars[nc_ + nk_ + i]->type);
    }
  for (size_t j = nk_; j < cts.size(); ++j) {
    cty_t.push_back(ct_type(b.out_vars[j]->type));
    cty.push_back(ad::instantiate(cts[j], stacked_type(cty_t.back(), length_), like));
  }
  std::vector<ArrayType> in_t = cat(cat(cat(cat(nlc_t, acc_t), ctc_t), nlx_t), cty_t);
  Program tp = trace_program(
      [&](const std::vector<Array>& a) {
        size_t q = 0;
        std::vector<Array> bargs(b.in_vars.size());
        for (size_t i = 0; i < nc_; ++i)
          if (!ins[i].linear()) bargs[i] = a[q++];
        std::vector<Array> accs = slice(a, q, q + acc_t.size());
        q += acc_t.size();
        std::vector<Array> bcts = slice(a, q, q + nk_);
        q += nk_;
        for (size_t i = 0; i < nx; ++i)
          if (!ins[nc_ + nk_ + i].linear()) bargs[nc_ + nk_ + i] = a[q++];
        bcts = cat(bcts, slice(a, q, a.size()));
        std::vector<Array> got = backward_pass(b, bargs, bcts, "grad");
        Array l = ad::first_valid(a);
        std::vector<Array> out;
        for (size_t i = 0, w = 0; i < nc_; ++i)
          if (ins[i].linear()) {
            out.push_back(ad::add(accs[w], got[i]));
            out.back() = ad::coerce(out.back(), acc_t[w], "scan", "cotangent");
            ++w;
          }
        for (size_t k = 0; k < nk_; ++k)
          out.push_back(ad::coerce(ad::instantiate(got[nc_ + k], ctc_t[k], l), ctc_t[k], "scan",
                                   "cotangent"));
        for (size_t i = 0; i < nx; ++i)
          if (ins[nc_ + nk_ + i].linear()) {
            ArrayType t = ct_type(b.in_vars[nc_ + nk_ + i]->type);
            out.push_back(
                ad::coerce(ad::instantiate(got[nc_ + nk_ + i], t, l), t, "scan", "cotangent"));
          }
        return out;
      },
      in_t);
  std::vector<Array> args = cat(cat(cat(cat(cat(tp.consts, nlc), acc), ctc), nlx), cty);
  const size_t ntc = tp.consts.size();
  std::vector<Array> r = detail::bind(with(std::make_shared<const Program>(lift_consts(tp)),
                                           ntc + nlc.size(), acc.size() + nk_, !reverse_),
                                      args);
  std::vector<Array> out(ins.size());
  size_t q = 0;
  for (size_t i = 0; i < nc_; ++i)
    if (ins[i].linear()) out[i] = r[q++];
  for (size_t k = 0; k < nk_; ++k, ++q)
    if (ins[nc_ + k].linear()) out[nc_ + k] = r[q];
  for (size_t i = 0; i < nx; ++i)
    if (ins[nc_ + nk_ + i].linear()) out[nc_ + nk_ + i] = r[q++];
  return out;
}

Batched Scan::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<Array> in;
  std::vector<int> d;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i >= nc_ && i < nc_ + nk_) {  // carries: all batched at 0 (one type per iteration)
      in.push_back(batch_at_front(args[i], dims[i]));
      d.push_back(0);
    } else if (dims[i] < 0) {
      in.push_back(args[i]);
      d.push_back(-1);
    } else {  // xs keep dim 0 as the scanned one: batch at 1, the slices' batch at 0
      int to = i < nc_ ? 0 : 1;
      in.push_back(move_batch(args[i], dims[i], to));
      d.push_back(0);
    }
  }
  std::vector<int> od;
  auto bp = std::make_shared<const Program>(batch_program(*body_, d, od, true));
  std::vector<Array> r = detail::bind(with(bp, nc_, nk_, reverse_), in);
  std::vector<int> out_dims(r.size(), 1);
  for (size_t k = 0; k < nk_; ++k) out_dims[k] = 0;
  return {r, out_dims};
}

}  // namespace tsr::prim

namespace tsr::detail {

bool split_control(const Primitive& p, const std::vector<bool>& unknown_ins, EqnSplit& out) {
  if (const auto* c = dynamic_cast<const prim::Cond*>(&p)) {
    if (unknown_ins[0]) return false;
    out = c->split(unknown_ins);
    return true;
  }
  if (const auto* w = dynamic_cast<const prim::While*>(&p)) {
    std::vector<bool> u = w->unknown_outs(unknown_ins);
    if (std::find(u.begin(), u.end(), false) == u.end()) return false;
    out = w->split(unknown_ins);
    return true;
  }
  if (const auto* s = dynamic_cast<const prim::Scan*>(&p)) {
    out = s->split(unknown_ins);
    return true;
  }
  return false;
}

bool control_split_is_linear(const Primitive& p) {
  return dynamic_cast<const prim::While*>(&p) == nullptr;
}

bool control_unknown_outs(const Primitive& p, const std::vector<bool>& unknown_ins,
                          std::vector<bool>& out) {
  if (const auto* c = dynamic_cast<const prim::Cond*>(&p)) {
    out = c->unknown_outs(unknown_ins);
    return true;
  }
  if (const auto* w = dynamic_cast<const prim::While*>(&p)) {
    out = w->unknown_outs(unknown_ins);
    return true;
  }
  if (const auto* s = dynamic_cast<const prim::Scan*>(&p)) {
    out = s->unknown_outs(unknown_ins);
    return true;
  }
  return false;
}

}  // namespace tsr::detail
