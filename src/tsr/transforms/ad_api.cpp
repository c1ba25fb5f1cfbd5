// The flat core of the public AD API (tsr/ad.h): jvp, linearize, vjp,
// linear_transpose, the custom rules and checkpoint, built from the passes. Every
// function traces the user's function into a Program, transforms it, and evaluates
// the result by binding, so it runs eagerly or records into an enclosing trace.
#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "tsr/ad_core.h"
#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/program.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/ad_prims.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/vmap.h"

namespace tsr::detail {

namespace {

std::vector<ArrayType> types_of(const std::vector<Array>& xs, const char* api) {
  std::vector<ArrayType> t;
  for (const auto& x : xs) {
    if (!x.valid())
      throw ValueError(std::string("[") + api +
                       "] an argument leaf is an empty Array handle. Got a default-constructed "
                       "Array; expected an array made by an op.");
    t.push_back(seen_type(x));
  }
  return t;
}

std::vector<bool> float_flags(const std::vector<ArrayType>& ts) {
  std::vector<bool> f;
  for (const auto& t : ts) f.push_back(has_tangent_space(t.dtype));
  return f;
}

// A Program's selected outputs, dce'd.
Program keep_outputs(const Program& p, const std::vector<bool>& keep) {
  Program q = p;
  q.out_vars.clear();
  for (size_t j = 0; j < p.out_vars.size(); ++j)
    if (keep[j]) q.out_vars.push_back(p.out_vars[j]);
  return dce(q);
}

// Linearize's pieces: primal outputs, the linear program over (residuals, float
// tangents), and the residual values. The known program (primals -> outputs ++
// residuals) is evaluated by eval_known, once the residuals needed are known.
struct Lin {
  std::vector<Array> outs;
  Program linear;  // in_vars: residuals then float tangents
  std::vector<Array> res;
  std::vector<ArrayType> in_types, out_types;
  Program known;
  size_t num_out = 0;
};

// Evaluates l.known for the outputs and the residuals flagged in `keep` (all when
// empty): l.outs, and l.res with one value per kept residual. A residual the
// transposed program does not read is not computed: eagerly, as under jit's dce (a
// custom_lin that cannot run forward, whose value only such a residual carried, is
// then dropped alike).
void eval_known(Lin& l, const std::vector<Array>& primals, const std::vector<bool>& keep) {
  Program k = l.known;
  if (!keep.empty()) {
    std::vector<VarPtr> o(k.out_vars.begin(), k.out_vars.begin() + static_cast<long>(l.num_out));
    for (size_t r = 0; r < keep.size(); ++r)
      if (keep[r]) o.push_back(k.out_vars[l.num_out + r]);
    k.out_vars = std::move(o);
    k = dce(k);
  }
  std::vector<Array> v = eval_program(k, primals);
  l.outs.assign(v.begin(), v.begin() + static_cast<long>(l.num_out));
  l.res.assign(v.begin() + static_cast<long>(l.num_out), v.end());
  // A residual that is an array from outside the current trace (a primal forwarded
  // as is) is captured now, at the type this trace gives it: a later trace nested in
  // this one (linear_transpose of the map) then sees what this one sees.
  if (Trace* tr = current_trace())
    for (auto& r : l.res) {
      const ArrayImpl* impl = r.impl().get();
      if (impl && !(impl->var && impl->trace_id == tr->id()))
        r = make_traced(tr->var_for(r), tr->id());
    }
}

Lin linearize_program(const FlatFn& f, const std::vector<Array>& primals,
                      const std::function<size_t()>& aux, const char* api) {
  Lin l;
  l.in_types = types_of(primals, api);
  Program p = trace_program(f, l.in_types);
  size_t num_aux = aux ? aux() : 0;
  std::vector<bool> with_t = float_flags(l.in_types);
  Program jp = jvp_program(p, with_t);
  size_t n = p.in_vars.size(), m = p.out_vars.size();
  if (num_aux > m)
    throw ValueError(std::string("[") + api + "] has_aux needs the function to return " +
                     std::to_string(num_aux) + " auxiliary leaves. Got " + std::to_string(m) +
                     " outputs; expected at least that many.");
  size_t md = m - num_aux;  // differentiated outputs
  // jp outputs: m primal outputs, then one tangent per float output.
  std::vector<bool> keep(jp.out_vars.size(), true), unknown_outs;
  size_t k = m;
  for (size_t j = 0; j < m; ++j) {
    l.out_types.push_back(p.out_vars[j]->type);
    if (!has_tangent_space(p.out_vars[j]->type.dtype)) continue;
    keep[k++] = j < md;
  }
  jp = keep_outputs(jp, keep);
  for (size_t j = 0; j < jp.out_vars.size(); ++j) unknown_outs.push_back(j >= m);
  std::vector<bool> unknown_ins(jp.in_vars.size(), false);
  for (size_t i = n; i < unknown_ins.size(); ++i) unknown_ins[i] = true;
  PartialEval pe = partial_eval(jp, unknown_ins, unknown_outs);
  l.known = std::move(pe.known);
  l.num_out = m;
  l.linear = std::move(pe.unknown);
  return l;
}

// The linear program with its residuals captured as constants.
std::shared_ptr<const Program> close_over(const Program& p, size_t num_res,
                                          const std::vector<Array>& res) {
  auto q = std::make_shared<Program>(p);
  for (size_t i = 0; i < num_res; ++i) {
    q->const_vars.push_back(p.in_vars[i]);
    q->consts.push_back(res[i]);
  }
  q->in_vars.assign(p.in_vars.begin() + static_cast<long>(num_res), p.in_vars.end());
  return q;
}

std::string list_str(const std::vector<ArrayType>& ts) { return ad::types_str(ts); }

// The manual axes in `a` but not in `b`, in mesh order, as a tuple: "('x',)"; "" if none.
std::string axes_missing(const ArrayType& a, const ArrayType& b) {
  std::vector<std::string> r;
  for (const auto& x : a.vma)
    if (!b.vma.count(x)) r.push_back(x);
  AbstractMesh ctx = get_abstract_mesh();
  if (!ctx.empty())
    std::stable_sort(r.begin(), r.end(), [&](const std::string& x, const std::string& y) {
      return ctx.axis_index(x) < ctx.axis_index(y);
    });
  return r.empty() ? "" : prim::axis_names_tuple(r);
}

// The fix for a value whose varying axes differ from the expected ones (manual-spmd
// §5.6): Tessera, like JAX, never inserts a pvary at an AD boundary.
std::string vma_fixes(const ArrayType& want, const ArrayType& got, const std::string& to_primal,
                      const std::string& to_arg) {
  std::string r;
  std::string extra = axes_missing(got, want), lacking = axes_missing(want, got);
  if (!extra.empty()) r += "\n  * applying `tsr::pvary(..., " + extra + ")` to " + to_primal + ";";
  if (!lacking.empty()) r += "\n  * applying `tsr::pvary(..., " + lacking + ")` to " + to_arg + ";";
  return r;
}

}  // namespace

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f,
                                                           const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents) {
  std::vector<ArrayType> pt = types_of(primals, "jvp");
  if (tangents.size() != primals.size())
    throw TypeError(
        "[jvp] primal and tangent arguments to tsr::jvp must have the same tree structure; "
        "primals have " +
        std::to_string(primals.size()) + " leaves whereas tangents have " +
        std::to_string(tangents.size()) + ". Pass one tangent per primal leaf.");
  std::vector<Array> t(tangents.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!has_tangent_space(pt[i].dtype)) continue;  // integer/bool: a zero tangent
    const Array& ti = tangents[i];
    if (!ti.valid()) continue;
    if (ti.dtype() != pt[i].dtype)
      throw TypeError(std::string("[jvp] primal and tangent arguments to tsr::jvp do not match; "
                                  "dtypes must be equal, or in case of int/bool primal dtype "
                                  "the tangent dtype must be float0.Got primal dtype ") +
                      dtype_name(pt[i].dtype) + " and so expected tangent dtype " +
                      dtype_name(pt[i].dtype) + ", but got tangent dtype " +
                      dtype_name(ti.dtype()) + " instead. Convert the tangent with astype.");
    if (ti.shape() != pt[i].shape)
      throw ValueError(
          "[jvp] jvp called with different primal and tangent shapes;Got primal "
          "shape " +
          shape_str(pt[i].shape) + " and tangent shape as " + shape_str(ti.shape()) +
          ". Give each tangent its primal's shape.");
    std::string why = ad::mismatch(pt[i], seen_type(ti));
    if (!why.empty())
      throw ValueError("[jvp] a tangent's type must be its primal's type. Got tangent type " +
                       seen_type(ti).str() + " for primal type " + pt[i].str() + why +
                       ". Reshard the tangent: reshard(t, typeof(primal).sharding).");
    t[i] = ti;
  }
  Program p = trace_program(f, pt);
  // The jvp program (dce'd) is evaluated, not jvp_eval's equations as they come: eager
  // then runs what jit runs. An unused tangent (a custom_vjp's, whose custom_lin cannot
  // run forward, under floor) is dropped alike, and a used one refused alike.
  std::vector<bool> with_t;
  std::vector<Array> args = primals;
  for (size_t i = 0; i < primals.size(); ++i) {
    with_t.push_back(t[i].valid());
    if (t[i].valid()) args.push_back(t[i]);
  }
  std::vector<Array> r = eval_program(jvp_program(p, with_t), args);
  size_t m = p.out_vars.size();
  std::vector<Array> outs(r.begin(), r.begin() + static_cast<long>(m)), touts;
  for (size_t j = 0, k = m; j < m; ++j)
    touts.push_back(has_tangent_space(outs[j].dtype())
                        ? r.at(k++)
                        : ad::instantiate(Array(), outs[j].type(), outs[j]));
  return {outs, touts};
}

