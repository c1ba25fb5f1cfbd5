// The block-moving collectives' rules: vma types (manual-spmd §4, §9.4), the error
// texts of §4.3-§4.9, printed parameters, and their AD rules checked inside a
// shard_map body by the dot-product identity sum_dev <ct, jvp(t)> = sum_dev
// <vjp(ct), t> (the transposes of §4.10 against the jvps, which are the collectives
// themselves and are checked against a loop in collectives_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.25, -1.0); }

// Runs body on mesh (2, 4) ('x', 'y') over an (8, 8) input split P('x', 'y')
// (blocks (4, 2), varying over both axes), eagerly.
Array run(const std::function<Array(const Array&)>& body, PartitionSpec out = P("x", "y"),
          bool check_vma = true) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8, 8}), P("x", "y"));
  return shard_map(body, {.in_specs = P("x", "y"), .out_specs = out, .check_vma = check_vma})(x);
}

TEST(CollectiveTypes, VaryingAndInvariantResults) {
  std::string g, gi, s, p, a, b;
  run([&](const Array& x) {
    g = typeof(all_gather(x, "y")).str();
    gi = typeof(all_gather(x, "y", {.axis = 1, .tiled = true, .invariant = true})).str();
    s = typeof(psum_scatter(x, "x", {.tiled = true})).str();
    p = typeof(ppermute(x, "y", {{0, 1}, {1, 0}})).str();
    a = typeof(all_to_all(x, "x", 1, 0, true)).str();
    b = typeof(pbroadcast(x, "x", 1)).str();
    return x;
  });
  EXPECT_EQ(g, "f32[4,4,2]{V:(x,y)}");
  EXPECT_EQ(gi, "f32[4,8]{V:x}");
  EXPECT_EQ(s, "f32[2,2]{V:(x,y)}");
  EXPECT_EQ(p, "f32[4,2]{V:(x,y)}");
  EXPECT_EQ(a, "f32[8,1]{V:(x,y)}");
  EXPECT_EQ(b, "f32[4,2]{V:(x,y)}");
}

TEST(CollectiveTypes, AllGatherOfAnInvariantValuePvariesIt) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array w = device_put(iota_f({3}), P());
  auto f = shard_map([&](const Array& x) { return all_gather(x * 0.0 + w, "x", {.tiled = true}); },
                     {.in_specs = P(), .out_specs = P("x")});
  Array y = f(device_put(iota_f({3}), P()));
  EXPECT_EQ(y.shape(), (Shape{48}));  // a (12,) block per device
  EXPECT_NE(make_jaxpr(f, device_put(iota_f({3}), P())).find("pvary"), std::string::npos);
}

TEST(CollectiveTypes, AllGatherOutputIsVaryingSoOutSpecsPFails) {
  // §9.4: every device holds the same data, but the type says varying.
  std::string e = error_of<ValueError>([] {
    run([](const Array& x) { return all_gather(x, AxisNames{"x", "y"}, {.tiled = true}); }, P());
  });
  EXPECT_NE(e.find("out_specs which require replication"), std::string::npos) << e;
  Array y = run(
      [](const Array& x) {
        return all_gather(x, AxisNames{"x", "y"}, {.tiled = true, .invariant = true});
      },
      P());
  EXPECT_EQ(y.shape(), (Shape{32, 2}));
}

