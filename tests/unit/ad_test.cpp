// The public AD API over trees: grad/value_and_grad options, jvp/linearize/vjp/
// linear_transpose, compositions with jit and with themselves (sharded, eager and
// jitted), shardings of tangents and cotangents, custom rules, checkpoint, the
// Jacobians, and the errors with JAX's texts.
#include <gtest/gtest.h>

#include <cmath>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Lin2 {
  Array w;
  Array b;
  int tag = 0;
};
TSR_TREE(Lin2, w, b, tag)

std::vector<float> vec(const Array& a) { return test::values<float>(a); }

void expect_near(const Array& want, const Array& got, double tol, const std::string& what = "") {
  auto a = test::values<double>(want), b = test::values<double>(got);
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(a[i]))) << what << " at " << i;
}

Array f_sin_sum(const Array& x) { return sum(sin(x) * x); }
// d/dx sum(sin(x) * x) = cos(x) * x + sin(x)
Array df_sin_sum(const Array& x) { return cos(x) * x + sin(x); }

TEST(Ad, GradOfScalarFunction) {
  Array x = array<float>({0.5f, 1.f, -2.f});
  expect_near(df_sin_sum(x), grad(f_sin_sum)(x), 1e-6);
}

TEST(Ad, ArgnumsAndHasAux) {
  Array x = array<float>({1.f, 2.f}), y = array<float>({3.f, 4.f});
  auto f = [](const Array& a, const Array& b) { return sum(a * b * b); };
  Array gy = grad(f, argnums<1>)(x, y);
  EXPECT_EQ(vec(gy), (std::vector<float>{6, 16}));
  auto [ga, gb] = grad(f, argnums<0, 1>)(x, y);
  EXPECT_EQ(vec(ga), (std::vector<float>{9, 16}));
  EXPECT_EQ(vec(gb), (std::vector<float>{6, 16}));
  auto faux = [](const Array& a) { return std::make_pair(sum(a * a), a + 1.0); };
  auto [vaux, g] = value_and_grad(faux, has_aux)(x);
  EXPECT_FLOAT_EQ(test::item<float>(vaux.first), 5.f);
  EXPECT_EQ(vec(vaux.second), (std::vector<float>{2, 3}));
  EXPECT_EQ(vec(g), (std::vector<float>{2, 4}));
  auto [g2, aux2] = grad(faux, has_aux)(x);
  EXPECT_EQ(vec(g2), (std::vector<float>{2, 4}));
  EXPECT_EQ(vec(aux2), (std::vector<float>{2, 3}));
}

TEST(Ad, GradOverTreesKeepsStructureAndStatics) {
  Lin2 p{array<float>({1.f, 2.f}), scalar(0.5f), 7};
  auto loss = [](const Lin2& p, const Array& x) { return sum(square(p.w * x + p.b)); };
  Lin2 g = grad(loss)(p, array<float>({1.f, -1.f}));
  EXPECT_EQ(g.tag, 7);
  // r = [1.5, -1.5]; dL/dw = 2 r x = [3, 3]; dL/db = 2 sum(r) = 0
  EXPECT_EQ(vec(g.w), (std::vector<float>{3, 3}));
  EXPECT_FLOAT_EQ(test::item<float>(g.b), 0.f);
  std::map<std::string, Array> m = {{"a", array<float>({2.f})}, {"b", array<float>({3.f})}};
  auto gm =
      grad([](const std::map<std::string, Array>& m) { return sum(m.at("a") * m.at("b")); })(m);
  EXPECT_EQ(vec(gm.at("a")), (std::vector<float>{3}));
  EXPECT_EQ(vec(gm.at("b")), (std::vector<float>{2}));
}

