// Programs the differential fuzzer found refused where JAX runs (issue 23, items 18-22):
// checkpoint around a cond under grad, reduced operands against sharded ones, jacrev at
// a reduced input, a factor reduced on other axes than the other is unreduced on, and
// keepdims with an out_sharding. Their JAX twins are tests/reference/cases_refused.*.
#include <gtest/gtest.h>

#include <cmath>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array ramp(const Shape& s) { return iota(s, float64) * 0.25 - 0.5; }

void expect_near(const Array& want, const Array& got, double tol = 1e-12) {
  auto a = want.to_vector<double>(), b = got.to_vector<double>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(a[i]))) << i;
}

Array cond_of(const Array& x) {
  return cond(
      sum(x) > 0.0, [](const Array& y) { return y * 2.0; }, [](const Array& y) { return y - 1.0; },
      x);
}

// ---- item 18 -------------------------------------------------------------------------

// The backward pass of a checkpoint recomputes the jvp of the cond; its primal outputs
// (read by sin's and abs's derivatives) must be evaluated forward, not transposed.
TEST(RefusedTransforms, GradOfCheckpointThroughCond) {
  std::vector<std::function<Array(const Array&)>> fs = {
      [](const Array& x) { return sum(sin(cond_of(x))); },
      [](const Array& x) { return abs(sum(cond_of(x))); },
      [](const Array& x) { return sum(square(cond_of(cond_of(x)))); },
      [](const Array& x) { return sum(exp(cond_of(x * x))); }};
  for (Array x : {ramp({2, 3}), -ramp({2, 3})})
    for (size_t k = 0; k < fs.size(); ++k) {
      SCOPED_TRACE(k);
      Array want = grad(fs[k])(x);
      expect_near(want, grad(checkpoint(fs[k]))(x));
      expect_near(want, jit(grad(checkpoint(fs[k])))(x));
      auto [y, f_vjp] = vjp(checkpoint(fs[k]), x);
      expect_near(want, std::get<0>(f_vjp(ones({}, float64))));
    }
}

// A while_loop's split recomputes the whole loop: the backward pass must not split it
// again and again, and reverse mode through it is refused as without checkpoint.
TEST(RefusedTransforms, GradOfCheckpointThroughWhileIsRefused) {
  auto f = [](const Array& x) {
    auto r = while_loop([](const std::pair<Array, Array>& c) { return c.first < 2; },
                        [](const std::pair<Array, Array>& c) {
                          return std::make_pair(c.first + 1, c.second * 1.5);
                        },
                        std::make_pair(full({}, 0.0, int32), x));
    return sum(sin(r.second));
  };
  EXPECT_HAS(error_of<ValueError>([&] { grad(checkpoint(f))(ramp({3})); }),
             "Reverse-mode differentiation does not work for while_loop");
  Array t = ones({3}, float64);
  expect_near(jvp(f, ramp({3}), t).second, jvp(checkpoint(f), ramp({3}), t).second);
}

// scan(checkpoint(body)), the documented recompute-per-step pattern, with a cond whose
// result the body uses nonlinearly.
TEST(RefusedTransforms, GradOfScanOfCheckpointedBodyWithCond) {
  auto body = [](const Array& carry, const Array& xi) {
    Array y = sin(cond(
        xi > 0.0, [](const Array& a) { return a * 2.0; }, [](const Array& a) { return a * a; },
        carry));
    return std::make_pair(y, sum(abs(y)));
  };
  auto loss = [&](auto b) {
    return [b](const Array& x) {
      auto [c, ys] = scan(b, index(x, {0}), index(x, {all, 0}));
      return sum(c) + sum(ys);
    };
  };
  Array x = ramp({4, 3});
  Array want = grad(loss(body))(x);
  expect_near(want, grad(loss(checkpoint(body)))(x));
  expect_near(want, jit(grad(loss(checkpoint(body))))(x));
}

// ---- item 19 -------------------------------------------------------------------------

TEST(RefusedTransforms, ReducedInputAgainstAnOperandShardedOnIt) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = device_put(ramp({8, 3}), P("a", nullptr));
  Array w = reshard(ones({1, 3}, float64), P(nullptr, nullptr, Reduced{{"a"}}));
  for (auto f : {+[](const Array&x, const Array&w) { return x * w; },
                 +[](const Array&x, const Array&w) { return w + x; }}) {
    std::string e = error_of<ShardingTypeError>([&] { f(x, w); });
    EXPECT_HAS(e,
               "Inputs cannot be sharded/varying on the same axes that another input is "
               "reduced on");
    EXPECT_HAS(e, "Got input type: f64[8@a,3] and reduced spec: {'a'}");
    error_of<ShardingTypeError>([&] { jit(f)(x, w); });
  }
  // Two different reduced sets.
  Array wb = reshard(ones({1, 3}, float64), P(nullptr, nullptr, Reduced{{"b"}}));
  EXPECT_HAS(error_of<ShardingTypeError>([&] { w* wb; }),
             "All inputs should be reduced across the same mesh axes. Got specs: {'a'}, {'b'}");
  // Replicated over the reduced axes stays accepted (Tessera's extension): the result
  // is reduced and the replicated operand's cotangent gets reduced by the pass.
  Array xr = device_put(ramp({8, 3}), P("b", nullptr));
  EXPECT_EQ(typeof(xr * w).str(), "f64[8@b,3]{R:a}");
  Array g = grad([&](const Array& w) { return sum(xr * w); })(w);
  EXPECT_EQ(typeof(g).str(), "f64[1,3]{U:a}");
  expect_near(sum(ramp({8, 3}), 0, {.keepdims = true}), reshard(g, P()));
}