LinearMap::LinearMap(std::shared_ptr<const Program> prog, std::vector<ArrayType> in_types,
                     std::vector<ArrayType> primal_types, std::vector<ArrayType> out_types,
                     std::vector<bool> in_used, std::string api)
    : prog_(std::move(prog)),
      in_types_(std::move(in_types)),
      primal_types_(std::move(primal_types)),
      out_types_(std::move(out_types)),
      in_used_(std::move(in_used)),
      api_(std::move(api)) {}

std::vector<Array> LinearMap::operator()(const std::vector<Array>& args) const {
  if (args.size() != in_types_.size())
    throw TypeError("[" + api_ + "] the function takes " + std::to_string(in_types_.size()) +
                    " array leaves. Got " + std::to_string(args.size()) + "; expected " +
                    std::to_string(in_types_.size()) + ", one per " +
                    (api_ == "linearize" ? "primal input" : "output") + " leaf.");
  std::vector<Array> in;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_used_[i]) continue;
    if (!args[i].valid())
      throw ValueError("[" + api_ + "] argument leaf " + std::to_string(i) +
                       " is an empty Array handle. Got a default-constructed Array; expected "
                       "an array made by an op.");
    const ArrayType want = in_types_[i], got = seen_type(args[i]);
    std::string why = ad::mismatch(want, got);
    if (!why.empty()) {
      // A vma difference is fixed by a pvary where the value is made (§5.6-5.7); any
      // other difference by resharding or converting the argument.
      const bool vma = want.vma != got.vma;
      if (api_ == "linearize")
        throw ValueError(
            "[linearize] linearized function called on tangent values inconsistent with the "
            "original primal values:\nGot tangent aval " +
            got.str() + " for primal aval " + primal_types_[i].str() + " but expected " +
            want.str() + why + ". \nThis might be fixed by:" +
            (vma ? vma_fixes(want, got, "the primal value passed to `tsr::linearize`",
                             "the tangent value passed to the callable `f_jvp` returned by "
                             "`tsr::linearize`")
                 : "\n  * resharding the tangent to the primal's sharding "
                   "(reshard(t, typeof(primal).sharding)) or converting its dtype;"));
      if (api_ == "vjp")
        throw ValueError(
            "[vjp] unexpected JAX type (e.g. shape/dtype) for argument to VJP "
            "function: got " +
            got.str() + ", but expected " + want.str() +
            " because the corresponding output of the differentiated function had "
            "JAX type " +
            primal_types_[i].str() + why +
            (vma ? ". This might be fixed by:" +
                       vma_fixes(want, got,
                                 "the output of the differentiated "
                                 "function (inside it)",
                                 "the cotangent passed to the VJP function")
                 : ". Pass a cotangent of the output's type (reshard or astype it)."));
      throw TypeError(
          "[linear_transpose] cotangent type does not match function output, "
          "expected " +
          list_str(in_types_) + " but got " + list_str([&] {
            std::vector<ArrayType> g;
            for (const auto& a : args) g.push_back(a.valid() ? seen_type(a) : ArrayType{});
            return g;
          }()) +
          why +
          (vma ? ". This might be fixed by:" +
                     vma_fixes(want, got,
                               "the primal values passed to `tsr::linear_transpose` "
                               "(or `tsr::linearize`)",
                               "the cotangent passed to the transposed function")
               : ". Pass one cotangent of each output's type."));
    }
    in.push_back(args[i]);
  }
  std::vector<Array> r = eval_program(*prog_, in);
  // Zeros for the results the program does not produce (integer leaves).
  std::vector<Array> out;
  size_t k = 0;
  Array like = ad::first_valid(args);
  for (const auto& t : out_types_) {
    if (has_tangent_space(t.dtype) && k < r.size())
      out.push_back(r[k++]);
    else
      out.push_back(zeros_of(t, like));
  }
  return out;
}