TEST(Ad, JvpLinearizeVjpAgree) {
  Array x = array<float>({0.3f, -0.7f, 1.1f});
  Array t = array<float>({1.f, 2.f, 3.f});
  auto f = [](const Array& x) { return tanh(x) * x; };
  auto [y, ty] = jvp(f, x, t);
  auto [y2, f_jvp] = linearize(f, x);
  expect_near(y, y2, 1e-7);
  expect_near(ty, f_jvp(t), 1e-6);
  auto [y3, f_vjp] = vjp(f, x);
  auto [ct] = f_vjp(t);
  // f is elementwise: the jacobian is diagonal, so jvp and vjp agree elementwise.
  expect_near(ty, ct, 1e-6);
  // linear_transpose of the linearized function is the vjp.
  auto f_t = linear_transpose(f_jvp, x);
  auto [ct2] = f_t(t);
  expect_near(ct, ct2, 1e-6);
  EXPECT_NE(f_jvp.str().find("mul"), std::string::npos) << f_jvp.str();
}

TEST(Ad, StopGradient) {
  Array x = array<float>({2.f});
  auto f = [](const Array& x) { return sum(x * stop_gradient(x)); };
  EXPECT_EQ(vec(grad(f)(x)), (std::vector<float>{2}));
}

TEST(Ad, Jacobians) {
  Array x = array<float>({1.f, 2.f, 3.f});
  auto f = [](const Array& x) { return x * x; };
  Array jf = jacfwd(f)(x), jr = jacrev(f)(x);
  std::vector<float> want = {2, 0, 0, 0, 4, 0, 0, 0, 6};
  EXPECT_EQ(jf.shape(), (Shape{3, 3}));
  EXPECT_EQ(vec(jf), want);
  EXPECT_EQ(vec(jr), want);
  Array h = hessian([](const Array& x) { return sum(x * x * x); })(x);
  EXPECT_EQ(vec(h), (std::vector<float>{6, 0, 0, 0, 12, 0, 0, 0, 18}));
}

// JAX's values at points where the math has no derivative.
TEST(Ad, NonDifferentiablePointsFollowJax) {
  Array z = array<float>({0.f, -1.f});
  EXPECT_EQ(vec(grad([](const Array& x) { return sum(abs(x)); })(z)), (std::vector<float>{1, -1}));
  // max/min split ties evenly: relu at 0 is 0.5, maximum(x, x) is 1 (0.5 + 0.5).
  EXPECT_EQ(vec(grad([](const Array& x) { return sum(maximum(x, 0.0)); })(z)),
            (std::vector<float>{0.5f, 0.f}));
  EXPECT_EQ(vec(grad([](const Array& x) { return sum(maximum(x, x)); })(z)),
            (std::vector<float>{1.f, 1.f}));
  // reduce_max shares the tangent among the locations of the maximum.
  EXPECT_EQ(vec(grad([](const Array& x) { return max(x); })(array<float>({3.f, 1.f, 3.f}))),
            (std::vector<float>{0.5f, 0.f, 0.5f}));
  // floor/round/sign: zero; sort/top_k: the tangent follows its element.
  EXPECT_EQ(vec(grad([](const Array& x) { return sum(floor(x) + sign(x)); })(z)),
            (std::vector<float>{0.f, 0.f}));
  Array x = array<float>({3.f, 1.f, 2.f});
  auto [s, ts] = jvp([](const Array& x) { return sort(x); }, x, array<float>({10.f, 20.f, 30.f}));
  EXPECT_EQ(vec(ts), (std::vector<float>{20, 30, 10}));
  auto [v, tv] =
      jvp([](const Array& x) { return top_k(x, 2).first; }, x, array<float>({10.f, 20.f, 30.f}));
  EXPECT_EQ(vec(tv), (std::vector<float>{10, 30}));
  // pow at x = 0 with y = 0: no NaN (JAX's _replace_zero).
  EXPECT_EQ(vec(grad([](const Array& y) { return sum(power(array<float>({0.f}), y)); })(
                array<float>({2.f}))),
            (std::vector<float>{0.f}));
}

// ---- compositions, sharded, eager and jitted -------------------------------------

class AdSharded : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope{mesh};
  Array x = device_put(arange(16.f) / 8.0 - 1.0, P("x"));
  Array x1 = array<float>(test::values<float>(x));  // the one-device oracle
};

TEST_F(AdSharded, JitOfGradAndGradOfJit) {
  Array want = grad(f_sin_sum)(x1);
  Array a = jit(grad(f_sin_sum))(x);
  Array b = grad(jit(f_sin_sum))(x);
  Array c = jit(grad(jit(f_sin_sum)))(x);
  for (const Array& g : {a, b, c}) {
    EXPECT_EQ(typeof(g).str(), "f32[16@x]");
    expect_near(want, g, 1e-6);
  }
}

