#include "support/check_grads.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tsr::gradcheck {

namespace {

bool is_float(const Array& a) { return a.valid() && is_floating(a.dtype()); }

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

double inner(const std::vector<Array>& a, const std::vector<Array>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!is_float(a[i]) || !is_float(b[i])) continue;
    auto x = values(a[i]), y = values(b[i]);
    for (size_t k = 0; k < x.size(); ++k) s += x[k] * y[k];
  }
  return s;
}

void expect_close(const std::vector<double>& want, const std::vector<double>& got,
                  const GradCheck& o, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    double tol = o.atol + o.rtol * std::fabs(want[i]);
    if (!(std::fabs(want[i] - got[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " expected " << want[i] << " got " << got[i];
      return;
    }
  }
}

std::vector<Array> dirs_like(const std::vector<Array>& xs, int salt) {
  std::vector<Array> d;
  for (size_t i = 0; i < xs.size(); ++i)
    d.push_back(is_float(xs[i]) ? direction_like(xs[i], salt + static_cast<int>(i)) : Array());
  return d;
}

// One cotangent per output of a vjp: a direction of the output's cotangent type for
// float outputs (zeros for the others), or only the float ones when `floats_only`.
std::vector<Array> cts_like(const std::vector<Array>& outs, const detail::LinearMap& vjp, int salt,
                            bool floats_only) {
  std::vector<Array> ct;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) {
      if (!floats_only) ct.push_back(zeros_like(outs[j]));
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

void check_jvp(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
               const std::string& what) {
  std::vector<Array> v = dirs_like(args, 1);
  auto [outs, touts] = detail::jvp_flat(f, args, v);
  ASSERT_EQ(outs.size(), touts.size()) << what;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) continue;
    EXPECT_EQ(typeof(touts[j]).str(), typeof(outs[j]).str()) << what << ": tangent type";
  }
  if (!o.fd) return;
  std::vector<Array> plus, minus;
  for (size_t i = 0; i < args.size(); ++i) {
    plus.push_back(v[i].valid() ? args[i] + v[i] * o.eps : args[i]);
    minus.push_back(v[i].valid() ? args[i] - v[i] * o.eps : args[i]);
  }
  std::vector<Array> fp = f(plus), fm = f(minus);
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) continue;
    auto a = values(fp[j]), b = values(fm[j]);
    std::vector<double> fd(a.size());
    for (size_t k = 0; k < a.size(); ++k) fd[k] = (a[k] - b[k]) / (2 * o.eps);
    expect_close(fd, values(touts[j]), o, what + ": jvp vs finite differences, output " +
                                              std::to_string(j));
  }
}

// The directional derivative of f along v by central differences.
std::vector<Array> fd_tangents(const detail::FlatFn& f, const std::vector<Array>& args,
                               const std::vector<Array>& v, double eps) {
  std::vector<Array> plus, minus;
  for (size_t i = 0; i < args.size(); ++i) {
    plus.push_back(v[i].valid() ? args[i] + v[i] * eps : args[i]);
    minus.push_back(v[i].valid() ? args[i] - v[i] * eps : args[i]);
  }
  std::vector<Array> fp = f(plus), fm = f(minus), t;
  for (size_t j = 0; j < fp.size(); ++j)
    t.push_back(is_float(fp[j]) ? (fp[j] - fm[j]) / (2 * eps) : fp[j]);
  return t;
}

void check_vjp(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
               const std::string& what) {
  std::vector<Array> v = dirs_like(args, 1);
  std::vector<Array> touts =
      o.fwd ? detail::jvp_flat(f, args, v).second : fd_tangents(f, args, v, o.eps);
  auto [outs2, vjp] = detail::vjp_flat(f, args);
  std::vector<Array> ct = cts_like(outs2, *vjp, 7, false);
  std::vector<Array> g = (*vjp)(ct);
  ASSERT_EQ(g.size(), args.size()) << what;
  for (size_t i = 0; i < args.size(); ++i)
    if (is_float(args[i])) {
      EXPECT_EQ(typeof(g[i]).str(), vjp->out_types()[i].str()) << what << ": cotangent type";
    }
  double lhs = inner(g, v), rhs = inner(ct, touts);
  double tol = o.atol + o.rtol * std::max(std::fabs(lhs), std::fabs(rhs));
  EXPECT_NEAR(lhs, rhs, tol * 10) << what << ": <vjp(ct), v> != <ct, jvp(v)>";
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

void check_grads(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
                 const std::string& what) {
  if (!o.fwd) {
    check_vjp(f, args, o, what + " [reverse mode, order 1]");
    return;
  }
  check_jvp(f, args, o, what + " [order 1]");
  if (o.rev) check_vjp(f, args, o, what + " [order 1]");
  if (o.order < 2 || ::testing::Test::HasFailure()) return;
  // Order 2: the jvp map (x, v) -> tangent, and the vjp map (x, ct) -> cotangents.
  size_t n = args.size();
  std::vector<Array> v = dirs_like(args, 3);
  detail::FlatFn fj = [&](const std::vector<Array>& a) {
    std::vector<Array> x(a.begin(), a.begin() + static_cast<long>(n)), t(n);
    size_t k = n;
    for (size_t i = 0; i < n; ++i)
      if (v[i].valid()) t[i] = a[k++];
    return detail::jvp_flat(f, x, t).second;
  };
  std::vector<Array> ja = args;
  for (const auto& d : v)
    if (d.valid()) ja.push_back(d);
  GradCheck o2 = o;
  o2.order = 1;
  o2.atol *= 10;
  o2.rtol *= 10;
  check_jvp(fj, ja, o2, what + " [order 2, jvp of jvp]");
  if (!o.rev) return;
  auto [outs, vjp0] = detail::vjp_flat(f, args);
  std::vector<Array> ct = cts_like(outs, *vjp0, 11, true);
  detail::FlatFn fv = [&](const std::vector<Array>& a) {
    std::vector<Array> x(a.begin(), a.begin() + static_cast<long>(n));
    auto [o_, m] = detail::vjp_flat(f, x);
    std::vector<Array> c;
    size_t k = n;
    for (size_t j = 0; j < o_.size(); ++j) {
      if (is_float(o_[j]))
        c.push_back(a[k++]);
      else
        c.push_back(zeros_like(o_[j]));
    }
    std::vector<Array> g = (*m)(c), r;
    for (size_t i = 0; i < n; ++i)
      if (is_float(args[i])) r.push_back(g[i]);
    return r;
  };
  std::vector<Array> va = args;
  va.insert(va.end(), ct.begin(), ct.end());
  check_jvp(fv, va, o2, what + " [order 2, jvp of vjp]");
  check_vjp(fv, va, o2, what + " [order 2, vjp of vjp]");
}

Derivatives derivatives(const detail::FlatFn& f, const std::vector<Array>& args, bool rev,
                        bool fwd) {
  Derivatives d;
  std::vector<Array> v = dirs_like(args, 1);
  if (fwd) d.tangents = detail::jvp_flat(f, args, v).second;
  if (!rev) return d;
  auto [outs, vjp] = detail::vjp_flat(f, args);
  std::vector<Array> ct = cts_like(outs, *vjp, 7, false);
  d.cotangents = (*vjp)(ct);
  return d;
}

}  // namespace tsr::gradcheck
