// manual-spmd §9, "rules an implementer is most likely to get wrong": one test per
// rule, named for it, on a mesh of 4 devices ('x'), eagerly (jit runs the same
// partitioner; the other shard_map tests run both).
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.5, -1.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-4, what);
}

class ManualSpmdRules : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope{mesh};
  Array x = device_put(iota_f({8}), P("x"));  // blocks f32[2]{V:x}
  Array w = device_put(iota_f({2}), P());     // invariant
};

// 1. The user API unions operand vmas with pvary; the IR types must agree.
TEST_F(ManualSpmdRules, R1_UserOpsUnionVmaWithPvary) {
  std::string t, text;
  auto f = shard_map(
      [&](const Array& b, const Array& c) {
        Array y = b * c;  // c is invariant: pvary'd
        t = typeof(y).str();
        return y;
      },
      {.in_specs = {P("x"), P()}, .out_specs = P("x")});
  expect_eq(x * concatenate({w, w, w, w}, 0), f(x, w), "b * c");
  EXPECT_EQ("f32[2]{V:x}", t);
  text = jit(f).lower(x, w).program;
  EXPECT_NE(text.find("pvary[axes=('x',)]"), std::string::npos) << text;
}

// 2. psum transposes to a free pvary and pvary to psum; without check_vma psum is
//    its own transpose and shard_map's transpose rescales.
TEST_F(ManualSpmdRules, R2_PsumAndPvaryTransposeIntoEachOther) {
  for (bool check : {true, false}) {
    auto f = shard_map([](const Array& b) { return psum(sum(b * b), "x"); },
                       {.in_specs = {P("x")}, .out_specs = P(), .check_vma = check});
    expect_eq(x * 2.0, grad([&](const Array& a) { return f(a); })(x),
              check ? "check_vma" : "check_vma=false");
  }
}

// 3. psum of a value invariant over the axis multiplies by the axis size.
TEST_F(ManualSpmdRules, R3_PsumOfInvariantIsTimesSize) {
  auto f =
      shard_map([](const Array& c) { return psum(c, "x"); }, {.in_specs = {P()}, .out_specs = P()});
  expect_eq(w * 4.0, f(w), "psum(invariant)");
  auto g = shard_map([](const Array& b) { return b * 0.0 + static_cast<double>(axis_size("x")); },
                     {.in_specs = {P("x")}, .out_specs = P("x")});
  EXPECT_EQ(4.0, g(x).to_vector<double>()[0]);
}

// 4. all_gather's output is varying, so out_specs=P() is refused; .invariant fixes it.
TEST_F(ManualSpmdRules, R4_AllGatherIsVarying) {
  std::string msg = error_of<ValueError>([&] {
    shard_map([](const Array& b) { return all_gather(b, "x", {.tiled = true}); },
              {.in_specs = {P("x")}, .out_specs = P()})(x);
  });
  EXPECT_HAS(msg, "out_specs which require replication");
  auto f = shard_map(
      [](const Array& b) { return all_gather(b, "x", {.tiled = true, .invariant = true}); },
      {.in_specs = {P("x")}, .out_specs = P()});
  expect_eq(iota_f({8}), f(x), "all_gather invariant");
}

// 5. Unmentioned axes: a checked promise of replication out, tiling (copies) in.
TEST_F(ManualSpmdRules, R5_UnmentionedAxes) {
  std::string msg = error_of<ValueError>([&] {
    shard_map([](const Array& b) { return b; }, {.in_specs = {P("x")}, .out_specs = P()})(x);
  });
  EXPECT_HAS(msg, "and not {x}");
  auto f = shard_map([](const Array& c) { return c + 1.0; }, {.in_specs = {P()}, .out_specs = P()});
  expect_eq(w + 1.0, f(w), "every device has the whole input");
}

