// Runs a case sharded, eagerly and under jit, and compares with the oracle: values,
// types, refusals, and every shard against its slice of the logical value.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

#include <cstdlib>

#include "fuzz.h"
#include "support/gather.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"

namespace fuzz {

using namespace tsr;

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Agree:
      return "agree";
    case Verdict::BothRefuse:
      return "both-refuse";
    case Verdict::TypedError:
      return "typed-error";
    case Verdict::Mismatch:
      return "MISMATCH";
    case Verdict::Untyped:
      return "UNTYPED";
    case Verdict::Crash:
      return "CRASH";
    case Verdict::Hang:
      return "HANG";
  }
  return "?";
}

/** The most derived tsr::Error class of e, or "untyped:<what>". */
std::string error_class(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const IndivisibleError&) {
    return "IndivisibleError";
  } catch (const DuplicateSpecError&) {
    return "DuplicateSpecError";
  } catch (const ValueError&) {
    return "ValueError";
  } catch (const TypeError&) {
    return "TypeError";
  } catch (const ShardingTypeError&) {
    return "ShardingTypeError";
  } catch (const NotImplementedError&) {
    return "NotImplementedError";
  } catch (const BackendError&) {
    return "BackendError";
  } catch (const CommError&) {
    // Under mpirun a CommError means the processes fell out of step: a failure.
    return process_count() > 1 ? "untyped CommError" : "CommError";
  } catch (const AssertionError&) {
    return "AssertionError";
  } catch (const IndexError&) {
    return "IndexError";
  } catch (const Error&) {
    return "Error";
  } catch (const std::exception& x) {
    return std::string("untyped ") + typeid(x).name();
  } catch (...) {
    return "untyped (not a std::exception)";
  }
}

namespace {

bool untyped(const std::string& cls) { return cls.rfind("untyped", 0) == 0; }

/** A value read back: floats as double, the rest as int64 (exact). */
struct Values {
  bool is_float = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return is_float ? f.size() : i.size(); }
};

/** A value read back from this process's devices (a shard, or a fully addressable
 *  array). */
Values read(const Array& a) {
  Values v;
  v.is_float = is_floating(a.dtype());
  if (v.is_float)
    v.f = a.to_vector<double>();
  else
    v.i = a.to_vector<int64_t>();
  return v;
}

/** A program output's whole value (every process reads it alike: test::gathered). */
Values read_global(const Array& a) { return read(test::gathered(a)); }

/** Tolerance for floats where reduction order may differ: relative to the largest
 *  magnitude of the reference, by dtype. */
double rel_tol(DType d) {
  switch (d) {
    case DType::Float16:
      return 1e-2;
    case DType::BFloat16:
      return 4e-2;
    case DType::Float32:
      return 1e-5;
    default:
      return 1e-12;
  }
}

/** The tolerance of a value of dtype dt computed by the chain: the coarsest float
 *  type among the inputs and the steps' results rounds it (a convert to f64 after a
 *  reordered f32 sum keeps the f32 error). */
double chain_tol(const Case& c, DType dt) {
  double t = rel_tol(dt);
  for (DType d : c.dtypes)
    if (is_floating(d)) t = std::max(t, rel_tol(d));
  for (const auto& in : c.inputs)
    if (is_floating(in.dtype)) t = std::max(t, rel_tol(in.dtype));
  return t;
}

/** "" when equal; else where the first difference is. */
std::string compare(const Values& ref, const Values& got, double rtol, bool tolerant,
                    bool partial) {
  if (ref.size() != got.size() || ref.is_float != got.is_float)
    return "sizes differ: " + std::to_string(ref.size()) + " vs " + std::to_string(got.size());
  if (!ref.is_float) {
    for (size_t k = 0; k < ref.i.size(); ++k)
      if (ref.i[k] != got.i[k])
        return "element " + std::to_string(k) + ": " + std::to_string(ref.i[k]) + " vs " +
               std::to_string(got.i[k]);
    return "";
  }
  double scale = 0;
  for (double x : ref.f)
    if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  double tol = tolerant ? rtol * std::max(1.0, scale) : 0;
  for (size_t k = 0; k < ref.f.size(); ++k) {
    double a = ref.f[k], b = got.f[k];
    bool same = (std::isnan(a) && std::isnan(b)) || a == b ||
                (tolerant && std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= tol);
    // Linear ops distribute over partial sums exactly in real arithmetic only:
    // x/0 or x*inf per partial can give inf + -inf = NaN where the sum gives inf.
    if (partial && !std::isfinite(a) && !std::isfinite(b)) same = true;
    if (!tolerant && !partial && a == 0 && b == 0 && std::signbit(a) != std::signbit(b))
      same = false;
    if (!same) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << k << ": " << a << " vs " << b << (tolerant ? " (tolerant)" : "");
      return os.str();
    }
  }
  return "";
}