TEST(CollectiveErrors, TextsOfTheSpec) {
  auto err = [](const std::function<Array(const Array&)>& body) {
    return error_of<ValueError>([&] { run(body); });
  };
  EXPECT_NE(err([](const Array& x) {
              return psum_scatter(x, "y", {.scatter_dimension = 1});
            }).find("reduce_scatter operand scatter dimension size 2 must match shard count 4"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) {
              return psum_scatter(x, "y", {.scatter_dimension = 1, .tiled = true});
            })
                .find("tiled reduce_scatter operand scatter dimension size 2 must be divisible by "
                      "shard_count 4"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) { return all_to_all(x, "y", 1, 0); })
                .find("all_to_all requires the size of the mapped axis axis_name to equal "
                      "x.shape[split_axis], but they are 4 and 2 respectively."),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) { return all_to_all(x, "y", 1, 0, true); })
                .find("The size of all_to_all split_axis (2) has to be divisible by the size of "
                      "the named axis ('y',) (4)"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) {
              return ppermute(x, "y", {{0, 1}, {0, 2}});
            }).find("ppermute sources and destinations must be unique, got ((0, 1), (0, 2))"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) {
              return ppermute(x, "y", {{0, 4}});
            }).find("[0, 4)"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) {
              return pshuffle(x, "y", {1, 1, 2, 3});
            }).find("`perm` does not represent a permutation: [1, 1, 2, 3]"),
            std::string::npos);
  EXPECT_NE(err([](const Array& x) { return pbroadcast(x, "y", 4); }).find("0 <= source < 4"),
            std::string::npos);
  EXPECT_NE(
      err([](const Array& x) { return all_gather(x, "y", {.axis = 3}); }).find("[all_gather]"),
      std::string::npos);
  // pbroadcast does not pvary its operand (§4.9).
  std::string e = err([](const Array& x) { return pbroadcast(psum(x, "y"), "y", 0) + x; });
  EXPECT_NE(e.find("Collective pbroadcast must be applied to a device-varying type, but got {x} "
                   "for collective acting over axis name ('y',)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("ppermute"), std::string::npos) << e;
}

TEST(CollectiveErrors, UnboundAxisNamesOutsideShardMap) {
  Array x = iota_f({4, 4});
  for (auto f : std::vector<std::function<Array()>>{
           [&] { return all_gather(x, "i"); }, [&] { return psum_scatter(x, "i"); },
           [&] {
             return ppermute(x, "i", {{0, 1}});
           },
           [&] { return all_to_all(x, "i", 0, 0); }, [&] { return pbroadcast(x, "i", 0); }}) {
    std::string e = error_of<NameError>(f);
    EXPECT_NE(e.find("Found an unbound axis name: i"), std::string::npos) << e;
  }
}

TEST(CollectiveTypes, CheckVmaFalseTypesNothing) {
  std::string t;
  run(
      [&](const Array& x) {
        Array y = all_gather(x, "y", {.tiled = true});
        t = typeof(y).str();
        return psum_scatter(y, "y", {.tiled = true}) / 4.0;
      },
      P("x", "y"), false);
  EXPECT_EQ(t, "f32[16,2]");
}

TEST(CollectivePrinting, ParametersAsJaxPrintsThem) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8, 8}), P("x", "y"));
  auto f = shard_map(
      [](const Array& b) {
        Array g = all_gather(b, "y", {.axis = 1, .tiled = true});
        Array s = psum_scatter(g, "y", {.scatter_dimension = 1, .tiled = true});
        Array p = ppermute(s, "x", {{0, 1}, {1, 0}});
        Array a = all_to_all(p, "x", 0, 0, true);
        return pbroadcast(a, "x", 1);
      },
      {.in_specs = P("x", "y"), .out_specs = P("x", "y")});
  std::string j = make_jaxpr(f, x);
  for (const char* want : {"all_gather[axes=('y',) axis=1 tiled=True]",
                           "reduce_scatter[axes=('y',) scatter_dimension=1 tiled=True]",
                           "ppermute[axes=('x',) perm=((0, 1), (1, 0))]",
                           "all_to_all[axes=('x',) split_axis=0 concat_axis=0 tiled=True]",
                           "pbroadcast[axes=('x',) source=1]"})
    EXPECT_NE(j.find(want), std::string::npos) << want << "\n" << j;
}

