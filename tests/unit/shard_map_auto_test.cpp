// shard_map on meshes with Auto axes (issue 23 items 2-5): host arguments under every
// transform, results laid out as out_specs (spec §14: a shard_map's out_specs are not
// open to propagation), Explicit regions that leave the layout open on exit, and
// auto_axes / explicit_axes refused inside a body over those axes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Mesh auto_mesh(const std::vector<int>& shape, const std::vector<std::string>& names) {
  return make_mesh(shape, names, std::vector<AxisType>(shape.size(), AxisType::Auto));
}

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-4, what);
}

PartitionSpec spec_of(const Array& a) { return a.sharding().spec().normalized(a.ndim()); }

// The rows of x (8 x n) summed over the two halves along dim 0: psum over 'x' of the
// P('x', ...) blocks.
Array half_sum(const Array& x) {
  return test::chunk(x, 0, 0, x.shape()[0] / 2) + test::chunk(x, 0, 1, x.shape()[0] / 2);
}

}  // namespace

// Item 2: a host (mesh-less) argument of a shard_map on an all-Auto mesh is placed with
// the constraint Auto axes take (device_put), not `reshard` (which refuses Auto axes),
// under jit, grad, vjp and vmap as eagerly.
TEST(ShardMapAuto, HostArgumentUnderEveryTransform) {
  Mesh m = auto_mesh({2, 2}, {"x", "y"});
  auto sm = shard_map([](const Array& b) { return psum(b, "x"); },
                      {.mesh = m, .in_specs = {P("x", "y")}, .out_specs = P(nullptr, "y")});
  Array x = iota({8, 8});  // no context mesh: a host array
  ASSERT_TRUE(x.type().sharding.mesh().empty());
  Array want = half_sum(x);
  Array e = sm(x);
  expect_eq(want, e, "eager");
  EXPECT_EQ(spec_of(e), P(nullptr, "y"));
  Array j = jit(sm)(x);
  expect_eq(want, j, "jit");
  EXPECT_EQ(typeof(j).str(), "f32[4,8]");
  EXPECT_EQ(spec_of(j), P(nullptr, "y"));
  // Every element of x reaches one element of the sum once.
  auto loss = [&](const Array& a) { return sum(sm(a)); };
  Array g = grad(loss)(x);
  expect_eq(ones({8, 8}), g, "grad");
  EXPECT_EQ(spec_of(g), P("x", "y"));
  Array jg = jit(grad(loss))(x);
  expect_eq(ones({8, 8}), jg, "jit(grad)");
  EXPECT_EQ(spec_of(jg), P("x", "y"));
  auto [y, pull] = vjp(sm, x);
  expect_eq(want, y, "vjp primal");
  Array ct = iota({4, 8});
  Array gx = std::get<0>(pull(ct));
  expect_eq(concatenate({ct, ct}, 0), gx, "vjp cotangent");
  Array xs = iota({2, 8, 8});
  Array v = vmap(sm)(xs);
  expect_eq(stack({half_sum(xs[0]), half_sum(xs[1])}, 0), v, "vmap");
  EXPECT_EQ(spec_of(v), P(nullptr, nullptr, "y"));
  Array jv = jit(vmap(sm))(xs);
  expect_eq(v, jv, "jit(vmap)");
  EXPECT_EQ(spec_of(jv), P(nullptr, nullptr, "y"));
}