struct Outcome {
  bool ok = false;
  std::string cls, msg;
  bool at_read = false;  // the error came while reading (a kernel), not from a rule
  Array out;
  Values vals;
  std::string shard_problem;
};

/** Every shard equals the slice of the logical value at its index. */
std::string check_shards(const Array& a, const Values& logical) {
  const ArrayType& t = typeof(a);
  if (!t.sharding.spec().unreduced().empty()) return "";  // shards hold partial values
  const Shape& gs = a.shape();
  int rank = a.ndim();
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d)
    strides[static_cast<size_t>(d)] =
        strides[static_cast<size_t>(d + 1)] * gs[static_cast<size_t>(d + 1)];
  for (const Shard& s : a.addressable_shards()) {
    Values v = read(*s.data);
    Shape ls;
    for (int d = 0; d < rank; ++d) {
      const ShardSlice& sl = s.index[static_cast<size_t>(d)];
      ls.push_back(sl.full ? gs[static_cast<size_t>(d)] : sl.stop - sl.start);
    }
    if (s.data->shape() != ls)
      return "shard on " + s.device.str() + " has shape " + str(s.data->shape()) + ", index " +
             index_str(s.index);
    std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
    int64_t n = numel(ls);
    for (int64_t k = 0; k < n; ++k) {
      int64_t rem = k, flat = 0;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t p = rem % ls[static_cast<size_t>(d)];
        rem /= ls[static_cast<size_t>(d)];
        const ShardSlice& sl = s.index[static_cast<size_t>(d)];
        flat += ((sl.full ? 0 : sl.start) + p) * strides[static_cast<size_t>(d)];
      }
      bool eq = v.is_float ? (v.f[static_cast<size_t>(k)] == logical.f[static_cast<size_t>(flat)] ||
                              (std::isnan(v.f[static_cast<size_t>(k)]) &&
                               std::isnan(logical.f[static_cast<size_t>(flat)])))
                           : v.i[static_cast<size_t>(k)] == logical.i[static_cast<size_t>(flat)];
      if (!eq)
        return "shard on " + s.device.str() + " index " + index_str(s.index) + " element " +
               std::to_string(k) + " differs from the logical value";
    }
  }
  return "";
}

void finish(Outcome& o) {
  o.vals = read_global(o.out);
  o.shard_problem = check_shards(o.out, o.vals);
}

Outcome run_sharded(Case& c, bool use_jit) {
  Outcome o;
  const MeshDef& md = meshes()[static_cast<size_t>(c.mesh)];
  // TSR_FUZZ_AUTO=1: the same chains on all-Auto meshes (the propagation pass lays
  // them out; out_shardings naming axes are refused there, so expect refusals).
  static const bool autos = std::getenv("TSR_FUZZ_AUTO") != nullptr;
  Mesh mesh = make_mesh(
      md.sizes, md.names,
      std::vector<AxisType>(md.sizes.size(), autos ? AxisType::Auto : AxisType::Explicit));
  MeshScope scope(mesh);
  Ctx ctx;
  ctx.oracle = false;
  bool reading = false;
  try {
    Ins in;
    for (const auto& i : c.inputs)
      in.push_back(device_put(i.oracle, NamedSharding(mesh, i.spec ? *i.spec : P())));
    auto body = [&c, &ctx](const Ins& ins) {
      Array x = ins[0];
      for (const auto& s : c.steps) x = s.fn(ctx, x, ins);
      return x;
    };
    if (use_jit)
      o.out = jit(body)(in);
    else
      o.out = body(in);
    reading = true;
    o.out.block_until_ready();
    finish(o);
    o.ok = true;
  } catch (...) {
    o.cls = error_class(std::current_exception());
    o.at_read = reading;
    try {
      throw;
    } catch (const std::exception& e) {
      o.msg = e.what();
    } catch (...) {
    }
  }
  return o;
}

std::string one_line(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '\t') ch = ' ';
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

std::string show(const Values& v, size_t max = 64) {
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < v.size() && k < max; ++k) {
    if (k) os << ", ";
    if (v.is_float)
      os << v.f[k];
    else
      os << v.i[k];
  }
  if (v.size() > max) os << ", ...";
  return os.str() + "]";
}