std::string LinearMap::str() const { return prog_->str(); }

std::pair<std::vector<Array>, std::shared_ptr<const LinearMap>> linearize_flat(
    const FlatFn& f, const std::vector<Array>& primals) {
  Lin l = linearize_program(f, primals, {}, "linearize");
  eval_known(l, primals, {});
  size_t num_res =
      l.linear.in_vars.size() - static_cast<size_t>(std::count_if(
                                    l.in_types.begin(), l.in_types.end(),
                                    [](const ArrayType& t) { return has_tangent_space(t.dtype); }));
  auto prog = close_over(l.linear, num_res, l.res);
  std::vector<bool> used = float_flags(l.in_types);
  auto map = std::make_shared<const LinearMap>(prog, l.in_types, l.in_types, l.out_types, used,
                                               "linearize");
  return {l.outs, map};
}

std::pair<std::vector<Array>, std::shared_ptr<const LinearMap>> vjp_flat(
    const FlatFn& f, const std::vector<Array>& primals, const std::function<size_t()>& aux) {
  Lin l = linearize_program(f, primals, aux, "vjp");
  size_t num_aux = aux ? aux() : 0;
  size_t nf = static_cast<size_t>(
      std::count_if(l.in_types.begin(), l.in_types.end(),
                    [](const ArrayType& t) { return has_tangent_space(t.dtype); }));
  size_t num_res = l.linear.in_vars.size() - nf;
  std::vector<bool> linear(l.linear.in_vars.size(), false);
  for (size_t i = num_res; i < linear.size(); ++i) linear[i] = true;
  Program t = transpose_program(l.linear, linear, "vjp");
  // Only the residuals the transposed program reads are computed and captured.
  std::unordered_set<const Var*> read;
  for (const Eqn& e : t.eqns)
    for (const auto& v : e.ins) read.insert(v.get());
  for (const auto& v : t.out_vars) read.insert(v.get());
  std::vector<bool> res_used(num_res);
  std::vector<VarPtr> in_vars;
  for (size_t r = 0; r < t.in_vars.size(); ++r) {
    if (r < num_res) res_used[r] = read.count(t.in_vars[r].get()) > 0;
    if (r >= num_res || res_used[r]) in_vars.push_back(t.in_vars[r]);
  }
  t.in_vars = std::move(in_vars);
  eval_known(l, primals, res_used);
  auto prog = close_over(t, l.res.size(), l.res);
  size_t md = l.out_types.size() - num_aux;
  std::vector<ArrayType> ct_in, primal_out;
  std::vector<bool> used;
  for (size_t j = 0; j < md; ++j) {
    ct_in.push_back(ct_type(l.out_types[j]));
    primal_out.push_back(l.out_types[j]);
    used.push_back(has_tangent_space(l.out_types[j].dtype));
  }
  std::vector<ArrayType> ct_out;
  for (const auto& it : l.in_types) ct_out.push_back(ct_type(it));
  auto map = std::make_shared<const LinearMap>(prog, ct_in, primal_out, ct_out, used, "vjp");
  return {l.outs, map};
}