TEST_F(AdSharded, GradOfGradAndJvpOfGrad) {
  auto f = [](const Array& x) { return sum(sin(x)); };
  // d2/dx2 of sin summed, along ones: -sin(x)
  auto g = grad([&](const Array& x) { return sum(grad(f)(x)); });
  expect_near(neg(sin(x1)), g(x), 1e-6);
  expect_near(neg(sin(x1)), jit(g)(x), 1e-6);
  auto [gx, tg] = jvp(grad(f), x, ones_like(x));
  expect_near(cos(x1), gx, 1e-6);
  expect_near(neg(sin(x1)), tg, 1e-6);
  EXPECT_EQ(typeof(tg).str(), "f32[16@x]");
  auto jg = jit([&](const Array& x) { return jvp(grad(f), x, ones_like(x)); });
  auto [gj, tj] = jg(x);
  expect_near(cos(x1), gj, 1e-6);
  expect_near(neg(sin(x1)), tj, 1e-6);
}

// Symbolic zeros: the branch that does not depend on the differentiated argument
// leaves no trace in the gradient's program.
TEST(Ad, UnusedBranchesCostNothing) {
  Array x = array<float>({1.f, 2.f}), y = array<float>({3.f, 4.f});
  auto f = [](const Array& x, const Array& y) { return sum(x * 2.0) + sum(tanh(exp(y))); };
  std::string text = make_jaxpr(grad(f), x, y);
  EXPECT_EQ(text.find("exp"), std::string::npos) << text;
  EXPECT_EQ(text.find("tanh"), std::string::npos) << text;
  EXPECT_EQ(vec(grad(f)(x, y)), (std::vector<float>{2, 2}));
}

TEST_F(AdSharded, LinearTransposeOfLinearize) {
  auto f = [](const Array& x) { return mean(x * x); };
  auto [y, f_jvp] = linearize(f, x);
  auto f_t = linear_transpose(f_jvp, x);
  auto [ct] = f_t(scalar(1.f));
  EXPECT_EQ(typeof(ct).str(), "f32[16@x]");
  expect_near(x1 * (2.0 / 16), ct, 1e-6);
  auto [ct_j] = jit([&](const Array& c) { return f_t(c); })(scalar(1.f));
  expect_near(x1 * (2.0 / 16), ct_j, 1e-6);
  // The linear function jits like any other (its residuals are captured constants).
  Array t = ones_like(x);
  expect_near(f_jvp(t), jit(f_jvp)(t), 1e-7);
  EXPECT_NEAR(test::item<float>(jit(f_jvp)(t)), test::item<float>(mean(x1 * 2.0)), 1e-6);
}

// A transform inside jit closes over the jit's traced values.
TEST_F(AdSharded, ClosureCaptureOfOuterTracedValues) {
  auto outer = jit([](const Array& x, const Array& y) {
    return grad([&](const Array& w) { return sum(w * y * y); })(x);
  });
  Array y = x * 3.0;
  expect_near(square(x1 * 3.0), outer(x, y), 1e-5);
  EXPECT_EQ(typeof(outer(x, y)).str(), "f32[16@x]");
}