TEST(CollectivePrinting, LocalTextShowsGroupsAndBytes) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8, 8}), P("x", "y"));
  auto f = shard_map([](const Array& b) { return psum(all_gather(b, "y", {.tiled = true}), "x"); },
                     {.in_specs = P("x", "y"), .out_specs = P(nullptr, "y")});
  std::string local = jit(f).lower(x).local;
  EXPECT_NE(local.find("all_gather in 2 groups of 4: {0,1,2,3} {4,5,6,7}, 32 B per device"),
            std::string::npos)
      << local;
  EXPECT_NE(local.find("all_reduce in 4 groups of 2: {0,4} {1,5} {2,6} {3,7}, 128 B per device"),
            std::string::npos)
      << local;
}

// The dot-product identity for g inside the body, summed over every device.
void expect_transpose_matches_jvp(const std::function<Array(const Array&)>& g,
                                  bool invariant_out = false) {
  Array r = run(
      [&](const Array& x) {
        Array k = axis_index(AxisNames{"x", "y"}).astype(float32);
        Array t = cos(x) + k;
        auto [y, ty] = jvp(g, x, t);
        Array ct = sin(iota_f(y.shape()) * 1.7) + (invariant_out ? 0.0 * iota_f({}) : k);
        auto [y2, vf] = vjp(g, x);
        Array cx = std::get<0>(vf(ct));
        Array lhs = sum(ct * ty);
        if (!invariant_out) lhs = psum(lhs, AxisNames{"x", "y"});
        Array rhs = psum(sum(cx * t), AxisNames{"x", "y"});
        return stack({lhs, rhs});
      },
      P());
  auto v = test::values<double>(r);
  EXPECT_NEAR(v[0], v[1], 1e-3 * (1 + std::abs(v[0])));
  EXPECT_GT(std::abs(v[0]), 1e-3);
}

TEST(CollectiveAd, TransposesMatchJvpsInsideTheBody) {
  expect_transpose_matches_jvp([](const Array& x) { return all_gather(x, "y", {.axis = 2}); });
  expect_transpose_matches_jvp([](const Array& x) {
    return all_gather(x, AxisNames{"y", "x"}, {.tiled = true});
  });
  expect_transpose_matches_jvp(
      [](const Array& x) { return psum_scatter(x, "y", {.tiled = true}); });
  expect_transpose_matches_jvp([](const Array& x) {
    return psum_scatter(reshape(x, {2, 4}), "y", {.scatter_dimension = 1});
  });
  expect_transpose_matches_jvp([](const Array& x) {
    return ppermute(x, "y", {{0, 2}, {2, 3}, {3, 0}});
  });
  expect_transpose_matches_jvp([](const Array& x) { return all_to_all(x, "x", 0, 1, true); });
  expect_transpose_matches_jvp([](const Array& x) {
    return all_to_all(reshape(x, {4, 2}), "y", 0, 1);
  });
  expect_transpose_matches_jvp([](const Array& x) { return pbroadcast(x, "y", 2); });
}

TEST(CollectiveAd, InvariantGatherTransposesToThisDevicesSlice) {
  expect_transpose_matches_jvp(
      [](const Array& x) {
        return all_gather(x, AxisNames{"x", "y"}, {.tiled = true, .invariant = true});
      },
      true);
}

TEST(CollectiveAd, GradOfAShiftIsTheReceiversWeight) {
  // loss_d = sum(ppermute(x)_d * (d + 1)): x_k lands on device k+1 (mod 4), so the
  // gradient of the summed loss at x_k is (k + 1) mod 4 + 1.
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({4, 2}), P("x"));
  Array g = shard_map(
      [](const Array& b) {
        auto loss = [](const Array& v) {
          Array w = axis_index("x").astype(float32) + 1.0;
          return sum(ppermute(v, "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}) * w);
        };
        return grad(loss)(b);
      },
      {.in_specs = P("x"), .out_specs = P("x")})(x);
  EXPECT_EQ(test::values<double>(g), (std::vector<double>{2, 2, 3, 3, 4, 4, 1, 1}));
}

}  // namespace
