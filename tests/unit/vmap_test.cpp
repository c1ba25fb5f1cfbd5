// vmap's API: in_axes / out_axes over trees, the batched programs (one dot_general,
// no loop), composition with jit, grad and itself, shardings of the batch dimension
// (spec §12.16), and the errors with JAX's texts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"
#include "tsr/vmap.h"

using namespace tsr;

namespace {

void expect_near(const Array& want, const Array& got, double tol = 1e-6,
                 const std::string& what = "") {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  auto a = test::values<double>(want), b = test::values<double>(got);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(a[i]))) << what << " at " << i;
}

Array iota_f(const Shape& s, double scale = 0.1) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return reshape(arange(0, static_cast<double>(n)) * scale - 0.3, s);
}

// The batch of f applied to each slice along axis 0 of xs, stacked: the oracle.
template <class F>
Array loop(const F& f, const Array& xs) {
  std::vector<Array> outs;
  for (int64_t i = 0; i < xs.shape()[0]; ++i) outs.push_back(f(index(xs, {i})));
  return stack(outs, 0);
}

TEST(Vmap, ElementwiseAndUnbatchedOperands) {
  Array xs = iota_f({4, 3}), y = iota_f({3}, 0.5);
  auto f = [](const Array& x, const Array& b) { return sin(x) * b + 1.0; };
  Array got = vmap(f, {.in_axes = {0, none}})(xs, y);
  expect_near(sin(xs) * y + 1.0, got);
  // A per-example scalar against a per-example vector.
  Array s = iota_f({4});
  Array got2 = vmap([](const Array& a, const Array& b) { return a * b; })(s, xs);
  expect_near(loop([&](const Array& r) { return r; }, xs) * reshape(s, {4, 1}), got2);
}

TEST(Vmap, InAndOutAxes) {
  Array xs = iota_f({3, 4});  // batch along axis 1
  auto f = [](const Array& x) { return cumsum(x, 0) * 2.0; };
  Array got = vmap(f, {.in_axes = 1, .out_axes = -1})(xs);
  expect_near(cumsum(xs, 0) * 2.0, got);
  Array got0 = vmap(f, {.in_axes = -1})(xs);
  expect_near(transpose(cumsum(xs, 0) * 2.0), got0);
}

TEST(Vmap, MatvecIsOneDotGeneral) {
  Array w = iota_f({5, 3}), xs = iota_f({8, 3});
  auto mv = [](const Array& m, const Array& x) { return matmul(m, x); };
  auto v = vmap(mv, {.in_axes = {none, 0}});
  expect_near(matmul(xs, transpose(w)), v(w, xs), 1e-5);
  std::string prog = jit(v).lower(w, xs).program;
  EXPECT_EQ(prog.find("dot_general"), prog.rfind("dot_general")) << prog;
  EXPECT_EQ(prog.find("slice"), std::string::npos) << prog;
  // Both batched: a batch dimension of the dot.
  Array ws = iota_f({8, 5, 3});
  Array got = vmap(mv)(ws, xs);
  expect_near(einsum("bij,bj->bi", {ws, xs}), got, 1e-5);
}

TEST(Vmap, ReductionsAndShapeOps) {
  Array xs = iota_f({4, 2, 3});
  auto f = [](const Array& x) {
    Array t = transpose(x);                    // [3, 2]
    Array r = reshape(t, {6});                 // [6]
    Array c = concatenate({r, sum(x, 0)}, 0);  // [9]
    return rev(slice(c, {1}, {8}), {0}) + max(x);
  };
  Array want = loop(f, xs);
  expect_near(want, vmap(f)(xs), 1e-6);
  expect_near(want, jit(vmap(f))(xs), 1e-6);
}

TEST(Vmap, DynamicSliceWithBatchedStarts) {
  Array xs = iota_f({4, 6});
  Array is = array<int32_t>({0, 2, 5, 3});  // 5 clamps to 4 as dynamic_slice does
  auto f = [](const Array& x, const Array& i) { return dynamic_slice(x, {i}, {2}); };
  Array got = vmap(f)(xs, is);
  std::vector<Array> rows;
  for (int k = 0; k < 4; ++k) rows.push_back(f(index(xs, {k}), index(is, {k})));
  expect_near(stack(rows, 0), got);
  auto g = [](const Array& x, const Array& i) {
    return dynamic_update_slice(x, full({2}, 9.0), {i});
  };
  Array got2 = vmap(g)(xs, is);
  rows.clear();
  for (int k = 0; k < 4; ++k) rows.push_back(g(index(xs, {k}), index(is, {k})));
  expect_near(stack(rows, 0), got2);
  // Unbatched starts: one dynamic_slice with a leading full slice.
  Array got3 = vmap(f, {.in_axes = {0, none}})(xs, scalar(int32_t{3}));
  expect_near(slice(xs, {0, 3}, {4, 5}), got3);
}

