// Partial-manual shard_map and nesting (manual-spmd §2.4): axis_names a subset of the
// mesh's axes keeps the other axes' sharding inside the body (the partitioner still
// partitions along them); an inner shard_map makes further axes manual. Checked
// against the same math on one device, eagerly and under jit.
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.125, -2.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-3, what);
}

TEST(ShardMapPartial, OtherAxesKeepTheirShardingInside) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota_f({8, 12});
  Array xs = device_put(x, P("x", "y"));
  std::string seen;
  auto f = shard_map(
      [&](const Array& b) {
        seen = typeof(b).str();
        // A y-sharded block: the sum over it is the partitioner's all-reduce over y.
        return sin(b) * psum(sum(b * b), "x");
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  Array want = sin(x) * sum(x * x);
  Array got = f(xs);
  expect_eq(want, got, "partial manual, eager");
  EXPECT_EQ("f32[4,12@y]{V:x}", seen);
  EXPECT_EQ(P("x", "y"), typeof(got).sharding.spec().normalized(2));
  expect_eq(want, jit(f)(xs), "partial manual, jit");
  // AD through it: residuals keep the block's y sharding.
  auto loss = [&](const Array& a) { return sum(f(a)); };
  auto loss1 = [](const Array& a) { return sum(sin(a) * sum(a * a)); };
  expect_eq(grad(loss1)(x), grad(loss)(xs), "grad, partial manual");
  expect_eq(grad(loss1)(x), jit(grad(loss))(xs), "jit(grad), partial manual");
  // in_specs inferred from the argument: its manual axes only.
  auto g =
      shard_map([](const Array& b) { return b * 2.0; }, {.out_specs = P("x"), .axis_names = {"x"}});
  Array y = g(xs);
  expect_eq(x * 2.0, y, "inferred in_specs");
  EXPECT_EQ(P("x", "y"), typeof(y).sharding.spec().normalized(2));
  // Elementwise collectives over x on y-sharded blocks move only the local y-shards.
  auto h = shard_map(
      [](const Array& b) {
        return psum(b, "x") + ppermute(b, "x", {{0, 1}, {1, 0}});
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  Array r = reshape(x, {2, 4, 12});
  Array want_h = reshape(sum(r, 0) + stack({r[1], r[0]}, 0), {8, 12});
  expect_eq(want_h, h(xs), "psum + ppermute on y-sharded blocks");
  expect_eq(want_h, jit(h)(xs), "the same under jit");
  std::string local = jit(h).lower(xs).local;
  EXPECT_NE(local.find("all_reduce in 4 groups of 2: {0,4} {1,5} {2,6} {3,7}, 48 B per device"),
            std::string::npos)
      << local;
}

TEST(ShardMapPartial, CollectivesOverTheManualAxisOnly) {
  Mesh m = make_mesh({2, 2, 2}, {"x", "y", "z"});
  MeshScope scope(m);
  Array x = iota_f({4, 8});
  Array xs = device_put(x, P("y", "z"));
  auto f = shard_map(
      [](const Array& b) {  // b: f32[2,8@z]{V:y}
        Array g = all_gather(b, "y", {.tiled = true, .invariant = true});
        return g + static_cast<double>(axis_size("y"));
      },
      {.in_specs = {P("y")}, .out_specs = P(), .axis_names = {"y"}});
  expect_eq(x + 2.0, f(xs), "all_gather over the manual axis");
  expect_eq(x + 2.0, jit(f)(xs), "the same under jit");
}

TEST(ShardMapPartial, AutoAxesInsideAreTheCompilers) {
  Mesh m = make_mesh({2, 4}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope scope(m);
  Array x = iota_f({8, 4});
  Array xs = device_put(x, P("x"));
  auto f = shard_map(
      [](const Array& b) {
        Array c = with_sharding_constraint(b * 3.0, P(nullptr, "y"));  // legal: y is Auto
        return c - pmean(c, "x");
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  Array r = reshape(x * 3.0, {2, 4, 4});  // the two x blocks
  Array want = reshape(r - mean(r, 0), {8, 4});
  expect_eq(want, f(xs), "Auto y inside");
  expect_eq(want, jit(f)(xs), "Auto y inside, jit");
}

TEST(ShardMapPartial, ErrorsNameTheManualAxes) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(m);
  Array xs = device_put(iota_f({8, 12}), P("x", "y"));
  std::string msg = error_of<ValueError>([&] {
    shard_map([](const Array& b) { return b; },
              {.in_specs = {P("x", "y")}, .out_specs = P("x"), .axis_names = {"x"}})(xs);
  });
  EXPECT_NE(msg.find("in_specs argument must refer to an axis marked as manual ('x',)"),
            std::string::npos)
      << msg;
  // A collective over a non-manual axis is unbound.
  msg = error_of<NameError>([&] {
    shard_map([](const Array& b) { return psum(b, "y"); },
              {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}})(xs);
  });
  EXPECT_NE(msg.find("Found an unbound axis name: y"), std::string::npos) << msg;
  // The non-manual axis must be minor to the manual one in a dimension.
  Array ys = device_put(iota_f({8, 12}), P(Axes{"y", "x"}));
  msg = error_of<NotImplementedError>([&] {
    shard_map([](const Array& b) { return b; },
              {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}})(ys);
  });
  EXPECT_NE(msg.find("expected the manual axes major"), std::string::npos) << msg;
}

}  // namespace

namespace {

TEST(ShardMapNested, InnerShardMapMakesMoreAxesManual) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota_f({8, 12});
  Array xs = device_put(x, P("x", "y"));
  std::string outer_t, inner_t, back_t;
  auto f = shard_map(
      [&](const Array& b) {  // f32[4,12@y]{V:x}
        outer_t = typeof(b).str();
        Array c = shard_map(
            [&](const Array& d) {  // f32[4,3]{V:(x,y)}
              inner_t = typeof(d).str();
              return d * psum(sum(d), "y");  // sum over this x block, on every y device
            },
            {.in_specs = {P(nullptr, "y")}, .out_specs = P(nullptr, "y"), .axis_names = {"y"}})(b);
        back_t = typeof(c).str();
        return c + psum(c, "x");
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  Array r = reshape(x, {2, 4, 12});
  Array c = r * reshape(sum(r, {1, 2}), {2, 1, 1});
  Array want = reshape(c + sum(c, 0), {8, 12});
  expect_eq(want, f(xs), "nested, eager");
  expect_eq(want, jit(f)(xs), "nested, jit");
  EXPECT_EQ("f32[4,12@y]{V:x}", outer_t);
  EXPECT_EQ("f32[4,3]{V:(x,y)}", inner_t);
  EXPECT_EQ("f32[4,12@y]{V:x}", back_t);  // inner-manual axes leave the vma (§2.4)
  // The nested one must name a new axis, and the enclosing mesh.
  std::string msg = error_of<ValueError>([&] {
    shard_map(
        [](const Array& b) {
          return shard_map([](const Array& d) { return d; },
                           {.in_specs = {P()}, .out_specs = P(), .axis_names = {"x"}})(b);
        },
        {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}})(xs);
  });
  EXPECT_NE(msg.find("makes no new axis manual"), std::string::npos) << msg;
}

TEST(ShardMapNested, GradThroughNestedShardMaps) {
  Mesh m = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota_f({4, 4});
  Array xs = device_put(x, P("x", "y"));
  auto f = shard_map(
      [](const Array& b) {
        Array c =
            shard_map([](const Array& d) { return psum(sum(sin(d) * d), "y"); },
                      {.in_specs = {P(nullptr, "y")}, .out_specs = P(), .axis_names = {"y"}})(b);
        return reshape(c, {1});
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  auto loss = [&](const Array& a) { return sum(f(a)); };
  auto loss1 = [](const Array& a) { return sum(sin(a) * a); };
  // f gives one value per x block (shape [2]); their sum is the whole sum.
  expect_eq(grad(loss1)(x), grad(loss)(xs), "grad through nested shard_maps");
}

}  // namespace
