// The Auto-axis propagation pass (docs/design/0013): spec §14's examples, with_sharding
// _constraint merging, and the Megatron layouts of an MLP and an attention block.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tsr/tsr.h>

#include <regex>

#include "support/error_of.h"

using namespace tsr;

namespace {

// Occurrences of `what` in `s`.
int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

std::vector<float> mlp_ref(const std::vector<float>& x, const std::vector<float>& w1,
                           const std::vector<float>& w2, int b, int d, int h) {
  std::vector<float> hid(static_cast<size_t>(b * h)), y(static_cast<size_t>(b * d));
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < h; ++j) {
      float s = 0;
      for (int k = 0; k < d; ++k) s += x[i * d + k] * w1[k * h + j];
      hid[i * h + j] = std::max(s, 0.f);
    }
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < d; ++j) {
      float s = 0;
      for (int k = 0; k < h; ++k) s += hid[i * h + k] * w2[k * d + j];
      y[i * d + j] = s;
    }
  return y;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol = 1e-4f) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * std::max(1.f, std::fabs(a[i]))) << "at " << i;
}

}  // namespace

// Spec §14, mesh (x: Explicit, y: Auto): the type keeps x only; the contraction over y
// is computed sharded (partial sums) and reduced once.
TEST(AutoPropagation, Spec14MixedExplicitX) {
  Mesh m = make_mesh({2, 2}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope scope(m);
  Array v = arange(64.f).reshape({8, 8}) / 64.f;
  Array arr = device_put(v, P("x", "y"));
  Array arr2 = device_put(v, P("y", nullptr));
  EXPECT_EQ(typeof(arr).str(), "f32[8@x,8]");
  EXPECT_EQ(typeof(arr2).str(), "f32[8,8]");
  auto f = [](const Array& a, const Array& b) { return matmul(sin(a * 2.f), b); };
  Array r = jit(f)(arr, arr2);
  EXPECT_EQ(typeof(r).str(), "f32[8@x,8]");
  EXPECT_EQ(r.sharding().spec().normalized(2), P("x", nullptr));
  expect_near(r.to_vector<float>(), matmul(sin(v * 2.f), v).to_vector<float>());
  std::string local = jit(f).lower(arr, arr2).local;
  EXPECT_EQ(count_of(local, "all_reduce"), 1) << local;
}

// Spec §14, mesh (x: Auto, y: Explicit): the type is replicated; the concrete layout is
// the pass's choice (JAX's compiler picked P('x'); ours keeps rhs's x on its free dim).
TEST(AutoPropagation, Spec14MixedExplicitY) {
  Mesh m = make_mesh({2, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Explicit});
  MeshScope scope(m);
  Array a = arange(16.f).reshape({8, 2});
  Array b = arange(16.f).reshape({2, 8});
  Array arr = device_put(a, P(nullptr, "y"));
  Array arr2 = device_put(b, P(nullptr, "x"));
  EXPECT_EQ(typeof(arr).str(), "f32[8,2@y]");
  EXPECT_EQ(typeof(arr2).str(), "f32[2,8]");
  Array r = jit([](const Array& p, const Array& q) { return matmul(p, q); })(arr, arr2);
  EXPECT_EQ(typeof(r).str(), "f32[8,8]");
  // Never sharded along the Explicit y behind the type's back.
  const PartitionSpec got = r.sharding().spec().normalized(2);
  for (const auto& e : got.entries())
    for (const auto& ax : e.axes()) EXPECT_NE(ax, "y");
  expect_near(r.to_vector<float>(), matmul(a, b).to_vector<float>());
}

// Spec §13.3: on a mixed mesh the constraint appends its Auto axes to the type's
// Explicit ones (explicit major).
TEST(AutoPropagation, ShardingConstraintMergesExplicitAndAuto) {
  Mesh m = make_mesh({4, 2}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope scope(m);
  Array x = device_put(iota({8, 2}, int32), P("x"));
  EXPECT_EQ(typeof(x).str(), "i32[8@x,2]");
  auto f = jit([](const Array& a) { return with_sharding_constraint(a, P("y")); });
  Array r = f(x);
  EXPECT_EQ(typeof(r).str(), "i32[8@x,2]");
  EXPECT_EQ(r.sharding().spec().normalized(2), P(Axes{"x", "y"}, nullptr));
  EXPECT_EQ(r.to_vector<int>(), iota({8, 2}, int32).to_vector<int>());
  // Eagerly too.
  Array e = with_sharding_constraint(x, P("y"));
  EXPECT_EQ(e.sharding().spec().normalized(2), P(Axes{"x", "y"}, nullptr));
  // Explicit axes are refused in the spec (E-text of §13.3).
  EXPECT_THAT(error_of<ValueError>([&] { (void)with_sharding_constraint(x, P("x")); }),
              ::testing::HasSubstr("can only refer to Auto axes of the mesh"));
}

// A constraint inside an all-Auto program is a hard constraint at that point, and
// propagates backward to the producer (no reshard between them).
TEST(AutoPropagation, ShardingConstraintIsHardAndPropagatesBackward) {
  Mesh m = make_mesh({8}, {"d"}, {AxisType::Auto});
  MeshScope scope(m);
  Array x = device_put(arange(64.f).reshape({8, 8}), P());
  auto f = [](const Array& a) {
    Array s = with_sharding_constraint(sin(a), P(nullptr, "d"));
    return cos(s);
  };
  Array r = jit(f)(x);
  EXPECT_EQ(r.sharding().spec().normalized(2), P(nullptr, "d"));
  expect_near(r.to_vector<float>(), cos(sin(arange(64.f).reshape({8, 8}))).to_vector<float>());
  std::string local = jit(f).lower(x).local;
  EXPECT_EQ(count_of(local, "all_to_allv"), 0) << local;
}

// The MLP with only inputs annotated: column- then row-parallel, one all-reduce.
TEST(AutoPropagation, MlpGetsMegatronLayout) {
  Mesh m = make_mesh({2, 4}, {"data", "model"}, {AxisType::Auto, AxisType::Auto});
  MeshScope scope(m);
  const int b = 8, d = 16, h = 32;
  Array xv = (arange(static_cast<float>(b * d)).reshape({b, d}) / 100.f) - 0.5f;
  Array w1v = cos(arange(static_cast<float>(d * h)).reshape({d, h}));
  Array w2v = sin(arange(static_cast<float>(h * d)).reshape({h, d}));
  Array x = device_put(xv, P("data", nullptr));
  Array w1 = device_put(w1v, P(nullptr, "model"));
  Array w2 = device_put(w2v, P("model", nullptr));
  auto mlp = [](const Array& x, const Array& w1, const Array& w2) {
    return matmul(maximum(matmul(x, w1), 0.f), w2);
  };
  Array y = jit(mlp)(x, w1, w2);
  EXPECT_EQ(typeof(y).str(), "f32[8,16]");
  EXPECT_EQ(y.sharding().spec().normalized(2), P("data", nullptr));
  expect_near(y.to_vector<float>(), mlp_ref(xv.to_vector<float>(), w1v.to_vector<float>(),
                                            w2v.to_vector<float>(), b, d, h));
  std::string local = jit(mlp).lower(x, w1, w2).local;
  EXPECT_EQ(count_of(local, "all_reduce"), 1) << local;
  EXPECT_EQ(count_of(local, "all_to_allv"), 0) << local;
  EXPECT_HAS(local, "%3:f32(4, 8) = dot_general");  // hidden: (data, model) blocks
  EXPECT_HAS(local, "P('data', None, unreduced={'model'}, unreduced_kind=sum) -> P('data', None)");
  // Unannotated (replicated) weights: the pass still picks the same split.
  Array w1r = device_put(w1v, P()), w2r = device_put(w2v, P());
  std::string local2 = jit(mlp).lower(x, w1r, w2r).local;
  EXPECT_EQ(count_of(local2, "all_reduce"), 1) << local2;
  EXPECT_HAS(local2, "%4:f32(4, 8) = dot_general");
  EXPECT_EQ(count_of(local2, "all_to_allv"), 0) << local2;
  Array y2 = jit(mlp)(x, w1r, w2r);
  expect_near(y2.to_vector<float>(), y.to_vector<float>());
}

namespace {

// One attention block: per-head projections, softmax attention, output projection,
// residual. Written with no sharding annotations.
Array attention(const Array& x, const Array& wq, const Array& wk, const Array& wv, const Array& wo,
                int heads) {
  const int64_t b = x.shape()[0], s = x.shape()[1], hd = wq.shape()[1];
  auto split = [&](const Array& t) { return reshape(t, {b, s, heads, hd / heads}); };
  Array q = split(matmul(x, wq)), k = split(matmul(x, wk)), v = split(matmul(x, wv));
  Array att = softmax(einsum("bshd,bthd->bhst", {q, k}) * 0.25f, -1);
  Array o = reshape(einsum("bhst,bthd->bshd", {att, v}), {b, s, hd});
  return x + matmul(o, wo);
}

}  // namespace

// Two attention blocks with batch on `data` and the projections on `model` (columns
// of wq/wk/wv, rows of wo): heads stay split on `model` through the attention, and
// each block ends in exactly one all-reduce (Megatron's attention layout).
TEST(AutoPropagation, AttentionGetsMegatronLayout) {
  Mesh m = make_mesh({2, 4}, {"data", "model"}, {AxisType::Auto, AxisType::Auto});
  const int b = 4, s = 8, d = 16, heads = 4;
  auto weights = [&](int salt) {
    std::vector<Array> w;
    for (int i = 0; i < 4; ++i)
      w.push_back(
          sin(arange(static_cast<float>(d * d)).reshape({d, d}) * (0.01f * (salt + i + 1))));
    return w;
  };
  std::vector<Array> w1 = weights(0), w2 = weights(4);
  Array xv = cos(arange(static_cast<float>(b * s * d)).reshape({b, s, d}) * 0.1f);
  auto block2 = [&](const std::vector<Array>& a) {
    Array h = attention(a[0], a[1], a[2], a[3], a[4], heads);
    return std::vector<Array>{attention(h, a[5], a[6], a[7], a[8], heads)};
  };
  std::vector<Array> host = {xv};
  host.insert(host.end(), w1.begin(), w1.end());
  host.insert(host.end(), w2.begin(), w2.end());
  std::vector<float> want = block2(host)[0].to_vector<float>();
  MeshScope scope(m);
  std::vector<Array> in = {device_put(xv, P("data"))};
  for (const auto* w : {&w1, &w2})
    for (int i = 0; i < 4; ++i)
      in.push_back(device_put((*w)[i], i < 3 ? P(nullptr, "model") : P("model", nullptr)));
  auto f = jit(block2);
  Array y = f(in)[0];
  expect_near(want, y.to_vector<float>(), 1e-3f);
  EXPECT_EQ(y.sharding().spec().normalized(3), P("data", nullptr, nullptr));
  std::string local = f.lower(in).local;
  EXPECT_EQ(count_of(local, "all_reduce"), 2) << local;
  EXPECT_EQ(count_of(local, "all_to_allv"), 0) << local;
  // Scores per device: batch / data, heads / model.
  EXPECT_HAS(local, ":f32(2, 1, 8, 8) = dot_general");
}

// auto_axes (spec §13.4): the sum of two differently sharded values, refused by the
// Explicit rule, runs with the axis Auto and comes back as out_sharding says.
TEST(AutoAxes, OverridesTheTypeSystem) {
  Mesh m = make_mesh({4}, {"X"});
  MeshScope scope(m);
  Array a = device_put(arange(16.f).reshape({4, 4}), P("X", nullptr));
  Array b = device_put(arange(16.f).reshape({4, 4}) * 2.f, P(nullptr, "X"));
  EXPECT_THAT(error_of<ShardingTypeError>([&] { (void)(a + b); }),
              ::testing::HasSubstr("illegally sharded result"));
  auto add = [](const Array& x, const Array& y) { return x + y; };
  Array r = auto_axes(add, {.out_sharding = P("X", nullptr)})(a, b);
  EXPECT_EQ(typeof(r).str(), "f32[4@X,4]");
  EXPECT_EQ(r.to_vector<float>(), (arange(16.f) * 3.f).to_vector<float>());
  // Under jit too.
  Array j = jit([&](const Array& x, const Array& y) {
    return auto_axes(add, {.out_sharding = P("X", nullptr)})(x, y);
  })(a, b);
  EXPECT_EQ(typeof(j).str(), "f32[4@X,4]");
  EXPECT_EQ(j.to_vector<float>(), r.to_vector<float>());
  // Missing out_sharding, and a mesh that is not the context's.
  EXPECT_THAT(error_of<TypeError>([&] { (void)auto_axes(add, {})(a, b); }),
              ::testing::HasSubstr("Missing required keyword argument: 'out_sharding'"));
  Mesh other = make_mesh({2}, {"Z"});
  EXPECT_THAT(error_of<ValueError>(
                  [&] { (void)auto_axes(add, {.out_sharding = NamedSharding(other, P())})(a, b); }),
              ::testing::HasSubstr("must match the mesh passed to shardings"));
}

// explicit_axes (spec §13.5): inside, the axis is Explicit and in types; outside the
// result drops it again.
TEST(AutoAxes, ExplicitAxesTypesInside) {
  Mesh m = make_mesh({4}, {"X"}, {AxisType::Auto});
  MeshScope scope(m);
  Array a = device_put(arange(16.f).reshape({4, 4}), P("X", nullptr));
  EXPECT_EQ(typeof(a).str(), "f32[4,4]");
  std::string inside;
  auto f = [&](const Array& x) {
    inside = typeof(x).str();
    return sin(x);
  };
  Array r = explicit_axes(f, {.in_sharding = P("X", nullptr)})(a);
  EXPECT_EQ(inside, "f32[4@X,4]");
  EXPECT_EQ(typeof(r).str(), "f32[4,4]");
  EXPECT_EQ(r.to_vector<float>(), sin(arange(16.f)).to_vector<float>());
  EXPECT_THAT(error_of<TypeError>([&] { (void)explicit_axes(f, {})(a); }),
              ::testing::HasSubstr("Missing required keyword argument: 'in_sharding'"));
  MeshScope none{Mesh()};
  EXPECT_THAT(
      error_of<ValueError>([&] { (void)explicit_axes(f, {.in_sharding = P()})(arange(4.f)); }),
      ::testing::HasSubstr("Context mesh cannot be empty"));
}

// The sharding_constraint primitive under grad and vmap on an Auto mesh: the
// cotangent meets the same constraint, vmap leaves the batch dimension free.
TEST(AutoPropagation, ShardingConstraintUnderGradAndVmap) {
  Mesh m = make_mesh({4}, {"d"}, {AxisType::Auto});
  MeshScope scope(m);
  Array x = device_put(arange(16.f).reshape({4, 4}) / 16.f, P("d"));
  auto f = [](const Array& a) {
    return sum(square(with_sharding_constraint(sin(a), P(nullptr, "d"))));
  };
  Array g = jit(grad(f))(x);
  Array want =
      2.f * sin(arange(16.f).reshape({4, 4}) / 16.f) * cos(arange(16.f).reshape({4, 4}) / 16.f);
  expect_near(g.to_vector<float>(), want.to_vector<float>());
  auto h = [](const Array& a) { return with_sharding_constraint(cos(a), P("d")); };
  Array v = vmap(h)(x);
  expect_near(v.to_vector<float>(), cos(arange(16.f).reshape({4, 4}) / 16.f).to_vector<float>());
  Array vj = jit(vmap(h))(x);
  expect_near(vj.to_vector<float>(), v.to_vector<float>());
}

// A data-parallel training step with nothing annotated but the batch: the Auto step
// computes what one device computes, whatever layouts it picks for the new weights.
TEST(AutoPropagation, TrainingStepMatchesOneDevice) {
  auto loss = [](const Array& w1, const Array& w2, const Array& x) {
    return mean(square(matmul(maximum(matmul(x, w1), 0.f), w2)));
  };
  auto step = [&](const Array& w1, const Array& w2, const Array& x) {
    auto [l, g] = value_and_grad(loss, argnums<0, 1>)(w1, w2, x);
    return std::make_tuple(w1 - 0.1f * std::get<0>(g), w2 - 0.1f * std::get<1>(g), l);
  };
  Array w1v = cos(arange(128.f).reshape({8, 16})), w2v = sin(arange(64.f).reshape({16, 4}));
  Array xv = cos(arange(256.f).reshape({32, 8}) * 0.3f);
  auto [a1, a2, al] = jit(step)(w1v, w2v, xv);
  Mesh m = make_mesh({8}, {"data"}, {AxisType::Auto});
  MeshScope scope(m);
  Array w1 = device_put(w1v, P()), w2 = device_put(w2v, P()), x = device_put(xv, P("data"));
  auto js = jit(step);
  for (int i = 0; i < 2; ++i) {
    auto [b1, b2, bl] = js(w1, w2, x);
    if (i == 0) {
      expect_near(a1.to_vector<float>(), b1.to_vector<float>(), 1e-4f);
      expect_near(a2.to_vector<float>(), b2.to_vector<float>(), 1e-4f);
      EXPECT_NEAR(al.item<float>(), bl.item<float>(), 1e-4f);
    }
    w1 = b1;  // the second call runs on the layouts the first one chose
    w2 = b2;
  }
}

// jit out_shardings naming an Auto axis steer the producers backward: the input is
// sliced where it is (a local copy), the kernels run on blocks, nothing moves after.
TEST(AutoPropagation, OutShardingsPropagateBackward) {
  Mesh m = make_mesh({4}, {"d"}, {AxisType::Auto});
  MeshScope scope(m);
  Array x = device_put(arange(32.f).reshape({8, 4}), P());
  auto f = jit([](const Array& a) { return exp(sin(a) * 2.f); }, {.out_shardings = P("d")});
  Array r = f(x);
  EXPECT_EQ(typeof(r).str(), "f32[8,4]");
  EXPECT_EQ(r.sharding().spec().normalized(2), P("d", nullptr));
  expect_near(r.to_vector<float>(),
              exp(sin(arange(32.f).reshape({8, 4})) * 2.f).to_vector<float>());
  std::string local = f.lower(x).local;
  EXPECT_EQ(count_of(local, "all_to_allv"), 0) << local;
  EXPECT_HAS(local, "f32(2, 4) = sin") << f.lower(x).program;
}

// device_put naming Auto axes under jit: the Explicit part is a reshard, the Auto part
// a constraint, so jit lays the value out as eager device_put does.
TEST(AutoPropagation, DevicePutUnderJitNamesAutoAxes) {
  Mesh m = make_mesh({2, 4}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope scope(m);
  Array a = arange(32.f).reshape({8, 4});
  Array e = device_put(a, P("x", "y"));
  Array j = jit([](const Array& v) { return device_put(v, P("x", "y")); })(a);
  EXPECT_EQ(typeof(j).str(), typeof(e).str());
  EXPECT_EQ(typeof(j).str(), "f32[8@x,4]");
  EXPECT_EQ(j.sharding().spec().normalized(2), e.sharding().spec().normalized(2));
  EXPECT_EQ(j.to_vector<float>(), a.to_vector<float>());
}

// grad through auto_axes: the transforms replay the body under the abstract mesh it
// was traced under (Eqn::ctx), as JAX does.
TEST(AutoAxes, GradThroughAutoAxes) {
  Mesh m = make_mesh({4}, {"X"});
  MeshScope scope(m);
  Array a = device_put(arange(16.f).reshape({4, 4}) / 16.f, P("X", nullptr));
  Array b = device_put(arange(16.f).reshape({4, 4}) / 8.f, P(nullptr, "X"));
  auto f = [](const Array& x, const Array& y) {
    auto add = [](const Array& u, const Array& v) { return sin(u) * v; };
    return sum(auto_axes(add, {.out_sharding = P("X", nullptr)})(x, y));
  };
  auto [ga, gb] = grad(f, argnums<0, 1>)(a, b);
  EXPECT_EQ(typeof(ga).str(), "f32[4@X,4]");
  Array av = arange(16.f).reshape({4, 4}) / 16.f, bv = arange(16.f).reshape({4, 4}) / 8.f;
  expect_near(ga.to_vector<float>(), (cos(av) * bv).to_vector<float>());
  expect_near(gb.to_vector<float>(), sin(av).to_vector<float>());
  auto [ja, jb] = jit(grad(f, argnums<0, 1>))(a, b);
  expect_near(ja.to_vector<float>(), ga.to_vector<float>());
}

// grad through explicit_axes on an Auto mesh.
TEST(AutoAxes, GradThroughExplicitAxes) {
  Mesh m = make_mesh({4}, {"X"}, {AxisType::Auto});
  MeshScope scope(m);
  Array a = device_put(arange(16.f).reshape({4, 4}) / 16.f, P("X", nullptr));
  auto f = [](const Array& x) {
    auto g = [](const Array& u) { return sin(u); };
    return sum(explicit_axes(g, {.in_sharding = P("X", nullptr)})(x));
  };
  Array ga = grad(f)(a);
  expect_near(ga.to_vector<float>(), cos(arange(16.f).reshape({4, 4}) / 16.f).to_vector<float>());
  Array gj = jit(grad(f))(a);
  expect_near(gj.to_vector<float>(), ga.to_vector<float>());
}

namespace {
// Types never name Auto axes (spec §14), also through AD (found by the fuzzer on Auto
// meshes: jvp's primal came back typed bf16[2@x]).
TEST(AutoPropagation, TypesNeverNameAutoAxesUnderAd) {
  Mesh m = make_mesh({1}, {"x"}, {AxisType::Auto});
  MeshScope scope(m);
  Array a = device_put(array<float>({-0.75f, -3.0f}).astype(bfloat16), P("x"));
  Array b = device_put(array<float>({1.0f}).astype(bfloat16), P("x"));
  auto f = [](const Array& u, const Array& v) { return dynamic_update_slice(u, v, {0}); };
  EXPECT_EQ(typeof(f(a, b)).str(), "bf16[2]");
  auto [y, t] = jvp(f, std::make_tuple(a, b), std::make_tuple(ones_like(a), ones_like(b)));
  EXPECT_EQ(typeof(y).str(), "bf16[2]");
  EXPECT_EQ(typeof(t).str(), "bf16[2]");
  EXPECT_TRUE(typeof(y) == typeof(f(a, b)));
}
}  // namespace
