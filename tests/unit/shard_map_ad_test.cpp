// AD through shard_map (issue 12 item 4, manual-spmd §5): jvp / linearize / vjp / grad
// of a shard_map from outside against the same function without shard_map on one
// device, on meshes (2), (4), (8), (2,4); psum <-> pvary transposes (§5.4); grad
// inside the body with and without check_vma (§5.5); the AD boundary errors (§5.6);
// jit(grad(shard_map)) against eager.
#include <gtest/gtest.h>

#include <cmath>

#include "support/arrays.h"
#include "support/check_grads.h"
#include "support/error_of.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_d(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return reshape(arange(0, static_cast<double>(n)) * 0.25 - 0.9, s).astype(float64);
}

void expect_near(const Array& want, const Array& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  auto a = test::values<double>(want), b = test::values<double>(got);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-9 * (1 + std::fabs(a[i]))) << what << " at " << i;
}

struct MeshCase {
  std::vector<int> sizes;
  std::vector<std::string> names;
};

std::vector<MeshCase> meshes() {
  return {{{2}, {"x"}}, {{4}, {"x"}}, {{8}, {"x"}}, {{2, 4}, {"x", "y"}}};
}

// The one-device function: a varying x, an invariant w, a global sum through psum.
std::vector<Array> oracle(const std::vector<Array>& a) {
  const Array &x = a[0], &w = a[1];
  return {sin(x) * w + sum(x * x) * 0.5, sum(exp(x) * w)};
}

// The same with x sharded over every mesh axis on dim 0 and w replicated: the body's
// psum of per-block sums is the global sum; the second output is invariant.
detail::FlatFn sharded(const std::vector<std::string>& axes, bool check_vma) {
  return [axes, check_vma](const std::vector<Array>& a) {
    PartitionSpec px = P(Axes(axes));
    auto f = shard_map(
        [axes](const Array& b, const Array& w) {
          Array g = psum(sum(b * b), AxisNames(axes)) * 0.5;
          return std::make_pair(sin(b) * w + g, psum(sum(exp(b) * w), AxisNames(axes)));
        },
        {.in_specs = {px, P()}, .out_specs = {px, P()}, .check_vma = check_vma});
    auto [y, s] = f(a[0], a[1]);
    return std::vector<Array>{y, s};
  };
}

TEST(ShardMapAd, DerivativesMatchOneDevice) {
  std::vector<Array> host = {iota_d({16, 3}), array<double>({1.3, -0.7, 0.4}, {3})};
  gradcheck::Derivatives want = gradcheck::derivatives(oracle, host, true, true);
  for (bool check_vma : {true, false})
    for (const auto& mc : meshes()) {
      Mesh mesh = make_mesh(mc.sizes, mc.names);
      MeshScope scope(mesh);
      std::string what =
          "mesh " + std::to_string(mesh.size()) + (check_vma ? "" : " check_vma=false");
      std::vector<Array> in = {device_put(host[0], P(Axes(mc.names))), device_put(host[1], P())};
      detail::FlatFn f = sharded(mc.names, check_vma);
      auto outs = f(in);
      auto ref = oracle(host);
      for (size_t j = 0; j < 2; ++j)
        expect_near(ref[j], outs[j], what + " value " + std::to_string(j));
      gradcheck::Derivatives got = gradcheck::derivatives(f, in, true, true);
      for (size_t j = 0; j < 2; ++j)
        expect_near(want.tangents[j], got.tangents[j], what + " jvp " + std::to_string(j));
      for (size_t i = 0; i < 2; ++i)
        expect_near(want.cotangents[i], got.cotangents[i], what + " vjp " + std::to_string(i));
      EXPECT_EQ(typeof(got.cotangents[0]).str(), typeof(in[0]).str()) << what;
      EXPECT_EQ(typeof(got.cotangents[1]).str(), typeof(in[1]).str()) << what;
    }
}

TEST(ShardMapAd, CheckGradsToOrderTwo) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(mesh);
  std::vector<Array> in = {device_put(iota_d({8, 3}), P(Axes{"x", "y"})),
                           device_put(array<double>({1.3, -0.7, 0.4}, {3}), P())};
  gradcheck::GradCheck gc;
  gradcheck::check_grads(sharded({"x", "y"}, true), in, gc, "shard_map, check_vma");
  gradcheck::check_grads(sharded({"x", "y"}, false), in, gc, "shard_map, check_vma=false");
}