TEST(Vmap, NestedAndComposedWithJit) {
  Array xs = iota_f({2, 3, 4});
  auto f = [](const Array& x) { return sum(x * x) - x; };
  Array want = xs;
  {
    std::vector<Array> outer;
    for (int64_t i = 0; i < 2; ++i) outer.push_back(loop(f, index(xs, {i})));
    want = stack(outer, 0);
  }
  expect_near(want, vmap(vmap(f))(xs));
  expect_near(want, jit(vmap(vmap(f)))(xs));
  expect_near(want, vmap(jit(vmap(f)))(xs));
  expect_near(want, vmap(vmap(jit(f)))(xs));
}

TEST(Vmap, PerExampleGradientsAndGradOfVmap) {
  Array w = iota_f({3}, 0.3), xs = iota_f({5, 3});
  auto loss = [](const Array& w, const Array& x) { return sum(tanh(w * x)); };
  // vmap(grad): one gradient per example.
  Array per = vmap(grad(loss), {.in_axes = {none, 0}})(w, xs);
  std::vector<Array> rows;
  for (int64_t i = 0; i < 5; ++i) rows.push_back(grad(loss)(w, index(xs, {i})));
  expect_near(stack(rows, 0), per, 1e-5);
  // grad(vmap): the gradient of the summed batch = the sum of the per-example ones.
  auto total = [&](const Array& ww) { return sum(vmap(loss, {.in_axes = {none, 0}})(ww, xs)); };
  expect_near(sum(per, 0), grad(total)(w), 1e-5);
  expect_near(sum(per, 0), jit(grad(total))(w), 1e-5);
}

TEST(Vmap, TreesAndStatics) {
  std::map<std::string, Array> batch{{"a", iota_f({4, 2})}, {"b", iota_f({2, 4})}};
  auto f = [](const std::map<std::string, Array>& m) {
    return std::make_pair(m.at("a") + m.at("b"), sum(m.at("a")));
  };
  auto [s, t] = vmap(f, {.in_axes = {{{"a", 0}, {"b", 1}}}, .out_axes = {1, 0}})(batch);
  expect_near(transpose(batch["a"] + transpose(batch["b"])), s);
  expect_near(sum(batch["a"], 1), t);
}

TEST(Vmap, UnbatchedOutputsAndAxisSize) {
  Array xs = iota_f({4, 3});
  auto f = [](const Array& x) { return std::make_pair(x * 2.0, ones({2})); };
  auto [a, b] = vmap(f)(xs);
  EXPECT_EQ(b.shape(), (Shape{4, 2}));
  auto [a2, b2] = vmap(f, {.out_axes = {0, none}})(xs);
  EXPECT_EQ(b2.shape(), (Shape{2}));
  Array c =
      vmap([](const Array& y) { return y + 1.0; }, {.in_axes = none, .axis_size = 3})(ones({2}));
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
}

TEST(VmapSharding, BatchDimensionKeepsItsSharding) {
  Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array xs = device_put(iota_f({8, 4}), P("x", "y"));
  std::string seen;
  auto f = [&](const Array& x) {
    seen = typeof(x).str();
    return sin(x) * 2.0;
  };
  Array got = vmap(f)(xs);
  EXPECT_EQ(seen, "f32[4@y]");
  EXPECT_EQ(typeof(got).str(), "f32[8@x,4@y]");
  expect_near(sin(iota_f({8, 4})) * 2.0, got);
  Array gj = jit(vmap(f))(xs);
  EXPECT_EQ(typeof(gj).str(), "f32[8@x,4@y]");
  // An unbatched result broadcast along the batch is sharded on the vmapped axis.
  auto z = vmap([](const Array&) { return zeros({4}); }, {.out_axes = -1})(xs);
  EXPECT_EQ(typeof(z).str(), "f32[4,8@x]");
  // A reshard inside the body refers to the per-example shape.
  Array r = vmap([](const Array& x) { return reshard(x, P()); })(xs);
  EXPECT_EQ(typeof(r).str(), "f32[8@x,4]");
}

TEST(VmapSharding, SpmdAxisName) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array xs = device_put(iota_f({8, 3}), P());
  Array got = vmap([](const Array& x) { return x * 3.0; }, {.spmd_axis_name = {"x"}})(xs);
  EXPECT_EQ(typeof(got).str(), "f32[8@x,3]");
  expect_near(iota_f({8, 3}) * 3.0, got);
  // A name the mesh lacks is left to the rules that use it (a shard_map checks it
  // against its own mesh); unused, it is not checked (JAX neither).
  Array same = vmap([](const Array& x) { return x; }, {.spmd_axis_name = {"z"}})(xs);
  EXPECT_EQ(typeof(same).str(), "f32[8,3]");
  Array xsh = device_put(iota_f({8, 4}), P("x"));
  std::string e = error_of<ValueError>(
      [&] { (void)vmap([](const Array& x) { return reshard(x, P("x")); })(xsh); });
  EXPECT_HAS(e, "which the vmapped dimension is sharded over");
}