void log_outcome(std::string* log, const char* name, const Outcome& o) {
  if (!log) return;
  std::ostringstream os;
  if (o.ok)
    os << name << ": " << typeof(o.out) << " = " << show(o.vals) << "\n";
  else
    os << name << ": refused (" << o.cls << (o.at_read ? ", while reading" : "") << ") " << o.msg
       << "\n";
  if (o.ok && !o.shard_problem.empty()) os << "  shards: " << o.shard_problem << "\n";
  *log += os.str();
}

// ---- the derivative check --------------------------------------------------------

enum class Mode { Oracle, Eager, Jit };
const char* mode_name(Mode m) {
  return m == Mode::Oracle ? "oracle" : m == Mode::Eager ? "eager" : "jit";
}

/** Deterministic directions, exact in every float type: tangents are quarters in
 *  [-0.75, 0.75], the output cotangent halves in [-1, 1]. */
std::vector<double> direction(int64_t n, size_t salt, bool ct) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t e = 0; e < v.size(); ++e)
    v[e] = ct ? static_cast<double>((e * 3 + salt + 2) % 5) / 2.0 - 1.0
              : static_cast<double>((e * 5 + salt * 3 + 1) % 7) / 4.0 - 0.75;
  return v;
}

/** One derivative computation in one mode. jvp: outs = {primal, tangent}; vjp:
 *  outs = {primal, one cotangent per float input}. `want` are the types the outs
 *  must have (the tangent its primal's, a cotangent ct_type of its input's). */
struct Phase {
  bool ok = false;
  std::string cls, msg;
  bool at_read = false;
  std::vector<Array> outs;
  std::vector<ArrayType> want;
  std::vector<Values> vals;
  std::string shard_problem;
};

/** The chain as a function of the float inputs (fidx), the others held fixed. */
detail::FlatFn chain_fn(const Case& c, const Ctx& ctx, const Ins& ins,
                        const std::vector<size_t>& fidx) {
  return [&c, ctx, ins, fidx](const std::vector<Array>& fl) {
    Ins a = ins;
    for (size_t k = 0; k < fidx.size(); ++k) a[fidx[k]] = fl[k];
    Array x = a[0];
    for (const auto& s : c.steps) x = s.fn(ctx, x, a);
    return std::vector<Array>{x};
  };
}

/** The derivative computations: jvp, linearize (its linear map applied to the same
 *  tangents: partial_eval's split), vjp. */
enum class Kind { Jvp, Lin, Vjp };

/** One derivative of the chain in mode m. `out_t` is the primal output's type in this
 *  mode (the output cotangent is built as ct_type of it). */