std::shared_ptr<const LinearMap> linear_transpose_flat(const FlatFn& f,
                                                       const std::vector<Array>& primals) {
  return linear_transpose_flat(f, types_of(primals, "linear_transpose"));
}

std::shared_ptr<const LinearMap> linear_transpose_flat(const FlatFn& f,
                                                       const std::vector<ArrayType>& in_types) {
  Program p = trace_program(f, in_types);
  std::vector<DType> dts;
  bool all_float = true, all_int = true;
  for (const auto& t : in_types) dts.push_back(t.dtype);
  for (const auto& v : p.out_vars) dts.push_back(v->type.dtype);
  for (DType d : dts) {
    all_float = all_float && is_inexact(d);
    all_int = all_int && is_integer(d);
  }
  if (all_int && !all_float && !dts.empty())
    throw NotImplementedError(
        "[linear_transpose] integer -> integer linear functions are not supported yet. Got "
        "integer inputs and outputs; expected float ones. Convert to float, transpose, and "
        "convert back.");
  if (!all_float && !all_int) {
    std::string a, b;
    for (size_t i = 0; i < dts.size(); ++i) {
      std::string& s = i < in_types.size() ? a : b;
      s += (s.empty() ? "" : ", ") + std::string("dtype(") + dtype_name(dts[i]) + ")";
    }
    throw TypeError(
        "[linear_transpose] linear_transpose only supports [float or complex] -> "
        "[float or complex], and integer -> integer functions, but got [" +
        a + "] -> [" + b + "]. Convert the inputs or outputs to one kind.");
  }
  std::vector<bool> linear(p.in_vars.size(), true);
  Program t = transpose_program(p, linear, "linear_transpose");
  std::vector<ArrayType> ct_in, ct_out;
  for (const auto& v : p.out_vars) ct_in.push_back(ct_type(v->type));
  for (const auto& it : in_types) ct_out.push_back(ct_type(it));
  std::vector<bool> used(ct_in.size(), true);
  for (size_t j = 0; j < ct_in.size(); ++j) used[j] = has_tangent_space(ct_in[j].dtype);
  return std::make_shared<const LinearMap>(std::make_shared<const Program>(std::move(t)), ct_in,
                                           p.out_types(), ct_out, used, "linear_transpose");
}