// Item 2, the captured-array path: a body closing over a host value that is a jit
// argument (traced, mesh-less) gets it as a replicated input.
TEST(ShardMapAuto, CapturedHostValueUnderJit) {
  Mesh m = auto_mesh({2, 2}, {"x", "y"});
  Array x = iota({8, 4});
  Array c = iota({4, 4}) * 0.5f;  // host
  auto f = [m](const Array& a, const Array& k) {
    return shard_map([&](const Array& b) { return psum(b * k, "x"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P()})(a);
  };
  Array want = half_sum(x * concatenate({c, c}, 0));
  expect_eq(want, f(x, c), "eager");
  Array j = jit(f)(x, c);
  expect_eq(want, j, "jit");
  auto loss = [&](const Array& a, const Array& k) { return sum(f(a, k)); };
  Array g = std::get<0>(jit(grad(loss, argnums<0, 1>))(x, c));
  expect_eq(concatenate({c, c}, 0), g, "jit(grad) w.r.t. the argument");
}

// Item 3: a shard_map's result is laid out as its out_specs say (JAX:
// NamedSharding(mesh, out_specs) on every kind of axis), eagerly and under jit, with
// no communication the program did not write.
TEST(ShardMapAuto, ResultHasTheOutSpecsLayout) {
  Mesh m = auto_mesh({2, 2}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota({8, 8});
  Array xs = device_put(x, P("x", "y"));
  auto twice = shard_map([](const Array& b) { return b * 2.f; },
                         {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  Array e = twice(xs);
  expect_eq(x * 2.f, e, "eager");
  EXPECT_EQ(spec_of(e), P("x", "y"));
  Array j = jit(twice)(xs);
  expect_eq(x * 2.f, j, "jit");
  EXPECT_EQ(spec_of(j), P("x", "y"));
  EXPECT_EQ(jit(twice).lower(xs).comm_report().events.size(), 0u)
      << jit(twice).lower(xs).comm_report().str();
  // A short out spec, and a psum leaving 'x' out of the spec.
  auto rows =
      shard_map([](const Array& b) { return sin(b); }, {.in_specs = {P("x")}, .out_specs = P("x")});
  EXPECT_EQ(spec_of(rows(xs)), P("x", nullptr));
  EXPECT_EQ(spec_of(jit(rows)(xs)), P("x", nullptr));
  auto summed = shard_map([](const Array& b) { return psum(b, "x"); },
                          {.in_specs = {P("x", "y")}, .out_specs = P(nullptr, "y")});
  Array s = jit(summed)(xs);
  expect_eq(half_sum(x), s, "psum");
  EXPECT_EQ(spec_of(s), P(nullptr, "y"));
  CommReport cr = jit(summed).lower(xs).comm_report();
  EXPECT_EQ(cr.implicit_count(), 0u) << cr.str();
  EXPECT_EQ(cr.events.size(), 1u) << cr.str();  // the psum
  // A body that changes the block shape: gathered along 'y', summed over dim 1.
  auto gathered = shard_map(
      [](const Array& b) {
        return sum(all_gather(b, "y", {.axis = 1, .tiled = true}), {1}, {.keepdims = true});
      },
      {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  Array gs = jit(gathered)(xs);
  EXPECT_EQ(gs.shape(), (Shape{8, 2}));
  expect_eq(concatenate({sum(x, {1}, {.keepdims = true}), sum(x, {1}, {.keepdims = true})}, 1), gs,
            "all_gather then sum");
  EXPECT_EQ(spec_of(gs), P("x", "y"));
  EXPECT_EQ(spec_of(gathered(xs)), P("x", "y"));
}

// Item 3 with axis_index_groups (check_vma off): the result is still laid out as
// out_specs, and so is every later value that only reads it elementwise.
TEST(ShardMapAuto, AxisIndexGroupsResultHasTheOutSpecsLayout) {
  Mesh m = auto_mesh({4}, {"x"});
  MeshScope scope(m);
  Array x = iota({8, 2});
  Array xs = device_put(x, P("x"));
  auto f = shard_map(
      [](const Array& b) {
        return psum(b, "x", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .check_vma = false});
  Array a = test::chunk(x, 0, 0, 2) + test::chunk(x, 0, 1, 2);
  Array b = test::chunk(x, 0, 2, 2) + test::chunk(x, 0, 3, 2);
  Array want = concatenate({a, a, b, b}, 0);
  Array e = f(xs);
  expect_eq(want, e, "eager");
  EXPECT_EQ(spec_of(e), P("x", nullptr));
  auto g = jit([&](const Array& v) { return exp(f(v) * 0.01f); });
  Array j = g(xs);
  expect_eq(exp(want * 0.01f), j, "jit");
  EXPECT_EQ(spec_of(j), P("x", nullptr));
  EXPECT_EQ(g.lower(xs).comm_report().implicit_count(), 0u) << g.lower(xs).comm_report().str();
}

// Item 3 under grad, vjp and vmap: the shard_maps these build keep their out_specs
// layout too (the input cotangent comes back laid out as in_specs).
TEST(ShardMapAuto, TransformedShardMapsKeepTheLayout) {
  Mesh m = auto_mesh({2, 2}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota({8, 8}) / 64.f;
  Array xs = device_put(x, P("x", "y"));
  auto sm = shard_map([](const Array& b) { return sin(b); },
                      {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  auto loss = [&](const Array& a) { return sum(sm(a)); };
  Array g = grad(loss)(xs);
  expect_eq(cos(x), g, "grad");
  EXPECT_EQ(spec_of(g), P("x", "y"));
  Array jg = jit(grad(loss))(xs);
  expect_eq(cos(x), jg, "jit(grad)");
  EXPECT_EQ(spec_of(jg), P("x", "y"));
  auto [y, pull] = vjp(sm, xs);
  EXPECT_EQ(spec_of(y), P("x", "y"));
  Array ct = std::get<0>(pull(device_put(ones({8, 8}), P("x", "y"))));
  expect_eq(cos(x), ct, "vjp");
  EXPECT_EQ(spec_of(ct), P("x", "y"));
  Array b3 = device_put(iota({2, 8, 8}) / 128.f, P());
  Array v = vmap(sm)(b3);
  expect_eq(sin(iota({2, 8, 8}) / 128.f), v, "vmap");
  EXPECT_EQ(spec_of(v), P(nullptr, "x", "y"));
  EXPECT_EQ(spec_of(jit(vmap(sm))(b3)), P(nullptr, "x", "y"));
}

// Item 3 on a mixed mesh (x Explicit, y Auto): the type shows x, the layout both.
TEST(ShardMapAuto, MixedMeshResultHasTheOutSpecsLayout) {
  Mesh m = make_mesh({2, 2}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope scope(m);
  Array x = iota({8, 8});
  Array xs = device_put(x, P("x", "y"));
  auto f = shard_map([](const Array& b) { return b + 1.f; },
                     {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  for (bool use_jit : {false, true}) {
    Array r = use_jit ? jit(f)(xs) : f(xs);
    expect_eq(x + 1.f, r, use_jit ? "jit" : "eager");
    EXPECT_EQ(typeof(r).str(), "f32[8@x,8]");
    EXPECT_EQ(spec_of(r), P("x", "y"));
  }
  EXPECT_EQ(jit(f).lower(xs).comm_report().events.size(), 0u)
      << jit(f).lower(xs).comm_report().str();
}

// Item 4: leaving an Explicit region reshards to the outer spec without the axes that
// are Auto outside, which pins nothing (design 0013 §4): the layout stays as it was.
TEST(ShardMapAuto, LeavingAnExplicitRegionLeavesTheLayoutOpen) {
  Mesh m = auto_mesh({4}, {"X"});
  MeshScope scope(m);
  Array x = iota({4, 4}) / 16.f;
  Array a = device_put(x, P("X"));
  auto f = explicit_axes([](const Array& u) { return sin(u); }, {.in_sharding = P("X")});
  Array e = f(a);
  expect_eq(sin(x), e, "eager");
  EXPECT_EQ(spec_of(e), P("X", nullptr));
  auto jf = jit(f);
  Array j = jf(a);
  expect_eq(sin(x), j, "jit");
  EXPECT_EQ(spec_of(j), P("X", nullptr));
  EXPECT_EQ(jf.lower(a).comm_report().events.size(), 0u) << jf.lower(a).comm_report().str();
  // The same with the region written out: use_abstract_mesh, reshard in and out.
  AbstractMesh ex = m.abstract_mesh().update_axis_types({{"X", AxisType::Explicit}});
  auto region = jit([ex](const Array& u) {
    Array y;
    {
      AbstractMeshScope s(ex);
      y = sin(reshard(u, P("X")));
    }
    return reshard(y, P());
  });
  Array r = region(a);
  expect_eq(sin(x), r, "use_abstract_mesh");
  EXPECT_EQ(spec_of(r), P("X", nullptr));
  EXPECT_EQ(region.lower(a).comm_report().events.size(), 0u) << region.lower(a).comm_report().str();
}

// Item 5: making a Manual axis Auto or Explicit is JAX's NotImplementedError.
TEST(ShardMapAuto, ManualAxisCannotBecomeAutoOrExplicit) {
  for (AxisType t : {AxisType::Explicit, AxisType::Auto}) {
    Mesh m = make_mesh({2, 2}, {"x", "y"}, {t, t});
    MeshScope scope(m);
    Array xs = device_put(iota({4, 4}), P("x", "y"));
    for (bool to_auto : {true, false})
      for (std::vector<std::string> axes : {std::vector<std::string>{}, {"x"}}) {
        auto body = [&](const Array& b) {
          auto twice = [](const Array& u) { return u * 2.f; };
          if (to_auto) return auto_axes(twice, {.axes = axes, .out_sharding = P()})(b);
          return explicit_axes(twice, {.axes = axes, .in_sharding = P()})(b);
        };
        auto f = shard_map(body, {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
        for (bool use_jit : {false, true}) {
          std::string msg = error_of<NotImplementedError>([&] {
            if (use_jit)
              (void)jit(f)(xs);
            else
              (void)f(xs);
          });
          EXPECT_HAS(msg,
                     "Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is "
                     "not allowed.");
        }
      }
  }
}

// jnp.zeros_like keeps a concrete x's sharding; Auto axes are not in types, so the
// layout must come from x itself (the optimizer's moment slots rely on it).
TEST(AutoMeshLikeOps, FullLikeKeepsTheConcreteLayout) {
  Mesh m = auto_mesh({4, 2}, {"data", "model"});
  Array x = device_put(iota({8, 4}), NamedSharding(m, P("data", "model")));
  for (const Array& r : {zeros_like(x), ones_like(x), full_like(x, 3.0), empty_like(x),
                         zeros_like(x, DType::Int32)}) {
    EXPECT_EQ(r.sharding().spec(), P("data", "model"));
    EXPECT_EQ(r.addressable_shards()[0].data->shape(), (Shape{2, 2}));
  }
  EXPECT_EQ(test::values<float>(ones_like(x)), std::vector<float>(32, 1.f));
}