Phase run_phase(const Case& c, Mode m, Kind kind, const ArrayType& out_t) {
  bool fwd = kind != Kind::Vjp;
  Phase o;
  const MeshDef& md = meshes()[static_cast<size_t>(c.mesh)];
  std::optional<Mesh> mesh;
  std::optional<MeshScope> scope;
  if (m != Mode::Oracle) {
    // The primal run's axis types (TSR_FUZZ_AUTO: all Auto), so `out_t` is comparable.
    static const bool autos = std::getenv("TSR_FUZZ_AUTO") != nullptr;
    mesh = make_mesh(
        md.sizes, md.names,
        std::vector<AxisType>(md.sizes.size(), autos ? AxisType::Auto : AxisType::Explicit));
    scope.emplace(*mesh);
  }
  Ctx ctx;
  ctx.oracle = m == Mode::Oracle;
  bool reading = false;
  try {
    Ins ins;
    std::vector<size_t> fidx;
    std::vector<Array> dirs;  // tangents (fwd) or the output cotangent (vjp)
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      const InputDef& i = c.inputs[k];
      std::optional<NamedSharding> sh;
      if (mesh) sh = NamedSharding(*mesh, i.spec ? *i.spec : P());
      ins.push_back(sh ? device_put(i.oracle, *sh) : i.oracle);
      if (!is_floating(i.dtype)) continue;
      fidx.push_back(k);
      if (fwd) {
        Array t = array<double>(direction(numel(i.shape), k, false), i.shape).astype(i.dtype);
        dirs.push_back(sh ? device_put(t, *sh) : t);
      }
    }
    if (!fwd) {
      ArrayType ct_t = detail::ct_type(out_t);
      Array ct =
          array<double>(direction(numel(out_t.shape), 0, true), out_t.shape).astype(out_t.dtype);
      if (mesh)
        ct = device_put(ct, NamedSharding(*mesh, PartitionSpec(ct_t.sharding.spec().entries())));
      dirs.push_back(detail::ad::coerce(ct, ct_t, "fuzz", "cotangent"));
    }
    size_t n = ins.size();
    auto body = [&c, &ctx, &fidx, kind, n](const Ins& a) {
      Ins in(a.begin(), a.begin() + static_cast<long>(n));
      std::vector<Array> fl, d(a.begin() + static_cast<long>(n), a.end());
      for (size_t k : fidx) fl.push_back(in[k]);
      detail::FlatFn f = chain_fn(c, ctx, in, fidx);
      if (kind == Kind::Jvp) {
        auto [outs, tans] = detail::jvp_flat(f, fl, d);
        return std::vector<Array>{outs.at(0), tans.at(0)};
      }
      if (kind == Kind::Lin) {
        auto [outs, map] = detail::linearize_flat(f, fl);
        return std::vector<Array>{outs.at(0), (*map)(d).at(0)};
      }
      auto [outs, map] = detail::vjp_flat(f, fl);
      std::vector<Array> r = {outs.at(0)};
      for (const auto& g : (*map)(d)) r.push_back(g);
      return r;
    };
    Ins args = ins;
    args.insert(args.end(), dirs.begin(), dirs.end());
    o.outs = m == Mode::Jit ? jit(body)(args) : body(args);
    o.want.push_back(out_t);
    if (fwd)
      o.want.push_back(out_t);
    else
      for (size_t k : fidx) o.want.push_back(detail::ct_type(ins[k].type()));
    reading = true;
    for (auto& a : o.outs) {
      a.block_until_ready();
      o.vals.push_back(read_global(a));
      if (o.shard_problem.empty()) o.shard_problem = check_shards(a, o.vals.back());
    }
    o.ok = true;
  } catch (...) {
    o.cls = error_class(std::current_exception());
    o.at_read = reading;
    try {
      throw;
    } catch (const std::exception& e) {
      o.msg = e.what();
    } catch (...) {
    }
  }
  return o;
}

void log_phase(std::string* log, const char* what, Mode m, const Phase& p) {
  if (!log) return;
  std::ostringstream os;
  os << what << " " << mode_name(m) << ": ";
  if (!p.ok) {
    os << "refused (" << p.cls << (p.at_read ? ", while reading" : "") << ") " << p.msg << "\n";
  } else {
    os << "\n";
    for (size_t k = 0; k < p.outs.size(); ++k)
      os << "  " << (k == 0 ? "primal" : "d" + std::to_string(k)) << ": " << typeof(p.outs[k])
         << " = " << show(p.vals[k]) << "\n";
    if (!p.shard_problem.empty()) os << "  shards: " << p.shard_problem << "\n";
  }
  *log += os.str();
}

/** The verdict on refusals, shared by the primal and derivative judges: a message no
 *  typed Error carries, eager and jit disagreeing, a kernel refusing, or an agreed
 *  refusal; nullopt when oracle, eager and jit all accept. */
template <class R>
std::optional<Result> judge_refusals(bool o_ok, const std::string& o_cls, const std::string& o_msg,
                                     const R& e, const R& j,
                                     const std::function<Result(Verdict, std::string)>& res) {
  if (!o_ok && untyped(o_cls)) return res(Verdict::Untyped, "oracle: " + o_cls + ": " + o_msg);
  if (!e.ok && untyped(e.cls)) return res(Verdict::Untyped, "eager: " + e.cls + ": " + e.msg);
  if (!j.ok && untyped(j.cls)) return res(Verdict::Untyped, "jit: " + j.cls + ": " + j.msg);
  if (e.ok != j.ok)
    return res(Verdict::Mismatch, std::string("eager ") + (e.ok ? "accepts" : "refuses") +
                                      ", jit " + (j.ok ? "accepts" : "refuses") + ": " +
                                      (e.ok ? j.cls + ": " + j.msg : e.cls + ": " + e.msg));
  if (!e.ok) {
    if (e.cls != j.cls)
      return res(Verdict::Mismatch, "eager refuses with " + e.cls + ", jit with " + j.cls + ": " +
                                        e.msg + " | " + j.msg);
    if (e.at_read)
      return res(Verdict::Mismatch,
                 "eager error raised by a kernel, not by a rule: " + e.cls + ": " + e.msg);
    return res(o_ok ? Verdict::TypedError : Verdict::BothRefuse, e.cls + ": " + e.msg);
  }
  if (!o_ok)
    return res(Verdict::Mismatch,
               "oracle refuses (" + o_cls + ": " + o_msg + ") but sharded accepts");
  return std::nullopt;
}

