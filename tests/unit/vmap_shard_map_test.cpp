// vmap of shard_map (manual-spmd §6.3): the batch dimension enters the specs unsplit,
// or split over spmd_axis_name; each device batches its share of the examples. Every
// result is checked against a loop over the examples, eagerly and under jit.
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

// Auto axes: shard_map lays the arguments out as in_specs say (on Explicit axes the
// specs must match the arguments' types, which vmap's per-example view would hide).
Mesh auto_mesh(const std::vector<int>& shape, const std::vector<std::string>& names) {
  return make_mesh(shape, names, std::vector<AxisType>(shape.size(), AxisType::Auto));
}

Array iota_f(const Shape& s) { return test::ramp(s, 0.25, -3.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-4, what);
}

// f on each example (rows of x along dim 0), stacked.
Array loop(const std::function<Array(const Array&)>& f, const Array& x) {
  std::vector<Array> rows;
  for (int64_t k = 0; k < x.shape()[0]; ++k) rows.push_back(f(x[k]));
  return stack(rows, 0);
}

// A shard_map over 'x' whose result depends on every block: a normalised row.
std::function<Array(const Array&)> normalise(const Mesh& m) {
  return [m](const Array& v) {
    return shard_map([](const Array& b) { return sin(b) / psum(sum(b * b), "x"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
}

TEST(VmapShardMap, BatchUnsplitMatchesTheLoop) {
  for (auto shape : {std::vector<int>{4}, std::vector<int>{2, 4}}) {
    Mesh m = shape.size() == 1 ? auto_mesh(shape, {"x"}) : auto_mesh(shape, {"x", "y"});
    Array x = iota_f({3, 8});
    Array want = loop(normalise(m), x);
    auto vf = vmap(normalise(m));
    Array xs = device_put(x, NamedSharding(m, P()));
    expect_eq(want, vf(xs), "vmap of shard_map, mesh " + m.str());
    expect_eq(want, jit(vf)(xs), "jit(vmap(shard_map)), mesh " + m.str());
    expect_eq(want, vmap(normalise(m), {.in_axes = 1})(transpose(xs)), "batch at dim 1");
    // The batch dimension enters the specs unsplit (§6.3).
    std::string text = jit(vf).lower(xs).program;
    EXPECT_NE(text.find("in_specs=(P(None, 'x')) out_specs=(P(None, 'x'))"), std::string::npos)
        << text;
  }
}

TEST(VmapShardMap, SpmdAxisNameSplitsTheBatch) {
  Mesh m = auto_mesh({2, 4}, {"x", "y"});
  Array x = iota_f({8, 6});
  auto f = [m](const Array& v) {
    return shard_map(
        [](const Array& b) {
          Array s = psum(sum(b), "x");
          return b * s + static_cast<double>(axis_size("y"));
        },
        {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {}})(v);
  };
  Array want = loop(f, x);
  auto vf = vmap(f, {.spmd_axis_name = {"y"}});
  Array xs = device_put(x, NamedSharding(m, P()));
  Array got = vf(xs);
  expect_eq(want, got, "spmd_axis_name");
  expect_eq(want, jit(vf)(xs), "jit, spmd_axis_name");
  // P('x') with the batch at 0 becomes P('y', 'x') (§6.3); 'y' is Auto, so the types
  // do not show it, the specs do.
  std::string text = jit(vf).lower(xs).program;
  EXPECT_NE(text.find("in_specs=(P('y', 'x')) out_specs=(P('y', 'x'))"), std::string::npos) << text;
}

TEST(VmapShardMap, SpmdAxisNameOnExplicitAxes) {
  // On Explicit axes the batch is resharded over 'y' and the types show it.
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  Array x = iota_f({4, 6});
  Array xs = device_put(x, NamedSharding(m, P(nullptr, "x")));
  auto f = [m](const Array& v) {
    return shard_map([](const Array& b) { return b * psum(sum(b), "x"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
  Array want = loop(f, x);
  auto vf = vmap(f, {.spmd_axis_name = {"y"}});
  Array got = vf(xs);
  expect_eq(want, got, "spmd_axis_name on Explicit axes");
  expect_eq(want, jit(vf)(xs), "the same under jit");
  EXPECT_EQ(P("y", "x"), typeof(got).sharding.spec().normalized(2));
}

TEST(VmapShardMap, SpmdAxisNameInTheSpecsIsRefused) {
  Mesh m = auto_mesh({2, 4}, {"x", "y"});
  Array xs = device_put(iota_f({4, 8}), NamedSharding(m, P()));
  auto f = [m](const Array& v) {
    return shard_map([](const Array& b) { return b * 2.0; },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
  std::string msg = error_of<ValueError>([&] { vmap(f, {.spmd_axis_name = {"x"}})(xs); });
  EXPECT_NE(msg.find("vmap spmd_axis_name cannot appear in shard_map in_specs"), std::string::npos)
      << msg;
  // A body reducing over the axis the batch is split over would mix examples.
  auto g = [m](const Array& v) {
    return shard_map([](const Array& b) { return psum(b, "y"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
  msg = error_of<ValueError>([&] { vmap(g, {.spmd_axis_name = {"y"}})(xs); });
  EXPECT_NE(msg.find("the body has a collective over 'y'"), std::string::npos) << msg;
}

TEST(VmapShardMap, ExplicitlyShardedBatch) {
  // The batch arrives sharded over 'y': the shard_map may not name 'y' (§6.3).
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  Array x = iota_f({4, 8});
  Array xs = device_put(x, NamedSharding(m, P("y", "x")));
  auto f = [m](const Array& v) {
    return shard_map([](const Array& b) { return b - pmean(b, "x"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
  Array want = loop(f, x);
  expect_eq(want, vmap(f)(xs), "batch sharded over y");
  auto bad = [m](const Array& v) {
    return shard_map([](const Array& b) { return b; },
                     {.mesh = m, .in_specs = {P("y")}, .out_specs = P("y")})(v);
  };
  // The example's type no longer shows 'y', so shard_map's Explicit-mode assertion
  // refuses first (JAX: "vmapped away explicit mesh axis cannot appear in shard_map
  // in_specs"; ours names the example's type).
  std::string msg = error_of<ValueError>([&] { vmap(bad)(xs); });
  EXPECT_NE(msg.find("in_specs P('y',) for args[0] differ from the argument's sharding P('x',)"),
            std::string::npos)
      << msg;
}

TEST(VmapShardMap, AxisNameReachesIntoTheBody) {
  // psum over the vmap's axis_name inside the shard_map body reduces over the batch.
  Mesh m = auto_mesh({4}, {"x"});
  Array x = iota_f({3, 8});
  auto f = [m](const Array& v) {
    return shard_map([](const Array& b) { return b / psum(b * b, "i"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P("x")})(v);
  };
  Array want = x / sum(x * x, 0);
  Array xs = device_put(x, NamedSharding(m, P()));
  expect_eq(want, vmap(f, {.axis_name = "i"})(xs), "psum over the vmap name in the body");
  expect_eq(want, jit(vmap(f, {.axis_name = "i"}))(xs), "the same under jit");
}

TEST(VmapShardMap, GradOfVmapOfShardMap) {
  Mesh m = auto_mesh({4}, {"x"});
  Array x = iota_f({3, 8});
  auto loss = [m](const Array& v) { return sum(vmap(normalise(m))(v)); };
  auto loss1 = [](const Array& v) {
    return sum(loop([](const Array& r) { return sin(r) / sum(r * r); }, v));
  };
  Array xs = device_put(x, NamedSharding(m, P()));
  expect_eq(grad(loss1)(x), grad(loss)(xs), "grad of vmap of shard_map");
}

TEST(VmapShardMap, GradOfAnUnbatchedArgumentSumsOverTheSplitBatch) {
  // The batch is split over a mesh axis (the argument's sharding, or spmd_axis_name):
  // devices along it hold different examples, so the cotangent of an argument every
  // example shares is summed over them (found by tests/fuzz; each device kept its own
  // share under a replicated type).
  for (bool spmd : {false, true}) {
    Mesh m = spmd ? auto_mesh({2, 2}, {"x", "y"}) : make_mesh({2, 2}, {"x", "y"});
    Array x = device_put(array<float>({1.f, 2.f, 3.f, 4.f}), NamedSharding(m, P("x")));
    Array s = device_put(array<float>(std::vector<float>{3.f}, {}), NamedSharding(m, P()));
    auto f = [&](const Array& xs, const Array& sc) {
      auto one = [&](const Array& xi) {
        return shard_map([](const Array& b, const Array& c) { return square(b * c); },
                         {.mesh = m, .in_specs = {P(), P()}, .out_specs = P()})(xi, sc);
      };
      return sum(spmd ? vmap(one, {.spmd_axis_name = {"x"}})(xs) : vmap(one)(xs));
    };
    for (bool use_jit : {false, true}) {
      Array g = use_jit ? jit(grad(f, argnums<1>))(x, s) : grad(f, argnums<1>)(x, s);
      std::string what =
          std::string(spmd ? "spmd_axis_name" : "sharded batch") + (use_jit ? ", jit" : ", eager");
      // d/ds sum((x s)^2) = 2 s sum(x^2) = 180, on every device.
      for (const auto& sh : g.addressable_shards())
        EXPECT_EQ(sh.data->to_vector<float>(), std::vector<float>{180.f})
            << what << " on " << sh.device.str();
    }
  }
}

TEST(VmapShardMap, VmapOfPmap) {
  Array x = iota_f({3, 4, 5});  // batch 3 of pmap over 4 devices
  auto p = pmap([](const Array& r) { return r * 2.0 + psum(r, "d"); }, {.axis_name = "d"});
  Array want = loop([&](const Array& e) { return p(e); }, x);
  expect_eq(want, vmap(p)(x), "vmap of pmap");
}

}  // namespace
