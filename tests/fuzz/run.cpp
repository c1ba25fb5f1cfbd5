// Runs a case sharded, eagerly and under jit, and compares with the oracle: values,
// types, refusals, and every shard against its slice of the logical value.
#include <cmath>
#include <cstring>
#include <sstream>

#include "fuzz.h"

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
    return "CommError";
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

Values read(const Array& a) {
  Values v;
  v.is_float = is_floating(a.dtype());
  if (v.is_float)
    v.f = a.to_vector<double>();
  else
    v.i = a.to_vector<int64_t>();
  return v;
}

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

/** "" when equal; else where the first difference is. */
std::string compare(const Values& ref, const Values& got, DType dt, bool tolerant, bool partial) {
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
  double tol = tolerant ? rel_tol(dt) * std::max(1.0, scale) : 0;
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
  o.vals = read(o.out);
  o.shard_problem = check_shards(o.out, o.vals);
}

Outcome run_sharded(Case& c, bool use_jit) {
  Outcome o;
  const MeshDef& md = meshes()[static_cast<size_t>(c.mesh)];
  Mesh mesh = make_mesh(md.sizes, md.names);
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

}  // namespace

Result run_case(Case& c, std::string* log) {
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
      ref = read(c.oracle_out);
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

  auto res = [&](Verdict v, std::string d) { return Result{v, one_line(d)}; };
  if (!c.oracle_ok && untyped(c.oracle_err_class))
    return res(Verdict::Untyped, "oracle: " + c.oracle_err_class + ": " + c.oracle_err);
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
    return res(c.oracle_ok ? Verdict::TypedError : Verdict::BothRefuse, e.cls + ": " + e.msg);
  }
  if (!c.oracle_ok)
    return res(Verdict::Mismatch, "oracle refuses (" + c.oracle_err_class + ": " + c.oracle_err +
                                      ") but sharded accepts");
  const ArrayType& to = typeof(c.oracle_out);
  const ArrayType& te = typeof(e.out);
  const ArrayType& tj = typeof(j.out);
  if (te.shape != to.shape || te.dtype != to.dtype || te.weak != to.weak)
    return res(Verdict::Mismatch, "type: oracle " + to.str() + ", eager " + te.str());
  if (!(te == tj)) return res(Verdict::Mismatch, "type: eager " + te.str() + ", jit " + tj.str());
  bool tolerant = c.reorders && is_floating(to.dtype);
  // Unreduced values are sums of partials: the sign of zero may change (-0 + 0 = +0)
  // and IEEE specials may combine to another non-finite value.
  bool partial = c.program().find("unreduced") != std::string::npos;
  // Reinterpreting the bits of a value that legitimately differs in its last
  // bits (a reordered sum) makes any difference possible: compare types only.
  const std::string prog = c.program();
  bool bits = c.reorders && (prog.find("bitcast_convert_type(") != std::string::npos ||
                             prog.find(".view(") != std::string::npos);
  std::string d = bits ? "" : compare(ref, e.vals, to.dtype, tolerant, partial);
  if (!d.empty()) return res(Verdict::Mismatch, "eager vs oracle: " + d);
  d = bits ? "" : compare(ref, j.vals, to.dtype, tolerant, partial);
  if (!d.empty()) return res(Verdict::Mismatch, "jit vs oracle: " + d);
  if (!e.shard_problem.empty()) return res(Verdict::Mismatch, "eager " + e.shard_problem);
  if (!j.shard_problem.empty()) return res(Verdict::Mismatch, "jit " + j.shard_problem);
  return res(Verdict::Agree, te.str());
}

}  // namespace fuzz