/** The verdict of one phase (jvp or vjp) over the three modes; `tolerant_primal` and
 *  `partial` are the primal comparison's flags (derivatives always compare with a
 *  tolerance: their programs reduce). */
Result judge_phase(const Case& c, const char* what, const Phase& o, const Phase& e, const Phase& j,
                   bool tolerant_primal, bool partial, bool bits) {
  auto res = [&](Verdict v, const std::string& d) {
    return Result{v, one_line(std::string(what) + ": " + d), ""};
  };
  if (auto r = judge_refusals(o.ok, o.cls, o.msg, e, j, res)) return *r;
  for (size_t k = 0; k < e.outs.size(); ++k) {
    std::string name = k == 0 ? "primal" : std::string(what) + " output " + std::to_string(k);
    const ArrayType &to = typeof(o.outs[k]), &te = typeof(e.outs[k]), &tj = typeof(j.outs[k]);
    if (!(to == o.want[k]))
      return res(Verdict::Mismatch,
                 name + " type: oracle " + to.str() + ", expected " + o.want[k].str());
    if (!(te == e.want[k]))
      return res(Verdict::Mismatch,
                 name + " type: eager " + te.str() + ", expected " + e.want[k].str());
    if (!(tj == j.want[k]))
      return res(Verdict::Mismatch,
                 name + " type: jit " + tj.str() + ", expected " + j.want[k].str());
    if (bits) continue;
    // Derivatives sum partial results (transposed broadcasts and dots) in another
    // order when sharded: a tolerance, and (as for unreduced values) a partial that
    // overflows may turn the oracle's inf into another non-finite value.
    // A derivative element can be a sum of many terms that cancel (the cotangent of a
    // broadcast scalar sums over the whole output), each partial sum rounded to the
    // value's type: the tolerance grows with the square root of the terms per element.
    bool tol = k == 0 ? tolerant_primal && is_floating(to.dtype) : true;
    bool part = k == 0 ? partial : true;
    double rt = chain_tol(c, to.dtype);
    if (k > 0) {
      double terms = static_cast<double>(numel(typeof(c.oracle_out).shape));
      for (const auto& in : c.inputs) terms = std::max(terms, static_cast<double>(numel(in.shape)));
      rt *= std::sqrt(std::max(1.0, terms / std::max<double>(1, numel(to.shape))));
    }
    std::string d = compare(o.vals[k], e.vals[k], rt, tol, part);
    if (!d.empty()) return res(Verdict::Mismatch, name + ", eager vs oracle: " + d);
    d = compare(o.vals[k], j.vals[k], rt, tol, part);
    if (!d.empty()) return res(Verdict::Mismatch, name + ", jit vs oracle: " + d);
  }
  if (!e.shard_problem.empty()) return res(Verdict::Mismatch, "eager " + e.shard_problem);
  if (!j.shard_problem.empty()) return res(Verdict::Mismatch, "jit " + j.shard_problem);
  return res(Verdict::Agree, "");
}

bool failing(Verdict v) {
  return v == Verdict::Mismatch || v == Verdict::Untyped || v == Verdict::Crash ||
         v == Verdict::Hang;
}

/** Derivatives of an agreeing case: jvp, linearize and vjp in the three modes. */
Result ad_check(Case& c, const ArrayType& te, std::string* log, bool tolerant, bool partial,
                bool bits) {
  std::vector<Result> rs;
  bool fwd_expected = false;
  for (Kind k : {Kind::Jvp, Kind::Lin, Kind::Vjp}) {
    const char* what = k == Kind::Jvp ? "jvp" : k == Kind::Lin ? "linearize" : "vjp";
    Phase o = run_phase(c, Mode::Oracle, k, typeof(c.oracle_out));
    Phase e = run_phase(c, Mode::Eager, k, te);
    Phase j = run_phase(c, Mode::Jit, k, te);
    log_phase(log, what, Mode::Oracle, o);
    log_phase(log, what, Mode::Eager, e);
    log_phase(log, what, Mode::Jit, j);
    Result r =
        judge_phase(c, (std::string("ad ") + what).c_str(), o, e, j, tolerant, partial, bits);
    if (failing(r.verdict)) return Result{r.verdict, r.detail, "fail"};
    // Forward mode through custom_vjp is refused (as JAX): expected, not a rule gap.
    if (k != Kind::Vjp && c.custom_vjp && r.verdict != Verdict::Agree &&
        e.msg.find("forward-mode autodiff (jvp) to a custom_vjp") != std::string::npos) {
      fwd_expected = true;
      r.verdict = Verdict::Agree;
    }
    rs.push_back(r);
  }
  for (const Result& x : rs)
    if (x.verdict != Verdict::Agree)
      return Result{x.verdict, x.detail,
                    x.verdict == Verdict::TypedError ? "typed-error" : "both-refuse"};
  return Result{Verdict::Agree, te.str(), fwd_expected ? "vjp-only" : "agree"};
}

}  // namespace