Array grad_seed(const Array& ans) {
  ArrayType t = ct_type(ans.type());
  Array one = ones_like(ans);
  return ad::coerce(one, t, "grad", "cotangent");
}

namespace {

// A one-hot array of x's type (sharding included): element k is 1.
// The standard basis of x's space stacked along a new leading dimension: [n, *shape],
// each slice of x's type (vmap maps over it; the batch dimension is unsharded).
Array basis_like(const Array& x) {
  const int64_t n = x.size();
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k * n + k)] = 1.0;
  Shape shape = x.shape();
  shape.insert(shape.begin(), n);
  Array e = array<double>(v, shape).astype(x.dtype());
  const ArrayType& t = x.type();
  ArrayType bt = t;
  bt.shape = shape;
  if (!t.sharding.mesh().empty()) {
    std::vector<PartitionEntry> entries = entries_of(t);
    entries.resize(static_cast<size_t>(t.ndim()));
    entries.insert(entries.begin(), PartitionEntry());
    bt.sharding = NamedSharding(t.sharding.mesh(), with_sets_of(entries, t.sharding.spec()));
    if (!x.impl()->var) e = device_put(e, x.sharding().with_spec(PartitionSpec(entries)));
  }
  return ad::coerce(e, bt, "jacobian", "value");
}

Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

}  // namespace