// The gradient of a data-parallel loss equals the one-device gradient and has each
// weight's sharding: batch over x, weights replicated or sharded over y.
TEST(AdShardings, DataParallelGradientHasTheWeightsShardings) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array xb = device_put(iota({8, 6}) / 48.0 - 0.5, P("x"));
  Array w1 = device_put(iota({6, 4}) / 24.0 - 0.3, P(nullptr, "y"));
  Array w2 = device_put(iota({4, 3}) / 12.0 - 0.4, P());
  auto loss = [](const Array& w1, const Array& w2, const Array& x) {
    Array h = tanh(matmul(x, w1));
    Array h2 = reshard(h, P("x", nullptr));
    return mean(square(matmul(h2, w2)));
  };
  auto [g1, g2] = grad(loss, argnums<0, 1>)(w1, w2, xb);
  EXPECT_EQ(typeof(g1).str(), "f32[6,4@y]");
  EXPECT_EQ(typeof(g2).str(), "f32[4,3]");
  Array o1 = array<float>(test::values<float>(w1), {6, 4});
  Array o2 = array<float>(test::values<float>(w2), {4, 3});
  Array ox = array<float>(test::values<float>(xb), {8, 6});
  auto [h1, h2] = grad(loss, argnums<0, 1>)(o1, o2, ox);
  expect_near(h1, g1, 1e-5);
  expect_near(h2, g2, 1e-5);
  auto [j1, j2] = jit(grad(loss, argnums<0, 1>))(w1, w2, xb);
  EXPECT_EQ(typeof(j1).str(), "f32[6,4@y]");
  expect_near(h1, j1, 1e-5);
  expect_near(h2, j2, 1e-5);
}

// Spec §9: the cotangent of a value reduced over an axis is unreduced over it.
TEST(AdShardings, ReducedInputGetsAnUnreducedCotangent) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array w = reshard(device_put(array<float>({1.f, 2.f, 3.f, 4.f}), P()), P(Reduced{{"x"}}));
  EXPECT_EQ(typeof(w).str(), "f32[4]{R:x}");
  auto [y, f_vjp] = vjp([](const Array& w) { return w * 3.0; }, w);
  auto [ct] = f_vjp(reshard(ones({4}), P(Unreduced{{"x"}})));
  EXPECT_EQ(typeof(ct).str(), "f32[4]{U:x}");
  EXPECT_EQ(test::values<float>(reshard(ct, P())), (std::vector<float>{3, 3, 3, 3}));
  // Data parallel: a weight reduced over the batch axis gets its gradient as partial
  // sums (no all_reduce in the backward pass); resharding to P() reduces them once.
  Array x = device_put(iota({4, 4}) / 4.0, P("x"));
  Array wr = reshard(device_put(iota({4, 2}) / 8.0, P()), P(Reduced{{"x"}}));
  auto loss = [](const Array& w, const Array& x) { return sum(matmul(x, w)); };
  Array g = grad(loss)(wr, x);
  EXPECT_EQ(typeof(g).str(), "f32[4,2]{U:x}");
  Array g1 = grad(loss)(array<float>(test::values<float>(wr), {4, 2}),
                        array<float>(test::values<float>(x), {4, 4}));
  EXPECT_EQ(test::values<float>(reshard(g, P())), test::values<float>(g1));
  std::string text = make_jaxpr(grad(loss), wr, x);
  EXPECT_EQ(text.find("all_reduce"), std::string::npos) << text;
}

// The transpose of a broadcast over a sharded dimension is a reduction typed like
// the operand; reshard's transpose reshards back; both print in the program.
TEST(AdShardings, BroadcastAndReshardTransposes) {
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  Array b = device_put(array<float>({1.f, 2.f, 3.f, 4.f}), P());
  auto f = [](const Array& b) {
    Array full = broadcast_in_dim(b, {16, 4}, {1}, P("x", nullptr));
    return sum(reshard(full * full, P(nullptr, nullptr)));
  };
  Array g = grad(f)(b);
  EXPECT_EQ(typeof(g).str(), "f32[4]");
  EXPECT_EQ(vec(g), (std::vector<float>{32, 64, 96, 128}));
  std::string text = make_jaxpr(grad(f), b);
  EXPECT_NE(text.find("reshard[dst_sharding=P('x', None)]"), std::string::npos) << text;
  EXPECT_NE(text.find("reduce_sum[axes=(0,)"), std::string::npos) << text;
  Array gs = grad([](const Array& x) { return sum(reshard(x, P()) * 2.0); })(
      device_put(iota({16}), P("x")));
  EXPECT_EQ(typeof(gs).str(), "f32[16@x]");
}