// dot_general propagates no reduced set (as JAX's): v sharded over the axis u is reduced
// on contracts fine, and so does its gradient, whose kernel reads u sliced over it.
TEST(RefusedTransforms, DotOfShardedAndReducedAndItsGradient) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array v = device_put(ramp({8}), P("a"));
  Array u = reshard(ramp({8}) + 1.0, P(nullptr, Reduced{{"a"}}));
  Array hv = ramp({8}), hu = ramp({8}) + 1.0;
  Array d = dot(v, u);
  EXPECT_EQ(typeof(d).str(), "f64[]");
  expect_near(dot(hv, hu), d);
  auto f = [&](const Array& v) { return dot(v, u); };
  Array g = grad(f)(v);
  EXPECT_EQ(typeof(g).str(), "f64[8@a]");
  expect_near(hu, g);
  expect_near(hu, jit(grad(f))(v));
  // And the gradient w.r.t. u: unreduced over the axis, as u is reduced over it.
  Array gu = grad([&](const Array& u) { return dot(v, u); })(u);
  EXPECT_EQ(typeof(gu).str(), "f64[8]{U:a}");
  expect_near(hv, reshard(gu, P()));
}

// ---- item 20 -------------------------------------------------------------------------

// jacrev batches the transpose's select_n over the cotangent basis (unreduced over a):
// the predicate takes the cotangents' layout but never their unreduced axes.
TEST(RefusedTransforms, JacrevAtAReducedInput) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array hx = ramp({3});
  Array x = reshard(hx, P(nullptr, Reduced{{"a"}}));
  auto f = [](const Array& x) { return abs(x); };
  Array want = jacrev(f)(hx);
  Array j = jacrev(f)(x);
  EXPECT_EQ(typeof(j).str(), "f64[3,3]{U:a}");
  expect_near(want, reshard(j, P()));
  expect_near(want, reshard(jit(jacrev(f))(x), P()));
  auto g = [](const Array& x) { return maximum(x, 0.0) + where(x > 0.0, x, 2.0 * x); };
  expect_near(jacrev(g)(hx), reshard(jacrev(g)(x), P()));
}

// ---- item 21 -------------------------------------------------------------------------

// The forward refuses what the transpose could not follow: a factor reduced on other
// axes than the other factor is unreduced on.
TEST(RefusedTransforms, MulOfUnreducedByAFactorReducedElsewhere) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array sb = reshard(ramp({4}), P(nullptr, Reduced{{"b"}}));
  Array u = reshard(ramp({4}) + 1.0, P(nullptr, Unreduced{{"a"}}));
  for (auto f : {+[](const Array&s, const Array&u) { return s * u; },
                 +[](const Array&s, const Array&u) { return u * s; },
                 +[](const Array&s, const Array&u) { return u / s; }}) {
    std::string e = error_of<ShardingTypeError>([&] { f(sb, u); });
    EXPECT_HAS(e, "should be reduced along the same axes");
    EXPECT_HAS(e, "expected the other operand reduced over exactly {'a'}");
    error_of<ShardingTypeError>([&] { jit(f)(sb, u); });
  }
  // Reduced on exactly those axes (JAX's rule), or replicated there: the forward and
  // both gradients run, the cotangent of the reduced factor unreduced over them.
  Array sa = reshard(ramp({4}), P(nullptr, Reduced{{"a"}}));
  Array hs = ramp({4}), hu = ramp({4}) + 1.0;
  for (auto [f, ct] : {std::pair{sa, "f64[4]{U:a}"}, std::pair{device_put(hs, P()), "f64[4]"}}) {
    Array y = f * u;
    EXPECT_EQ(typeof(y).str(), "f64[4]{U:a}");
    expect_near(hs * hu, reshard(y, P()));
    Array gs = grad([&](const Array& f) { return sum(reshard(f * u, P())); })(f);
    EXPECT_EQ(typeof(gs).str(), ct);
    expect_near(hu, reshard(gs, P()));
  }
}

// ---- item 22 -------------------------------------------------------------------------

// With keepdims, out_sharding is the kept-dims result's (None at the kept dims).
TEST(RefusedTransforms, KeepdimsWithOutSharding) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array hx = ramp({4, 2});
  Array x = device_put(hx, P("a", "b"));
  Array r = sum(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b")});
  EXPECT_EQ(typeof(r).str(), "f64[1,2@b]");
  expect_near(sum(hx, 0, {.keepdims = true}), r);
  Array r1 = sum(x, 1, {.keepdims = true, .out_sharding = P("a")});
  EXPECT_EQ(typeof(r1).str(), "f64[4@a,1]");
  expect_near(sum(hx, 1, {.keepdims = true}), r1);
  Array mn = mean(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b")});
  EXPECT_EQ(typeof(mn).str(), "f64[1,2@b]");
  auto f = [](const Array& x) {
    return sum(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b", Unreduced{{"a"}})});
  };
  Array u = jit(f)(x);
  EXPECT_EQ(typeof(u).str(), "f64[1,2@b]{U:a}");
  expect_near(sum(hx, 0, {.keepdims = true}), reshard(u, P(nullptr, "b")));
  EXPECT_HAS(error_of<ValueError>(
                 [&] { sum(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b", nullptr)}); }),
             "with keepdims=True, out_sharding is the sharding of the result");
  // A kept dim is size 1: sharding it does not divide.
  error_of<ValueError>([&] { sum(x, 0, {.keepdims = true, .out_sharding = P("a", "b")}); });
}

}  // namespace