std::vector<Array> jacobian_flat(const FlatFn& ff, const std::vector<Array>& leaves, bool forward,
                                 const char* api) {
  for (const auto& x : leaves)
    if (!is_floating(x.dtype()))
      throw TypeError(std::string("[") + api + "] " + api +
                      " requires real-valued inputs (a floating input dtype: float16, bfloat16, "
                      "float32 or float64), but got " +
                      dtype_name(x.dtype()) +
                      ". Differentiate with respect to float arguments only (argnums).");
  // One vmap of the linear map over a basis (JAX's jacfwd / jacrev): no loop.
  std::vector<Array> jac;
  if (forward) {
    auto [outs, lin] = linearize_flat(ff, leaves);
    const Array& out = outs.at(0);
    FlatFn f = [lin = lin](const std::vector<Array>& t) { return (*lin)(t); };
    for (size_t i = 0; i < leaves.size(); ++i) {
      Shape shape = concat_shapes(out.shape(), leaves[i].shape());
      if (leaves[i].size() == 0 || out.size() == 0) {
        jac.push_back(zeros(shape, out.dtype()));
        continue;
      }
      std::vector<Array> t;
      std::vector<VmapAxis> axes;
      std::vector<std::string> paths;
      for (size_t j = 0; j < leaves.size(); ++j) {
        t.push_back(j == i ? basis_like(leaves[j]) : zeros_of(leaves[j].type(), leaves[j]));
        axes.push_back(j == i ? VmapAxis(0) : VmapAxis());
        paths.push_back("tangent " + std::to_string(j));
      }
      VmapFlat r = vmap_flat(f, t, axes, paths, {});
      Array cols = vmap_outputs(r, {0}, {"jacobian"}).at(0);  // [n, *out]
      jac.push_back(reshape(moveaxis(cols, 0, -1), shape));
    }
    return jac;
  }
  auto [outs, vjp] = vjp_flat(ff, leaves);
  const Array& out = outs.at(0);
  if (out.size() == 0) {
    for (const auto& x : leaves)
      jac.push_back(zeros(concat_shapes(out.shape(), x.shape()), x.dtype()));
    return jac;
  }
  FlatFn f = [vjp = vjp](const std::vector<Array>& ct) { return (*vjp)(ct); };
  Array seed = grad_seed(out);  // a cotangent of the output's type
  VmapFlat r = vmap_flat(f, {basis_like(seed)}, {VmapAxis(0)}, {"cotangent"}, {});
  std::vector<std::string> paths;
  for (size_t i = 0; i < leaves.size(); ++i) paths.push_back("cotangent " + std::to_string(i));
  std::vector<Array> rows =
      vmap_outputs(r, std::vector<VmapAxis>(leaves.size(), VmapAxis(0)), paths);  // [m, *leaf]
  for (size_t i = 0; i < leaves.size(); ++i)
    jac.push_back(reshape(rows[i], concat_shapes(out.shape(), leaves[i].shape())));
  return jac;
}

Array stop_gradient_leaf(const Array& x) {
  if (!has_tangent_space(x.dtype())) return x;
  return bind1(std::make_shared<prim::StopGradient>(), {x});
}