// 6. The gradient with respect to an invariant value is the sum over instances.
TEST_F(ManualSpmdRules, R6_InvariantGradientIsTheSum) {
  auto loss = [](const Array& c, const Array& d) {
    return shard_map([](const Array& cc, const Array& b) { return psum(sum(cc * b), "x"); },
                     {.in_specs = {P(), P("x")}, .out_specs = P()})(c, d);
  };
  Array g = grad(loss)(w, x);
  expect_eq(sum(reshape(iota_f({8}), {4, 2}), 0), g, "sum over the 4 blocks");
}

// 7. A tangent's type includes vma: linearize at an invariant primal refuses a varying
//    tangent, and the error names pvary (JAX never inserts it).
TEST_F(ManualSpmdRules, R7_TangentTypeIncludesVma) {
  std::string msg = error_of<ValueError>([&] {
    shard_map(
        [](const Array& b, const Array& c) {
          auto [y, lin] = linearize([](const Array& p) { return sin(p); }, c);
          return lin(b) + y;
        },
        {.in_specs = {P("x"), P()}, .out_specs = P("x")})(x, w);
  });
  EXPECT_HAS(msg, "pvary");
}

// 8. ppermute fills non-destinations with zeros; its transpose inverts the pairs.
TEST_F(ManualSpmdRules, R8_PpermuteZerosAndInversePairs) {
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, "x", {{0, 1}, {1, 2}});
      },
      {.in_specs = {P("x")}, .out_specs = P("x")});
  std::vector<double> got = f(x).to_vector<double>();
  std::vector<double> in = iota_f({8}).to_vector<double>();
  std::vector<double> want = {0, 0, in[0], in[1], in[2], in[3], 0, 0};
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(want[i], got[i]) << i;
  // d/dx sum(f(x) * k): device d's block gets the weight of the device it was sent to.
  Array k = device_put(iota_f({8}) + 10.0, P("x"));
  Array g = grad([&](const Array& a) { return sum(f(a) * k); })(x);
  std::vector<double> kk = (iota_f({8}) + 10.0).to_vector<double>();
  std::vector<double> wg = {kk[2], kk[3], kk[4], kk[5], 0, 0, 0, 0};
  std::vector<double> gg = g.to_vector<double>();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(wg[i], gg[i]) << i;
}

// 9. Combined indices are row-major in the order the names are given.
TEST(ManualSpmdRules9, R9_TupleIndicesAreRowMajorInTheGivenOrder) {
  Mesh m = make_mesh({2, 2}, {"a", "b"});
  MeshScope scope(m);
  Array z = device_put(zeros({2, 2}, int32), P("a", "b"));
  auto idx = [](AxisNames names) {
    return shard_map(
        [names](const Array& b) {
          return reshape(axis_index(names), {1, 1}) + b;
        },
        {.in_specs = {P("a", "b")}, .out_specs = P("a", "b")});
  };
  EXPECT_EQ((std::vector<int>{0, 1, 2, 3}), idx(AxisNames{"a", "b"})(z).to_vector<int>());
  EXPECT_EQ((std::vector<int>{0, 2, 1, 3}), idx(AxisNames{"b", "a"})(z).to_vector<int>());
}

// 10. pmap bodies are rank-reduced, run without vma, never check out_axes=none, and
//     cannot be nested.
TEST(ManualSpmdRules10, R10_PmapIsRankReducedUncheckedAndFlat) {
  Array data = iota_f({4, 3});
  std::string t;
  auto f = pmap(
      [&](const Array& r) {
        t = typeof(r).str();
        return r * static_cast<double>(axis_size("i"));
      },
      {.axis_name = "i", .out_axes = none});
  Array y = f(data);
  EXPECT_EQ("f32[3]", t);  // no vma
  expect_eq(data[0] * 4.0, y, "device 0's copy, unchecked");
  std::string msg = error_of<ValueError>([&] {
    pmap([](const Array& r) { return pmap([](const Array& s) { return s; })(r); })(iota_f({4, 4}));
  });
  EXPECT_HAS(msg, "nested pmap is not supported");
}

}  // namespace
