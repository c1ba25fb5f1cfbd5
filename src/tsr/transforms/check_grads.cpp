// check_grads (include/tsr/check_grads.h): jvp against central differences, vjp
// against the jvp by the dot-product identity, recursively up to `order` (JAX's
// jax._src.public_test_util, written for Tessera's flat transforms and types).
#include "tsr/check_grads.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/multihost.h"
#include "tsr/ops.h"
#include "tsr/transforms/ad.h"

namespace tsr::detail {
namespace {

bool is_float(const Array& a) { return a.valid() && is_floating(a.dtype()); }

bool has(const CheckGradsOptions& o, GradMode m) {
  return std::find(o.modes.begin(), o.modes.end(), m) != o.modes.end();
}

// JAX's default_gradient_tolerance for the dtype.
double default_tol(DType t) {
  switch (t) {
    case DType::BFloat16:
      return 1e-1;
    case DType::Float16:
      return 1e-2;
    case DType::Float32:
      return 2e-3;
    default:
      return 1e-5;
  }
}

[[noreturn]] void fail(const std::string& what, const std::string& msg) {
  throw AssertionError("[check_grads] " + what + ": " + msg);
}

// The logical values (an unreduced array reduced), as doubles. Under many processes an
// array spanning them is gathered (a collective of its mesh's processes, which all get
// here alike); one held only by other processes reads as empty, so a process without
// a device of the mesh checks nothing, as it holds nothing.
using Host = std::vector<double>;
Host host(const Array& a) {
  if (a.is_fully_addressable()) return a.to_vector<double>();
  for (const Device& d : a.sharding().concrete_mesh()->devices())
    if (d.process_index() == process_index())
      return multihost::process_allgather(a, true).to_vector<double>();
  return {};
}

// assert_allclose: |got - want| <= atol + rtol * |want| elementwise.
void check_close(const Host& a, const Array& got, DType dt, const CheckGradsOptions& o,
                 const std::string& what) {
  double atol = o.atol ? *o.atol : default_tol(dt);
  double rtol = o.rtol ? *o.rtol : default_tol(dt);
  Host b = host(got);
  if (a.size() != b.size())
    fail(what, "the sizes differ. Got " + typeof(got).str() + " with " + std::to_string(b.size()) +
                   " elements; expected " + std::to_string(a.size()) + ".");
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;  // infinities of one sign
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(a[i]))) {
      std::ostringstream os;
      os.precision(17);
      os << "not close at element " << i << " of " << typeof(got).str() << ". Got " << b[i]
         << "; expected " << a[i] << " (atol=" << atol << ", rtol=" << rtol << ").";
      fail(what, os.str());
    }
  }
}

void check_type(const ArrayType& want, const Array& got, const std::string& what) {
  if (typeof(got).str() != want.str())
    fail(what, "the type differs. Got " + typeof(got).str() + "; expected " + want.str() + ".");
}

std::vector<Array> dirs_like(const std::vector<Array>& xs, int salt) {
  std::vector<Array> d;
  for (size_t i = 0; i < xs.size(); ++i)
    d.push_back(is_float(xs[i]) ? direction_like(xs[i], salt + static_cast<int>(i)) : Array());
  return d;
}

// One cotangent per output, of the vjp's cotangent type (zeros for non-float outputs).
std::vector<Array> cts_like(const std::vector<Array>& outs, const LinearMap& vjp, int salt) {
  std::vector<Array> ct;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) {
      ct.push_back(zeros_like(outs[j]));
      continue;
    }
    Array c = direction_like(outs[j], salt + static_cast<int>(j));
    ArrayType want = vjp.in_types()[j];
    if (!want.sharding.mesh().empty() && !(typeof(c).sharding == want.sharding))
      c = reshard(c, want.sharding);
    ct.push_back(c);
  }
  return ct;
}