TEST(AdShardings, CustomVjpBwdWithTheWrongSharding) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  auto f = custom_vjp(
      [](const Array& x) { return x * 2.0; },
      [](const Array& x) { return std::make_pair(x * 2.0, std::tuple<>()); },
      [](const std::tuple<>&, const Array& g) { return std::make_tuple(reshard(g, P("x"))); });
  std::string e = error_of<ValueError>(
      [&] { (void)grad([&](const Array& x) { return sum(f(x)); })(device_put(zeros({4}), P())); });
  EXPECT_HAS(e, "so the shardings do not match");
  EXPECT_HAS(e, "reshard(ct, typeof(x).sharding)");
}

// ---- custom rules and checkpoint ------------------------------------------------

TEST(AdCustom, CustomJvpRuleIsUsed) {
  // log1p(exp(x)) with the stable derivative 1 - 1/(1+exp(x)).
  auto softplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                             [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                               auto [x] = p;
                               auto [tx] = t;
                               Array y = log1p(exp(x));
                               return std::make_pair(y, tx * (1.0 - 1.0 / (1.0 + exp(x))) * 1.0);
                             },
                             "softplus");
  Array x = array<float>({100.f, 0.f});
  Array g = grad([&](const Array& x) { return sum(softplus(x)); })(x);
  EXPECT_EQ(vec(g), (std::vector<float>{1.f, 0.5f}));
  Array gj = jit(grad([&](const Array& x) { return sum(softplus(x)); }))(x);
  EXPECT_EQ(vec(gj), (std::vector<float>{1.f, 0.5f}));
  auto [y, ty] = jvp([&](const Array& x) { return softplus(x); }, x, ones_like(x));
  EXPECT_EQ(vec(ty), (std::vector<float>{1.f, 0.5f}));
}