TEST(ShardMapAd, LinearizeAndGradFromOutside) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array host = iota_d({8});
  Array x = device_put(host, P("x"));
  auto f = shard_map([](const Array& b) { return psum(sum(sin(b) * b), "x"); },
                     {.in_specs = P("x"), .out_specs = P()});
  auto one = [](const Array& v) { return sum(sin(v) * v); };
  auto [y, f_jvp] = linearize(f, x);
  EXPECT_NEAR(test::item<double>(y), test::item<double>(one(host)), 1e-12);
  Array t = device_put(cos(host), P("x"));
  auto [y1, t1] = jvp(one, host, cos(host));
  EXPECT_NEAR(test::item<double>(f_jvp(t)), test::item<double>(t1), 1e-12);
  // The linear map reads the body's residuals, stacked per device on a leading dim
  // over the axes they vary over (§5.3): it does not redo the primal sin / cos.
  std::string text = f_jvp.str();
  EXPECT_NE(text.find("shard_map"), std::string::npos) << text;
  EXPECT_EQ(text.find("sin"), std::string::npos) << text;
  EXPECT_EQ(text.find("cos"), std::string::npos) << text;
  EXPECT_NE(text.find("f64[4@x,2]"), std::string::npos) << text;
  EXPECT_NE(text.find("in_specs=(P('x', None), P('x', None), P('x',), P('x',))"),
            std::string::npos)
      << text;  // cos(b), sin(b) stacked; b itself forwarded with its spec
  EXPECT_NE(text.find("c:f64[8@x] ; d:f64[8@x]"), std::string::npos) << text;
  Array g = grad(f)(x);
  EXPECT_EQ(typeof(g).str(), "f64[8@x]");
  expect_near(grad(one)(host), g, "grad");
  expect_near(g, jit(grad(f))(x), "jit(grad)");
  expect_near(g, grad(jit(f))(x), "grad(jit)");
}

TEST(ShardMapAd, GradAndJitGradOnEveryMesh) {
  Array host = iota_d({16, 2});
  auto one = [](const Array& v) { return sum(tanh(v) * v) + sum(v) * sum(v); };
  Array want = grad(one)(host);
  for (const auto& mc : meshes()) {
    Mesh mesh = make_mesh(mc.sizes, mc.names);
    MeshScope scope(mesh);
    AxisNames all(mc.names);
    auto f = shard_map(
        [all](const Array& b) {
          Array s = psum(sum(b), all);
          return psum(sum(tanh(b) * b), all) + s * s;
        },
        {.in_specs = P(Axes(mc.names)), .out_specs = P()});
    Array x = device_put(host, P(Axes(mc.names)));
    std::string what = "mesh " + std::to_string(mesh.size());
    expect_near(want, grad(f)(x), what + " grad");
    expect_near(want, jit(grad(f))(x), what + " jit(grad)");
  }
}

// A body output that reads no input has a zero tangent of a varying type (the out
// spec pvary's it): instantiated inside the jvp'd body with its vma, a symbolic zero
// outside.
TEST(ShardMapAd, ZeroTangentsOfVaryingOutputs) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_d({4, 2}), P("x", "y"));
  auto f = shard_map([](const Array& b) { return std::make_pair(b * 2.0, zeros_like(b) + 1.0); },
                     {.in_specs = P("x", "y"), .out_specs = {P("x", "y"), P("x", "y")}});
  auto [y, t] = jvp(f, x, device_put(ones({4, 2}, float64), P("x", "y")));
  EXPECT_EQ(test::values<double>(t.first), std::vector<double>(8, 2.0));
  EXPECT_EQ(test::values<double>(t.second), std::vector<double>(8, 0.0));
  EXPECT_EQ(typeof(t.second).str(), typeof(y.second).str());
  auto [y2, f_jvp] = linearize(f, x);
  EXPECT_EQ(test::values<double>(f_jvp(x).second), std::vector<double>(8, 0.0));
  auto g = grad([&](const Array& v) { return sum(f(v).first * f(v).second); })(x);
  EXPECT_EQ(test::values<double>(g), std::vector<double>(8, 2.0));
}