void check_grad_output(const Array& ans, const char* api, bool holomorphic) {
  const ArrayType& t = ans.type();
  if (!t.shape.empty()) {
    std::string hint;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::string extract = n == 1 ? std::string("extract the scalar with output.reshape(())") +
                                       (t.ndim() == 1 ? " or output[0]" : "") + ", "
                                 : "";
    throw TypeError(
        std::string("[") + api +
        "] Gradient only defined for scalar-output functions. Output had shape: " +
        shape_str(t.shape) + ". To get the gradient, " + extract +
        "reduce the output to a scalar with output.sum(), or use tsr::jacfwd / tsr::jacrev to "
        "differentiate a function with a non-scalar output.");
  }
  if (holomorphic) {
    if (!is_complex(t.dtype))
      throw TypeError(std::string("[") + api +
                      "] grad with holomorphic=True requires outputs with complex dtype, but got " +
                      dtype_name(t.dtype) + ". Return a complex value, or drop holomorphic.");
    return;
  }
  if (!is_floating(t.dtype))
    throw TypeError(std::string("[") + api +
                    "] grad requires real-valued outputs (a floating output dtype: float16, "
                    "bfloat16, float32 or float64), but got " +
                    dtype_name(t.dtype) +
                    (is_complex(t.dtype)
                         ? ". For holomorphic differentiation, pass holomorphic; otherwise "
                           "differentiate a real function of it (tsr::real, tsr::abs)."
                         : ". Convert the output with astype(float32)."));
}

void check_grad_input(const Array& x, bool allow_int, const char* api, const std::string& path,
                      bool holomorphic) {
  if (!x.valid())
    throw ValueError(std::string("[") + api + "] argument leaf " + path +
                     " is an empty Array handle. Got a default-constructed Array; expected an "
                     "array made by an op.");
  if (holomorphic && !is_complex(x.dtype()))
    throw TypeError(std::string("[") + api +
                    "] grad with holomorphic=True requires inputs with complex dtype, but got " +
                    dtype_name(x.dtype()) + (path.empty() ? "" : " at " + path) +
                    ". Convert the argument with astype(complex64), or drop holomorphic.");
  if (!is_inexact(x.dtype()) && !allow_int)
    throw TypeError(std::string("[") + api +
                    "] grad requires real- or complex-valued inputs (a floating or complex "
                    "input dtype: float16, bfloat16, float32, float64, complex64 or complex128), "
                    "but got " +
                    dtype_name(x.dtype()) + (path.empty() ? "" : " at " + path) +
                    ". If you want to use Boolean- or integer-valued inputs, use vjp or set "
                    "allow_int to True.");
}

std::vector<Array> custom_jvp_call(
    const FlatFn& f,
    const std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>&
        rule,
    const std::vector<Array>& args, const std::string& name) {
  if (!current_trace()) return f(args);
  auto prog = std::make_shared<const Program>(trace_program(f, types_of(args, "custom_jvp")));
  std::vector<Array> in = prog->consts;
  in.insert(in.end(), args.begin(), args.end());
  return detail::bind(std::make_shared<prim::CustomJvpCall>(prog, rule, name), in);
}

std::vector<Array> custom_vjp_call(
    const FlatFn& f, const FlatFn& fwd,
    const std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>&
        bwd,
    const std::vector<Array>& args, const std::vector<bool>& diff,
    const std::vector<std::string>& paths, const std::string& name) {
  if (!current_trace()) return f(args);
  auto prog = std::make_shared<const Program>(trace_program(f, types_of(args, "custom_vjp")));
  auto rules = std::make_shared<prim::CustomVjpRules>();
  rules->fwd = fwd;
  rules->bwd = bwd;
  rules->fn = name;
  rules->in_paths = paths;
  rules->diff = diff;
  std::vector<Array> in = prog->consts;
  in.insert(in.end(), args.begin(), args.end());
  return detail::bind(std::make_shared<prim::CustomVjpCall>(prog, rules), in);
}

std::vector<Array> checkpoint_call(const FlatFn& f, const std::vector<Array>& args,
                                   const std::string& name) {
  if (!current_trace()) return f(args);
  Program p = trace_program(f, types_of(args, "checkpoint"));
  std::vector<Array> in = p.consts;
  in.insert(in.end(), args.begin(), args.end());
  auto prog = std::make_shared<const Program>(lift_consts(p));
  return detail::bind(std::make_shared<prim::Checkpoint>(prog, name), in);
}

}  // namespace tsr::detail