TEST(AdCustom, CustomVjpWithNondiffArgnums) {
  // Gradient clipping: identity forward, clipped cotangent backward; the limit is a
  // static nondiff argument, the scale an Array one that bwd also receives.
  auto clip_grad =
      custom_vjp([](double lim, const Array& scale, const Array& x) { return x * scale; },
                 [](double lim, const Array& scale, const Array& x) {
                   return std::make_pair(x * scale, std::tuple<>());
                 },
                 [](double lim, const Array& scale, const std::tuple<>&, const Array& g) {
                   return std::make_tuple(clip(g * scale, -lim, lim));
                 },
                 nondiff_argnums<0, 1>);
  Array x = array<float>({1.f, 2.f});
  Array s = scalar(2.f);
  auto f = [&](const Array& x) { return sum(clip_grad(0.5, s, x) * 3.0); };
  EXPECT_EQ(vec(grad(f)(x)), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(vec(jit(grad(f))(x)), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(vec(f(x) * 1.0), (std::vector<float>{18.f}));
  // Forward mode through custom_vjp is refused, as in JAX.
  std::string e = error_of<TypeError>([&] { (void)jvp(f, x, ones_like(x)); });
  EXPECT_HAS(e, "can't apply forward-mode autodiff (jvp) to a custom_vjp function");
}

TEST(AdCustom, CustomVjpDifferentiatedOnlyThroughANondiffArgument) {
  // Found by the fuzzer: when only a nondiff Array argument depends on the
  // differentiated input, the call's tangents are zero. Eager vjp used to evaluate
  // custom_lin forward and refuse ("can't apply forward-mode"), while jit dropped it.
  auto scale = custom_vjp(
      [](const Array& s, const Array& x) { return x * s; },
      [](const Array& s, const Array& x) { return std::make_pair(x * s, std::tuple<>()); },
      [](const Array& s, const std::tuple<>&, const Array& g) { return std::make_tuple(g * s); },
      nondiff_argnums<0>);
  Array x = array<float>({1.f, 2.f});
  auto f = [&](const Array& s) { return sum(scale(s, x)); };
  Array s = scalar(3.f);
  EXPECT_EQ(vec(grad(f)(s)), (std::vector<float>{0.f}));
  EXPECT_EQ(vec(jit(grad(f))(s)), (std::vector<float>{0.f}));
  auto [y, ty] = jvp(f, s, scalar(1.f));
  EXPECT_EQ(vec(y), (std::vector<float>{9.f}));
  EXPECT_EQ(vec(ty), (std::vector<float>{0.f}));
  // The checkpoint gives its output a (zero) tangent because s enters it: custom_lin
  // then lands on the known side, and only a residual the transpose never reads
  // carries it. vjp used to evaluate it eagerly (refused) where jit dropped it.
  auto g = [&](const Array& s) {
    Array x2 = checkpoint([](const Array& a, const Array&) { return tanh(a); })(x, s);
    return sum(sqrt(scale(s, x2 + 2.0)));
  };
  EXPECT_EQ(vec(grad(g)(s)), (std::vector<float>{0.f}));
  EXPECT_EQ(vec(jit(grad(g))(s)), (std::vector<float>{0.f}));
}

TEST(AdCustom, ForwardModeThroughCustomVjpEagerlyAsUnderJit) {
  // Found by the fuzzer: floor's tangent is zero, so the custom_vjp's tangent is never
  // used. Eager jvp evaluated custom_lin as it came and refused, while jit dropped the
  // unused custom_lin and accepted. Eager now runs the dce'd jvp program, as jit.
  auto sin_vjp = custom_vjp([](const Array& x) { return sin(x); },
                            [](const Array& x) { return std::make_pair(sin(x), cos(x)); },
                            [](const Array& c, const Array& g) { return std::make_tuple(g * c); });
  auto f = [&](const Array& x) { return floor(sin_vjp(x) * 4.0); };
  Array x = array<float>({0.5f, 1.f});
  auto jf = [&](const Array& p, const Array& t) { return jvp(f, p, t).second; };
  EXPECT_EQ(vec(jf(x, ones_like(x))), (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(vec(jit(jf)(x, ones_like(x))), (std::vector<float>{0.f, 0.f}));
  // A used tangent is refused, eagerly and under jit.
  auto g = [&](const Array& p, const Array& t) { return jvp(sin_vjp, p, t).second; };
  std::string e = error_of<TypeError>([&] { (void)g(x, ones_like(x)); });
  EXPECT_HAS(e, "can't apply forward-mode autodiff (jvp) to a custom_vjp function");
  e = error_of<TypeError>([&] { (void)jit(g)(x, ones_like(x)); });
  EXPECT_HAS(e, "can't apply forward-mode autodiff (jvp) to a custom_vjp function");
  // A jvp inside a custom_jvp rule, under grad: the custom_lin is linear in grad's
  // tangents and is transposed (bwd runs), as JAX.
  auto h = custom_jvp([&](const Array& y) { return sin_vjp(y); },
                      [&](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                        return jvp(sin_vjp, std::get<0>(p), std::get<0>(t));
                      },
                      "h");
  expect_near(cos(x), grad([&](const Array& y) { return sum(h(y)); })(x), 1e-6);
  // Forward over reverse through it works.
  Array hv =
      jvp([&](const Array& y) { return grad([&](const Array& z) { return sum(sin_vjp(z)); })(y); },
          x, ones_like(x))
          .second;
  expect_near(-sin(x), hv, 1e-6);
}

TEST(AdCustom, CheckpointTangentsThatReadNoTangentAreSymbolicZeros) {
  // Found by the fuzzer: s enters the checkpoint, so it has a tangent, but floor's
  // output tangent is zero. The checkpoint's jvp gave an instantiated zero, so the
  // custom_vjp after it saw a tangent and forward mode was refused.
  auto sin_vjp = custom_vjp([](const Array& x) { return sin(x); },
                            [](const Array& x) { return std::make_pair(sin(x), cos(x)); },
                            [](const Array& c, const Array& g) { return std::make_tuple(g * c); });
  Array x = array<float>({0.5f, 1.5f});
  auto f = [&](const Array& s) {
    Array y = checkpoint([](const Array& a, const Array& t) { return floor(a * t); })(x, s);
    return sum(sin_vjp(y) * s);
  };
  Array s = scalar(2.f);
  float want = std::sin(1.f) + std::sin(3.f);
  auto jf = [&](const Array& p, const Array& t) { return jvp(f, p, t).second; };
  EXPECT_NEAR(test::item<float>(jf(s, scalar(1.f))), want, 1e-6);
  EXPECT_NEAR(test::item<float>(jit(jf)(s, scalar(1.f))), want, 1e-6);
  EXPECT_NEAR(test::item<float>(grad(f)(s)), want, 1e-6);
  EXPECT_NEAR(test::item<float>(jit(grad(f))(s)), want, 1e-6);
}

TEST(AdCustom, CustomVjpBwdTypeErrors) {
  Array x = array<float>({1.f, 2.f});
  auto bad_shape =
      custom_vjp([](const Array& x) { return x * 2.0; },
                 [](const Array& x) { return std::make_pair(x * 2.0, std::tuple<>()); },
                 [](const std::tuple<>&, const Array& g) { return std::make_tuple(sum(g)); });
  std::string e = error_of<ValueError>(
      [&] { (void)grad([&](const Array& x) { return sum(bad_shape(x)); })(x); });
  EXPECT_HAS(e, "Custom VJP bwd rule attached to");
  EXPECT_HAS(e, "so the shapes do not match");
  auto bad_dtype = custom_vjp(
      [](const Array& x) { return x * 2.0; },
      [](const Array& x) { return std::make_pair(x * 2.0, std::tuple<>()); },
      [](const std::tuple<>&, const Array& g) { return std::make_tuple(g.astype(float64)); });
  e = error_of<ValueError>(
      [&] { (void)grad([&](const Array& x) { return sum(bad_dtype(x)); })(x); });
  EXPECT_HAS(e, "so the dtypes do not match");
}

TEST(AdCustom, CustomVjpBwdWithTheWrongNumberOfCotangents) {
  std::vector<Array> xs = {array<float>({1.f}), array<float>({2.f})};
  auto f = custom_vjp(
      [](const std::vector<Array>& v) { return v[0] * v[1]; },
      [](const std::vector<Array>& v) { return std::make_pair(v[0] * v[1], v); },
      [](const std::vector<Array>& v, const Array& g) {
        return std::make_tuple(std::vector<Array>{g * v[1]});  // one cotangent for two leaves
      });
  std::string e = error_of<TypeError>(
      [&] { (void)grad([&](const std::vector<Array>& v) { return sum(f(v)); })(xs); });
  EXPECT_HAS(e,
             "Custom VJP bwd rule must produce an output with the same container (pytree) "
             "structure as the args tuple of the primal function");
}

TEST(AdCustom, NestedCheckpoints) {
  // Found by the fuzzer: the jvp of the inner checkpoint is one checkpoint over
  // (primals, tangents); partial_eval of the outer one took its primal outputs for
  // unknown ("an output asked for on the known side depends on unknown inputs").
  auto f = [](const Array& x) { return sum(sin(sin(x)) * x); };
  auto fc = [](const Array& x) {
    return sum(checkpoint([](const Array& y) {
      return checkpoint([](const Array& z) { return sin(sin(z)); })(y) * y;
    })(x));
  };
  Array x = array<float>({0.1f, 0.2f, 0.3f});
  expect_near(grad(f)(x), grad(fc)(x), 1e-6);
  expect_near(grad(f)(x), jit(grad(fc))(x), 1e-6);
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array xs = device_put(array<float>({0.1f, 0.2f, 0.3f, 0.4f}), P("x"));
  Array g = grad(fc)(xs);
  EXPECT_EQ(typeof(g).str(), "f32[4@x]");
  expect_near(grad(f)(xs), g, 1e-6);
}

TEST(AdCustom, CheckpointRecomputesInTheBackwardPass) {
  auto f = [](const Array& x) { return sum(sin(sin(x))); };
  auto fc = [](const Array& x) {
    return sum(checkpoint([](const Array& y) { return sin(sin(y)); })(x));
  };
  Array x = array<float>({0.1f, 0.2f, 0.3f});
  expect_near(grad(f)(x), grad(fc)(x), 1e-6);
  expect_near(grad(f)(x), jit(grad(fc))(x), 1e-6);
  std::string text = make_jaxpr(grad(fc), x);
  // The backward pass holds its own checkpoint that recomputes sin from the input.
  EXPECT_NE(text.find("checkpoint"), std::string::npos) << text;
}

// ---- errors ------------------------------------------------------------------------

TEST(AdErrors, GradOfNonScalarAndOfIntegers) {
  Array x = array<float>({1.f, 2.f});
  std::string e =
      error_of<TypeError>([&] { (void)grad([](const Array& x) { return x * 2.0; })(x); });
  EXPECT_HAS(e, "Gradient only defined for scalar-output functions. Output had shape: (2,)");
  Array i = array<int32_t>({1, 2});
  e = error_of<TypeError>(
      [&] { (void)grad([](const Array& i) { return sum(i.astype(float32)); })(i); });
  EXPECT_HAS(e,
             "grad requires real- or complex-valued inputs (a floating or complex input dtype: "
             "float16, bfloat16, float32, float64, complex64 or complex128), but got int32");
  Array gi = grad([](const Array& i) { return sum(i.astype(float32)); }, allow_int)(i);
  EXPECT_EQ(test::values<int32_t>(gi), (std::vector<int32_t>{0, 0}));
}

TEST(AdErrors, LinearTransposeOfNonLinearFunction) {
  Array x = array<float>({1.f, 2.f});
  std::string e = error_of<TypeError>(
      [&] { (void)linear_transpose([](const Array& x) { return sin(x); }, x); });
  EXPECT_HAS(e, "not linear");
  EXPECT_HAS(e, "'sin'");
  e = error_of<TypeError>([&] { (void)linear_transpose([](const Array& x) { return x * x; }, x); });
  EXPECT_HAS(e, "not linear");
}

TEST(AdErrors, TangentAndCotangentTypesMustMatch) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(array<float>({1.f, 2.f}), P());
  auto [y, f_jvp] = linearize([](const Array& x) { return x * 2.0; }, x);
  std::string e = error_of<ValueError>([&] {
    (void)f_jvp(device_put(array<float>({1.f, 1.f}), P("x")));
  });
  EXPECT_HAS(e,
             "linearized function called on tangent values inconsistent with the original "
             "primal values");
  EXPECT_HAS(e, "so the shardings do not match");
  auto [y2, f_vjp] = vjp([](const Array& x) { return sum(x); }, x);
  e = error_of<ValueError>([&] { (void)f_vjp(array<float>({1.f})); });
  EXPECT_HAS(e, "unexpected JAX type (e.g. shape/dtype) for argument to VJP function");
  e = error_of<ValueError>([&] {
    (void)jvp([](const Array& x) { return x; }, x, device_put(array<float>({1.f, 1.f}), P("x")));
  });
  EXPECT_HAS(e, "reshard(t, typeof(primal).sharding)");
}

}  // namespace

namespace readme {
// The README's example, compiled and run.
struct Mlp {
  Array w1, b1, w2, b2;
};
TSR_TREE(Mlp, w1, b1, w2, b2)

TEST(AdReadme, TrainingStepExample) {
  Mesh mesh = make_mesh({8}, {"data"});
  MeshScope scope(mesh);
  Mlp params{iota({4, 8}) / 32.0 - 0.5, zeros({8}), iota({8, 3}) / 24.0 - 0.5, zeros({3})};
  Array x = iota({16, 4}) / 64.0, y = one_hot(arange(16) % 3, 3);
  auto loss = [](const Mlp& p, const Array& x, const Array& y) {
    Array h = maximum(matmul(x, p.w1) + p.b1, 0.0);
    return -mean(sum(log_softmax(matmul(h, p.w2) + p.b2) * y, -1));
  };
  auto step = jit([&](const Mlp& p, const Array& x, const Array& y) {
    auto [l, g] = value_and_grad(loss)(p, x, y);  // g is an Mlp
    return std::make_pair(
        l, tree::map2([](const Array& w, const Array& d) { return w - d * 0.1; }, p, g));
  });
  auto [l, p2] = step(params, device_put(x, P("data")), device_put(y, P("data")));
  auto [l2, p3] = step(p2, device_put(x, P("data")), device_put(y, P("data")));
  EXPECT_LT(test::item<float>(l2), test::item<float>(l));
  EXPECT_EQ(typeof(p3.w1).str(), "f32[4,8]");
  // The same step on one device gives the same numbers.
  auto [o, q] = step(params, x, y);
  EXPECT_NEAR(test::item<float>(o), test::item<float>(l), 1e-6);
}
}  // namespace readme