// §5.4: a fan-out (invariant in, tiled out) transposes to psum; a psum (fan-in)
// transposes to the free pvary.
TEST(ShardMapAd, PsumAndPvaryTransposeIntoEachOther) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array v = array<double>({1.0, 2.0});
  auto fan_out =
      shard_map([](const Array& b) { return b; }, {.in_specs = P(), .out_specs = P("x")});
  auto t_out = linear_transpose(fan_out, v);
  std::string text = t_out.str();
  EXPECT_NE(text.find("psum"), std::string::npos) << text;
  EXPECT_EQ(text.find("pvary"), std::string::npos) << text;
  Array ct = device_put(iota_d({8}), P("x"));
  // The cotangent of the replicated input: the sum of the four blocks.
  expect_near(sum(reshape(iota_d({8}), {4, 2}), 0), std::get<0>(t_out(ct)), "fan-out");

  auto fan_in = shard_map([](const Array& b) { return psum(b, "x"); },
                          {.in_specs = P("x"), .out_specs = P()});
  auto t_in = linear_transpose(fan_in, device_put(iota_d({8}), P("x")));
  text = t_in.str();
  EXPECT_NE(text.find("pvary"), std::string::npos) << text;
  EXPECT_EQ(text.find("psum"), std::string::npos) << text;
  Array g = std::get<0>(t_in(v));
  EXPECT_EQ(test::values<double>(g), (std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2}));

  // Without check_vma psum transposes to psum, rescaled so the values agree (§5.4).
  auto fan_in_legacy = shard_map([](const Array& b) { return psum(b, "x"); },
                                 {.in_specs = P("x"), .out_specs = P(), .check_vma = false});
  auto t_legacy = linear_transpose(fan_in_legacy, device_put(iota_d({8}), P("x")));
  EXPECT_NE(t_legacy.str().find("psum"), std::string::npos) << t_legacy.str();
  EXPECT_EQ(test::values<double>(std::get<0>(t_legacy(v))), test::values<double>(g));
  auto fan_out_legacy = shard_map([](const Array& b) { return b; },
                                  {.in_specs = P(), .out_specs = P("x"), .check_vma = false});
  expect_near(sum(reshape(iota_d({8}), {4, 2}), 0),
              std::get<0>(linear_transpose(fan_out_legacy, v)(ct)), "fan-out, check_vma=false");
}

// §5.5 (and issue #3970): grad taken inside the body at an invariant w. With
// check_vma the pvary of the invariant factor transposes to a psum: every device gets
// the derivative of the global loss. Without it psum transposes to psum: each device
// gets its local derivative times the axis size.
TEST(ShardMapAd, GradInsideTheBody) {
  Mesh mesh = make_mesh({2}, {"batch"});
  MeshScope scope(mesh);
  Array d = device_put(array<double>({0.0, 1.0}), P("batch"));
  Array w = array<double>({1.0});
  auto loss = [](const Array& w, const Array& d) { return psum(sum((w * w + 1.0) * d), "batch"); };
  std::string wt;
  Array g = shard_map(
      [&](const Array& w, const Array& d) {
        Array gw = grad(loss)(w, d);
        wt = typeof(gw).str();
        return gw;
      },
      {.in_specs = {P(), P("batch")}, .out_specs = P()})(w, d);
  EXPECT_EQ(wt, "f64[1]");
  EXPECT_EQ(test::values<double>(g), (std::vector<double>{2.0}));  // 2 w sum(d)
  Array legacy =
      shard_map([&](const Array& w, const Array& d) { return grad(loss)(w, d); },
                {.in_specs = {P(), P("batch")}, .out_specs = P("batch"), .check_vma = false})(w, d);
  EXPECT_EQ(test::values<double>(legacy), (std::vector<double>{0.0, 4.0}));
  // The same under jit.
  auto jg = jit(shard_map([&](const Array& w, const Array& d) { return grad(loss)(w, d); },
                          {.in_specs = {P(), P("batch")}, .out_specs = P()}));
  EXPECT_EQ(test::values<double>(jg(w, d)), (std::vector<double>{2.0}));
}

// A per-device loss (varying, no psum): grad's seed is pvary'd to the loss's type and
// each device gets the derivative of its own loss; likewise jvp and vjp inside.
TEST(ShardMapAd, GradOfAVaryingLossInsideTheBody) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array host = iota_d({4, 4});
  Array x = device_put(host, P("x", "y"));
  std::string seen;
  auto f = shard_map(
      [&](const Array& b) {
        Array g = grad([](const Array& v) { return sum(v * v * v); })(b);
        seen = typeof(g).str();
        auto [y, t] = jvp([](const Array& v) { return sin(v); }, b, g);
        auto [z, f_vjp] = vjp([](const Array& v) { return v * 2.0; }, b);
        return t + std::get<0>(f_vjp(y));
      },
      {.in_specs = P("x", "y"), .out_specs = P("x", "y")});
  Array want = cos(host) * host * host * 3.0 + sin(host) * 2.0;
  expect_near(want, f(x), "eager");
  EXPECT_EQ(seen, "f64[2,2]{V:(x,y)}");
  expect_near(want, jit(f)(x), "jit");
}

