// shard_map (issue 12, first part): blocks and their vma types, psum / pmean / pmax /
// pmin / axis_index against a loop over devices, implicit pvary, the out_specs
// replication check and check_vma=false, eager and under jit, on several meshes.
#include <gtest/gtest.h>

#include <cmath>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.5, -1.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what = "") {
  test::expect_close(want, got, 1e-5, what);
}

TEST(ShardMap, ElementwiseBodyOnEveryMesh) {
  for (int n : {1, 2, 4, 8}) {
    Mesh mesh = make_mesh({n}, {"x"});
    MeshScope scope(mesh);
    Array x = device_put(iota_f({8, 3}), P("x"));
    std::string seen;
    auto f = shard_map(
        [&](const Array& b) {
          seen = typeof(b).str();
          return sin(b) * 2.0;
        },
        {.in_specs = P("x"), .out_specs = P("x")});
    Array y = f(x);
    EXPECT_EQ(seen, "f32[" + std::to_string(8 / n) + ",3]{V:x}") << n;
    EXPECT_EQ(typeof(y).str(), n == 1 ? "f32[8@x,3]" : "f32[8@x,3]");
    expect_eq(sin(iota_f({8, 3})) * 2.0, y, "mesh " + std::to_string(n));
    expect_eq(y, jit(f)(x), "jit");
  }
}

TEST(ShardMap, PsumPmeanPmaxPminAgainstALoop) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array host = iota_f({8, 2});
  Array x = device_put(host, P("x"));
  auto run = [&](auto op) {
    return shard_map([op](const Array& b) { return op(b); },
                     {.in_specs = P("x"), .out_specs = P()})(x);
  };
  // Blocks are rows [2k, 2k+2): the loop over devices sums the four blocks.
  Array blocks = reshape(host, {4, 2, 2});
  expect_eq(sum(blocks, 0), run([](const Array& b) { return psum(b, "x"); }), "psum");
  expect_eq(mean(blocks, 0), run([](const Array& b) { return pmean(b, "x"); }), "pmean");
  expect_eq(max(blocks, 0), run([](const Array& b) { return pmax(b, "x"); }), "pmax");
  expect_eq(min(blocks, 0), run([](const Array& b) { return pmin(b, "x"); }), "pmin");
  Array s = run([](const Array& b) { return psum(b, "x"); });
  EXPECT_EQ(typeof(s).str(), "f32[2,2]");
  auto jf = jit(shard_map([](const Array& b) { return psum(sum(b), "x"); },
                          {.in_specs = P("x"), .out_specs = P()}));
  test::expect_close(sum(host), jf(x), 1e-4, "jit psum of the sums");
  std::string text = jit(shard_map([](const Array& b) { return psum(b, "x"); },
                                   {.in_specs = P("x"), .out_specs = P()}))
                         .lower(x)
                         .program;
  EXPECT_NE(text.find("shard_map"), std::string::npos) << text;
  EXPECT_NE(text.find("psum"), std::string::npos) << text;
}

TEST(ShardMap, AxisIndexAndTwoAxes) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array host = iota_f({4, 8});
  Array x = device_put(host, P("x", "y"));
  // Each block [2, 2] plus its device's row-major index over (x, y).
  auto f = shard_map(
      [](const Array& b) {
        EXPECT_EQ(typeof(axis_index({"x", "y"})).str(), "i32[]{V:(x,y)}");
        return b + astype(axis_index({"x", "y"}), float32);
      },
      {.in_specs = P("x", "y"), .out_specs = P("x", "y")});
  Array y = f(x);
  auto hv = test::values<float>(host);
  auto yv = test::values<double>(y);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      int idx = (r / 2) * 4 + (c / 2);
      EXPECT_FLOAT_EQ(yv[r * 8 + c], hv[r * 8 + c] + static_cast<float>(idx)) << r << "," << c;
    }
  // psum over y only: the result still varies over x.
  auto g = shard_map([](const Array& b) { return psum(b, "y"); },
                     {.in_specs = P("x", "y"), .out_specs = P("x")});
  Array s = g(x);
  EXPECT_EQ(s.shape(), (Shape{4, 2}));
  expect_eq(sum(reshape(host, {4, 4, 2}), 1), s, "psum over y");
  expect_eq(s, jit(g)(x), "jit");
  int64_t size = 0;
  (void)shard_map(
      [&](const Array& b) {
        size = axis_size({"x", "y"});
        return b;
      },
      {.in_specs = P("x", "y"), .out_specs = P("x", "y")})(x);
  EXPECT_EQ(size, 8);
}