// JAX's numerical_jvp: (f(x + eps v) - f(x - eps v)) / 2 eps, on the logical values (so
// outputs of any type, unreduced ones included, difference alike); empty for non-float
// outputs.
std::vector<Host> numerical_jvp(const FlatFn& f, const std::vector<Array>& args,
                                const std::vector<Array>& v, double eps) {
  std::vector<Array> plus, minus;
  for (size_t i = 0; i < args.size(); ++i) {
    plus.push_back(v[i].valid() ? args[i] + v[i] * eps : args[i]);
    minus.push_back(v[i].valid() ? args[i] - v[i] * eps : args[i]);
  }
  std::vector<Array> fp = f(plus), fm = f(minus);
  std::vector<Host> t(fp.size());
  for (size_t j = 0; j < fp.size(); ++j) {
    if (!is_float(fp[j])) continue;
    Host a = host(fp[j]), b = host(fm[j]);
    t[j].resize(a.size());
    for (size_t k = 0; k < a.size(); ++k) t[j][k] = (a[k] - b[k]) / (2 * eps);
  }
  return t;
}

double inner(const std::vector<Host>& a, const std::vector<Host>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (size_t k = 0; k < a[i].size() && k < b[i].size(); ++k) s += a[i][k] * b[i][k];
  return s;
}

std::vector<Host> floats(const std::vector<Array>& xs) {
  std::vector<Host> h(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    if (is_float(xs[i])) h[i] = host(xs[i]);
  return h;
}

void check_jvp(const FlatFn& f, const std::vector<Array>& args, const CheckGradsOptions& o,
               const std::string& what) {
  std::vector<Array> v = dirs_like(args, 1);
  auto [outs, touts] = jvp_flat(f, args, v);
  std::vector<Array> want = f(args);
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) continue;
    check_close(host(want[j]), outs[j], outs[j].dtype(), o, what + " primal " + std::to_string(j));
    check_type(typeof(outs[j]), touts[j], what + " tangent " + std::to_string(j));
  }
  if (!o.finite_differences) return;
  std::vector<Host> fd = numerical_jvp(f, args, v, o.eps);
  for (size_t j = 0; j < outs.size(); ++j)
    if (is_float(outs[j]))
      check_close(fd[j], touts[j], outs[j].dtype(), o, what + " tangent " + std::to_string(j));
}

void check_vjp(const FlatFn& f, const std::vector<Array>& args, const CheckGradsOptions& o,
               const std::string& what) {
  std::vector<Array> v = dirs_like(args, 1);
  // Against the jvp when it is checked too (it was compared with differences), else
  // against differences (JAX's rev mode).
  std::vector<Host> touts = has(o, GradMode::Fwd) ? floats(jvp_flat(f, args, v).second)
                                                  : numerical_jvp(f, args, v, o.eps);
  auto [outs, vjp] = vjp_flat(f, args);
  std::vector<Array> ct = cts_like(outs, *vjp, 7);
  std::vector<Array> g = (*vjp)(ct);
  if (g.size() != args.size())
    fail(what, "the vjp returned " + std::to_string(g.size()) + " cotangents. Got that; expected " +
                   std::to_string(args.size()) + ", one per argument leaf.");
  DType dt = DType::Float64;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_float(args[i])) continue;
    check_type(vjp->out_types()[i], g[i], what + " cotangent " + std::to_string(i));
    if (itemsize(args[i].dtype()) < itemsize(dt)) dt = args[i].dtype();
  }
  double lhs = inner(floats(g), floats(v)), rhs = inner(floats(ct), touts);
  double atol = o.atol ? *o.atol : default_tol(dt), rtol = o.rtol ? *o.rtol : default_tol(dt);
  // The two inner products sum many terms: the tolerance scales with their size.
  double tol = 10 * (atol + rtol * std::max(std::fabs(lhs), std::fabs(rhs)));
  if (!(std::fabs(lhs - rhs) <= tol)) {
    std::ostringstream os;
    os.precision(17);
    os << "cotangent projection <vjp(ct), v> = " << lhs << " differs from <ct, jvp(v)> = " << rhs
       << " by more than " << tol << ".";
    fail(what, os.str());
  }
}