// The "cursed identity" (test_transpose_identity): shard_map(x -> x, P(), P())
// transposes to a shard_map whose body has no equation, so transposing does not grow
// the program.
TEST(ShardMapAd, IdentityTransposesToAnEmptyBody) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array v = device_put(array<double>({1.0, 2.0}), P());
  auto id = shard_map([](const Array& b) { return b; }, {.in_specs = P(), .out_specs = P()});
  auto t = linear_transpose(id, v);
  std::string text = t.str();
  size_t body = text.find("program={");
  ASSERT_NE(body, std::string::npos) << text;
  size_t let = text.find("let", body), in = text.find(" in ", body);
  ASSERT_NE(let, std::string::npos) << text;
  EXPECT_EQ(text.substr(let, in - let).find(" = "), std::string::npos) << text;
  EXPECT_EQ(test::values<double>(std::get<0>(t(v))), (std::vector<double>{1.0, 2.0}));
}

TEST(ShardMapAd, BoundaryErrorsCompareVaryingAxes) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(iota_d({4}), P("x"));
  // vjp: the cotangent of an invariant output must be invariant.
  std::string e = error_of<ValueError>([&] {
    (void)shard_map(
        [](const Array& b) {
          auto [y, f_vjp] = vjp([](const Array& v) { return psum(sum(v), "x"); }, b);
          return std::get<0>(f_vjp(sum(b)));
        },
        {.in_specs = P("x"), .out_specs = P("x")})(x);
  });
  EXPECT_HAS(e,
             "[vjp] unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
             "f64[]{V:x}, but expected f64[] because the corresponding output of the "
             "differentiated function had JAX type f64[]");
  EXPECT_HAS(e, "tsr::pvary(..., ('x',))");
  // linear_transpose: the cotangent of an invariant output must be invariant.
  e = error_of<TypeError>([&] {
    (void)shard_map(
        [&](const Array& b) {
          Array p = psum(sum(b), "x");  // invariant
          auto bwd = linear_transpose([](const Array& v) { return sum(v * 3.0); }, p);
          return std::get<0>(bwd(sum(b)));
        },
        {.in_specs = P("x"), .out_specs = P("x")})(x);
  });
  EXPECT_HAS(e,
             "[linear_transpose] cotangent type does not match function output, expected "
             "[f64[]] but got [f64[]{V:x}]");
  EXPECT_HAS(e, "tsr::pvary(..., ('x',))");
  // linearize: a tangent lacking the primal's varying axes.
  e = error_of<ValueError>([&] {
    (void)shard_map(
        [](const Array& b) {
          auto [y, f_jvp] = linearize([](const Array& v) { return v * v; }, b);
          return f_jvp(array<double>({1.0, 1.0}));
        },
        {.in_specs = P("x"), .out_specs = P("x")})(x);
  });
  EXPECT_HAS(e, "Got tangent aval f64[2] for primal aval f64[2]{V:x}");
  EXPECT_HAS(e,
             "applying `tsr::pvary(..., ('x',))` to the tangent value passed to the callable "
             "`f_jvp` returned by `tsr::linearize`");
}

TEST(ShardMapAd, PmaxAndPminHaveNoDerivative) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(iota_d({4}), P("x"));
  for (const char* op : {"pmax", "pmin"}) {
    auto f = shard_map(
        [op](const Array& b) {
          return std::string(op) == "pmax" ? pmax(sum(b), "x") : pmin(sum(b), "x");
        },
        {.in_specs = P("x"), .out_specs = P()});
    std::string e = error_of<NotImplementedError>([&] { (void)grad(f)(x); });
    EXPECT_HAS(e,
               std::string("[") + op + "] Differentiation rule for '" + op + "' not implemented");
  }
}

}  // namespace

namespace {

// The README's example, as written there.
TEST(ShardMapAdReadme, GradInsideTheBody) {
  MeshScope scope(make_mesh({2}, {"x"}));
  Array w = array<float>({1.f}), d = device_put(array<float>({0.f, 1.f}), P("x"));
  auto loss = [](const Array& w, const Array& d) { return psum(sum((w * w + 1.f) * d), "x"); };
  Array g = shard_map([&](const Array& w, const Array& d) { return grad(loss)(w, d); },
                      {.in_specs = {P(), P("x")}, .out_specs = P()})(w, d);
  EXPECT_EQ(test::values<float>(g), (std::vector<float>{2.f}));
}

}  // namespace