TEST(ShardMap, ImplicitPvaryAndClosures) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array host = iota_f({8});
  Array x = device_put(host, P("x"));
  Array w = array<float>({3.f});  // off the mesh, captured: P()
  std::string wt;
  auto f = shard_map(
      [&](const Array& b, const Array& v) {
        wt = typeof(v).str();
        Array y = b * v + w;                     // v invariant, b varying: pvary inserted for v
        return std::make_pair(y, psum(v, "x"));  // psum of an invariant: times the axis size
      },
      {.in_specs = {P("x"), P()}, .out_specs = {P("x"), P()}});
  auto [y, s] = f(x, array<float>({2.f}));
  EXPECT_EQ(wt, "f32[1]");
  expect_eq(host * 2.0 + 3.0, y);
  test::expect_close(array<float>({8.f}), s, 0, "psum of an invariant");
  // An invariant output with a spec that tiles it: pvary'd, so it is repeated.
  Array t = shard_map([](const Array& v) { return v; },
                      {.in_specs = P(), .out_specs = P("x")})(array<float>({1.f, 2.f}));
  test::expect_close(array<float>({1, 2, 1, 2, 1, 2, 1, 2}), t, 0, "repeated invariant");
}

TEST(ShardMap, ErrorsWithJaxTexts) {
  Mesh mesh = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({4, 4}), P("x", "y"));
  auto id = [](const Array& b) { return b; };
  std::string e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("x", "y"), .out_specs = P("x")})(x); });
  EXPECT_HAS(e,
             "was given out_specs which require replication which can't be statically "
             "inferred given the mesh");
  EXPECT_HAS(e,
             "out_specs is P('x',) which implies that the corresponding output value is only "
             "varying across mesh axes {x} and not {y}, but it was inferred to be possibly "
             "varying over {x,y}");
  e = error_of<NameError>([&] {
    (void)shard_map([](const Array& b) { return psum(b, "z"); },
                    {.in_specs = P("x", "y"), .out_specs = P()})(x);
  });
  EXPECT_HAS(e, "Found an unbound axis name: z");
  e = error_of<NameError>([&] { (void)psum(x, "x"); });
  EXPECT_HAS(e,
             "[psum] Found an unbound axis name: x. To fix this, please call psum under "
             "`tsr::shard_map`");
  e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("x", "z"), .out_specs = P("x", "y")})(x); });
  EXPECT_HAS(e, "must refer to an axis marked as manual");
  Array odd = device_put(iota_f({3, 4}), P());
  e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("x"), .out_specs = P("x")})(odd); });
  EXPECT_HAS(e, "not evenly divisible by the corresponding mesh axis sizes");
  EXPECT_HAS(e, "but 2 does not evenly divide 3");
  e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("y", "x"), .out_specs = P("y", "x")})(x); });
  EXPECT_HAS(e, "differ from the argument's sharding");
  e = error_of<ValueError>([&] {
    (void)shard_map([](const Array& b) { return sum(b); },
                    {.in_specs = P("x", "y"), .out_specs = P("x")})(x);
  });
  EXPECT_HAS(e, "For scalar values (rank 0), consider using an out_specs entry of `P()`");
}

TEST(ShardMap, CheckVmaFalseTrustsTheOutSpecs) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8}), P("x"));
  std::string seen;
  auto f = shard_map(
      [&](const Array& b) {
        seen = typeof(b).str();
        return psum(b, "x");
      },
      {.in_specs = P("x"), .out_specs = P(), .check_vma = false});
  Array y = f(x);
  EXPECT_EQ(seen, "f32[2]");
  expect_eq(sum(reshape(iota_f({8}), {4, 2}), 0), y);
}

}  // namespace

namespace {

// The README's example, as written there.
TEST(ShardMapReadme, TotalOfBlocks) {
  MeshScope scope(make_mesh({4}, {"x"}));
  Array x = device_put(arange(0.0, 8.0), P("x"));
  std::string block;
  auto total = shard_map(
      [&](const Array& b) {
        block = typeof(b).str();
        return psum(sum(b), "x");
      },
      {.in_specs = P("x"), .out_specs = P()});
  test::expect_close(scalar(28.f), total(x), 0, "eager total");
  EXPECT_EQ(block, "f32[2]{V:x}");
  test::expect_close(scalar(28.f), jit(total)(x), 0, "jit total");
}

}  // namespace

namespace {

// Eager shard_maps whose bodies trace to the same program share one lowered program
// (ShardMap::equals compares bodies); bodies differing anywhere do not.
TEST(ShardMap, EagerCacheTellsBodiesApart) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8}), P("x"));
  for (double k : {2.0, 3.0, 2.0 + 1e-7}) {
    auto f =
        shard_map([k](const Array& b) { return b * k; }, {.in_specs = P("x"), .out_specs = P("x")});
    expect_eq(iota_f({8}) * k, f(x), "b * " + std::to_string(k));
  }
  auto g = shard_map([](const Array& b) { return b + psum(b, "x"); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  auto h = shard_map([](const Array& b) { return b + pmax(b, "x"); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  Array r = reshape(iota_f({8}), {4, 2});
  expect_eq(reshape(r + sum(r, 0), {8}), g(x), "psum body");
  expect_eq(reshape(r + max(r, 0), {8}), h(x), "pmax body, same shape of program");
}

}  // namespace