Result run_case(Case& c, std::string* log, double ad_rate) {
  Values ref;
  if (log) {
    *log += c.program();
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      Values v;
      v.is_float = true;
      v.f = c.inputs[k].values;
      *log += "  in" + std::to_string(k) + " values: " + show(v) + "\n";
    }
  }
  if (c.oracle_ok) {
    try {
      ref = read_global(c.oracle_out);
    } catch (...) {
      c.oracle_ok = false;
      c.oracle_err_class = error_class(std::current_exception());
    }
  }
  if (log) {
    if (c.oracle_ok)
      *log += "oracle: " + typeof(c.oracle_out).str() + " = " + show(ref) + "\n";
    else
      *log += "oracle: refused (" + c.oracle_err_class + ") " + c.oracle_err + "\n";
  }
  Outcome e = run_sharded(c, false);
  log_outcome(log, "eager", e);
  Outcome j = run_sharded(c, true);
  log_outcome(log, "jit", j);

  auto res = [&](Verdict v, std::string d) { return Result{v, one_line(d), ""}; };
  if (auto r = judge_refusals(c.oracle_ok, c.oracle_err_class, c.oracle_err, e, j, res)) return *r;
  const ArrayType& to = typeof(c.oracle_out);
  const ArrayType& te = typeof(e.out);
  const ArrayType& tj = typeof(j.out);
  if (te.shape != to.shape || te.dtype != to.dtype || te.weak != to.weak)
    return res(Verdict::Mismatch, "type: oracle " + to.str() + ", eager " + te.str());
  if (!(te == tj)) return res(Verdict::Mismatch, "type: eager " + te.str() + ", jit " + tj.str());
  bool tolerant = c.reorders && is_floating(to.dtype);
  // Unreduced values are sums of partials: the sign of zero may change (-0 + 0 = +0)
  // and IEEE specials may combine to another non-finite value. A reduced value's
  // cotangent is unreduced too, its seed zero on all but one device, so a derivative
  // by inf is NaN there: JAX 0.10 gives the same NaN (vjp of -inf * x at x reduced).
  bool partial = c.program().find("reduced") != std::string::npos;
  // Reinterpreting the bits of a value that legitimately differs in its last
  // bits (a reordered sum) makes any difference possible: compare types only.
  const std::string prog = c.program();
  bool bits = c.reorders && (prog.find("bitcast_convert_type(") != std::string::npos ||
                             prog.find(".view(") != std::string::npos);
  double rt = chain_tol(c, to.dtype);
  std::string d = bits ? "" : compare(ref, e.vals, rt, tolerant, partial);
  if (!d.empty()) return res(Verdict::Mismatch, "eager vs oracle: " + d);
  d = bits ? "" : compare(ref, j.vals, rt, tolerant, partial);
  if (!d.empty()) return res(Verdict::Mismatch, "jit vs oracle: " + d);
  if (!e.shard_problem.empty()) return res(Verdict::Mismatch, "eager " + e.shard_problem);
  if (!j.shard_problem.empty()) return res(Verdict::Mismatch, "jit " + j.shard_problem);
  // The derivative check: drawn per case (its own stream: the program does not depend on it).
  bool float_in = false;
  for (const auto& in : c.inputs) float_in = float_in || is_floating(in.dtype);
  Rng ar{c.seed * 0xA24BAED4963EE407ULL ^ static_cast<uint64_t>(c.index) * 0x9FB21C651E98DF25ULL};
  ar.next();
  if (float_in && is_floating(to.dtype) && ar.coin(ad_rate))
    return ad_check(c, te, log, tolerant, partial, bits);
  return res(Verdict::Agree, te.str());
}

}  // namespace fuzz