void check_rec(const FlatFn& f, const std::vector<Array>& args, int order,
               const CheckGradsOptions& o, const std::string& of) {
  const size_t n = args.size();
  if (has(o, GradMode::Fwd)) {
    std::string msg = of.empty() ? "JVP" : "JVP of " + of;
    check_jvp(f, args, o, msg);
    if (order > 1) {
      // The jvp map (x, v) -> (f(x), tangent), checked at x and a direction v.
      std::vector<Array> v = dirs_like(args, 3);
      FlatFn fj = [f, v, n](const std::vector<Array>& a) {
        std::vector<Array> x(a.begin(), a.begin() + static_cast<long>(n)), t(n);
        size_t k = n;
        for (size_t i = 0; i < n; ++i)
          if (v[i].valid()) t[i] = a[k++];
        auto [p, tan] = jvp_flat(f, x, t);
        p.insert(p.end(), tan.begin(), tan.end());
        return p;
      };
      std::vector<Array> ja = args;
      for (const auto& d : v)
        if (d.valid()) ja.push_back(d);
      check_rec(fj, ja, order - 1, o, msg);
    }
  }
  if (has(o, GradMode::Rev)) {
    std::string msg = of.empty() ? "VJP" : "VJP of " + of;
    check_vjp(f, args, o, msg);
    if (order > 1) {
      // The vjp map (x, ct) -> cotangents of the float inputs, at x and a cotangent.
      auto [outs, vjp0] = vjp_flat(f, args);
      std::vector<Array> ct = cts_like(outs, *vjp0, 11);
      std::vector<bool> fl_out, fl_in;
      for (const auto& y : outs) fl_out.push_back(is_float(y));
      for (const auto& x : args) fl_in.push_back(is_float(x));
      FlatFn fv = [f, n, fl_out, fl_in](const std::vector<Array>& a) {
        std::vector<Array> x(a.begin(), a.begin() + static_cast<long>(n));
        auto [o_, m] = vjp_flat(f, x);
        std::vector<Array> c;
        size_t k = n;
        for (size_t j = 0; j < o_.size(); ++j) c.push_back(fl_out[j] ? a[k++] : zeros_like(o_[j]));
        std::vector<Array> g = (*m)(c), r;
        for (size_t i = 0; i < n; ++i)
          if (fl_in[i]) r.push_back(g[i]);
        return r;
      };
      std::vector<Array> va = args;
      for (size_t j = 0; j < ct.size(); ++j)
        if (fl_out[j]) va.push_back(ct[j]);
      check_rec(fv, va, order - 1, o, msg);
    }
  }
}

}  // namespace

Array direction_like(const Array& x, int salt) {
  int64_t n = x.size();
  std::vector<double> v(static_cast<size_t>(n));
  uint32_t s = 2166136261u ^ static_cast<uint32_t>(salt * 16777619);
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[static_cast<size_t>(i)] = static_cast<double>(s >> 8) / static_cast<double>(1u << 24) * 2 - 1;
  }
  Array a = array<double>(v, x.shape());
  a = a.astype(x.dtype());
  NamedSharding s2 = x.sharding();
  if (!s2.spec().unreduced().empty() || !s2.spec().reduced().empty())
    s2 = s2.with_spec(PartitionSpec(s2.spec().entries()));
  a = device_put(a, s2);
  if (typeof(x).sharding.mesh().empty() || typeof(x).sharding == typeof(a).sharding) return a;
  return reshard(a, typeof(x).sharding);
}

void check_grads_flat(const FlatFn& f, const std::vector<Array>& args, int order,
                      const CheckGradsOptions& o) {
  if (order < 1)
    throw ValueError("[check_grads] order must be at least 1. Got order=" + std::to_string(order) +
                     "; expected 1 (first derivatives) or more.");
  for (const auto& m : o.modes)
    if (m != GradMode::Fwd && m != GradMode::Rev)
      throw ValueError("[check_grads] unknown mode " + std::to_string(static_cast<int>(m)) +
                       ". Got that; expected GradMode::Fwd or GradMode::Rev.");
  check_rec(f, args, order, o, "");
}

}  // namespace tsr::detail