TEST(VmapErrors, JaxTexts) {
  Array a = iota_f({3, 2}), b = iota_f({4, 2});
  auto add2 = [](const Array& x, const Array& y) { return x + y; };
  std::string e = error_of<ValueError>([&] { (void)vmap(add2)(a, b); });
  EXPECT_HAS(e, "vmap got inconsistent sizes for array axes to be mapped:");
  EXPECT_HAS(e, "axis 0 of argument args[1] of type f32[4,2]");
  e = error_of<ValueError>([&] { (void)vmap(add2, {.in_axes = {2, 0}})(a, a); });
  EXPECT_HAS(e,
             "vmap was requested to map its argument along axis 2, which implies that its "
             "rank should be at least 3, but is only 2");
  e = error_of<ValueError>([&] { (void)vmap(add2, {.in_axes = none})(a, a); });
  EXPECT_HAS(e, "vmap must have at least one non-None value in in_axes");
  e = error_of<ValueError>(
      [&] { (void)vmap([](const Array& x) { return x; }, {.out_axes = none})(a); });
  EXPECT_HAS(e, "at vmap out_axes, got axis spec None but output was batched on axis 0");
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array sx = device_put(iota_f({4, 2}), P("x")), sy = device_put(iota_f({4, 2}), P("y"));
  e = error_of<ValueError>([&] { (void)vmap(add2)(sx, sy); });
  EXPECT_HAS(e,
             "Mapped away dimension of inputs passed to vmap should be sharded the same. Got "
             "inconsistent axis specs: 'x' vs 'y'");
  Array ux = device_put(iota_f({2, 2}), P(nullptr, "x"));
  e = error_of<ValueError>([&] { (void)vmap(add2, {.in_axes = {0, none}})(sx, index(ux, {0})); });
  EXPECT_HAS(e,
             "Unmapped values passed to vmap cannot be sharded along the mesh axis you are "
             "vmapping over. Got type: f32[2@x], in_axes: None and vmapped mesh axis: ('x',)");
}

}  // namespace

namespace {

// jacfwd / jacrev are one vmap of the linear map over a basis: the program's size
// does not grow with the number of basis vectors, and sharded inputs work.
TEST(VmapJacobians, OneVmapOverTheBasis) {
  Array v = array<float>({0.5f, -1.f, 2.f});
  auto f = [v](const Array& w) { return tanh(matmul(w, v)); };
  auto check = [&](const Array& w, const Array& j, const std::string& what) {
    Array y = tanh(matmul(w, v));
    auto yv = test::values<float>(y), vv = test::values<float>(v), jv = test::values<float>(j);
    int64_t m = w.shape()[0];
    ASSERT_EQ(j.shape(), (Shape{m, m, 3})) << what;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t k = 0; k < 3; ++k) {
          float want = i == r ? (1 - yv[i] * yv[i]) * vv[k] : 0.f;
          EXPECT_NEAR(jv[(i * m + r) * 3 + k], want, 1e-5) << what << " at " << i << r << k;
        }
  };
  Array w4 = iota_f({4, 3}), w8 = iota_f({8, 3}, 0.05);
  check(w4, jacfwd(f)(w4), "jacfwd");
  check(w4, jacrev(f)(w4), "jacrev");
  check(w8, jit(jacrev(f))(w8), "jit(jacrev)");
  auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(jit(jacrev(f)).lower(w4).program), lines(jit(jacrev(f)).lower(w8).program));
  EXPECT_EQ(lines(jit(jacfwd(f)).lower(w4).program), lines(jit(jacfwd(f)).lower(w8).program));
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array ws = device_put(w4, P("x"));
  check(w4, jacfwd(f)(ws), "jacfwd sharded");
  check(w4, jacrev(f)(ws), "jacrev sharded");
  Array h = hessian([](const Array& w) { return sum(w * w * w); })(ws);
  EXPECT_EQ(h.shape(), (Shape{4, 3, 4, 3}));
  auto hv = test::values<float>(h), wv = test::values<float>(w4);
  for (int64_t a = 0; a < 12; ++a)
    for (int64_t b = 0; b < 12; ++b)
      EXPECT_NEAR(hv[a * 12 + b], a == b ? 6 * wv[a] : 0.f, 1e-5) << "hessian at " << a << "," << b;
}

}  // namespace
