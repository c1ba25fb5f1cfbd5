// Missing JAX APIs of issue 9: tensordot, reshape(order='F'), roll with a traced
// shift, full/full_like with an array fill value, permutation(key, x, out_sharding).
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "unit/oracle_harness.h"

#include "tsr/tsr.h"

using namespace tsr;
using oracle::ramp;

namespace {

std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }

TEST(Tensordot, IntAndListAxesMatchTheOracle) {
  std::vector<oracle::Input> in = {ramp({8, 4, 2}), ramp({4, 2, 8}, 1)};
  auto ref = [](const std::vector<Array>& a) {
    return matmul(reshape(a[0], {8, 8}), reshape(a[1], {8, 8}));
  };
  for (auto sp :
       {std::vector<PartitionSpec>{P(), P()}, {P("x"), P()}, {P("x"), P(nullptr, nullptr, "y")}})
    oracle::check(
        "tensordot 2", in, sp, [](const std::vector<Array>& a) { return tensordot(a[0], a[1]); },
        ref);
  oracle::check(
      "tensordot lists out_sharding", in, {P(nullptr, "x"), P("x")},
      [](const std::vector<Array>& a) {
        return tensordot(a[0], a[1], {{1, 2}, {0, 1}}, {.out_sharding = P("x")});
      },
      ref, [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8@x,8]"); });
  oracle::check(
      "tensordot 0 (outer)", {ramp({4}), ramp({8}, 1)}, {P(), P("x")},
      [](const std::vector<Array>& a) { return tensordot(a[0], a[1], 0); },
      [](const std::vector<Array>& a) { return outer(a[0], a[1]); });
  Array a = ones({2, 3}), b = ones({3, 4});
  EXPECT_HAS(error_of<TypeError>([&] { tensordot(a, b, 3); }),
             "Number of tensordot axes (axes 3) exceeds input ranks ((2, 3) and (3, 4))");
  EXPECT_HAS(error_of<TypeError>([&] {
               tensordot(a, b, {{1}, {0, 1}});
             }),
             "tensordot requires axes lists to have equal length, got [1] and [0, 1].");
}

TEST(ReshapeOrderF, ColumnMajorAsNumPy) {
  Array x = arange(6).reshape({2, 3});  // [[0,1,2],[3,4,5]]
  EXPECT_EQ(reshape(x, {3, 2}, Order::F).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 4, 3, 2, 1, 5}));
  EXPECT_EQ(reshape(x, {-1}, Order::F).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  oracle::check(
      "reshape F", {ramp({8, 4})}, {P()},
      [](const std::vector<Array>& a) {
        return reshape(a[0], {4, 8}, Order::F);
      },
      [](const std::vector<Array>& a) {
        return transpose(reshape(transpose(a[0]), {8, 4}));
      });
  oracle::check(
      "reshape F out_sharding", {ramp({8, 4})}, {P("x")},
      [](const std::vector<Array>& a) {
        return reshape(a[0], {2, 2, 8}, Order::F, P(nullptr, nullptr, "x"));
      },
      [](const std::vector<Array>& a) {
        return transpose(reshape(transpose(a[0]), {8, 2, 2}));
      },
      [](const Array& r) {
        EXPECT_EQ(typeof(r).sharding.spec().normalized(3).entries()[2], PartitionEntry("x"));
      });
}

TEST(RollTraced, ShiftIsAnArrayUnderJit) {
  Array x = arange(5);
  auto f = jit([](const Array& a, const Array& s) { return roll(a, s, {0}); });
  for (int s : {-7, -1, 0, 2, 5, 12})
    EXPECT_EQ(f(x, scalar<int32_t>(s)).to_vector<int32_t>(), roll(x, s, 0).to_vector<int32_t>())
        << s;
  Array m = arange(12).reshape({3, 4});
  EXPECT_EQ(roll(m, array(std::vector<int32_t>{1, -1}), {0, 1}).to_vector<int32_t>(),
            roll(m, std::vector<int64_t>{1, -1}, {0, 1}).to_vector<int32_t>());
  EXPECT_EQ(roll(m, scalar<int32_t>(3)).to_vector<int32_t>(), roll(m, 3).to_vector<int32_t>());
  oracle::check(
      "roll traced", {ramp({8, 4}), {{3}, {}, int32}}, {P("x"), P()},
      [](const std::vector<Array>& a) { return roll(a[0], a[1], {1}); },
      [](const std::vector<Array>& a) { return roll(a[0], 3, 1); });
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  EXPECT_HAS(error_of<ShardingTypeError>([&] {
               roll(device_put(zeros({4, 4}), P("x")), scalar<int32_t>(1), {0});
             }),
             "`a` cannot be sharded on the axis being rolled over.");
}

TEST(FullArray, FillValueIsAnArray) {
  Array v = scalar<int32_t>(7);
  Array f = full({2, 3}, v);
  EXPECT_EQ(f.dtype(), int32);
  EXPECT_EQ(f.to_vector<int32_t>(), std::vector<int32_t>(6, 7));
  EXPECT_EQ(full({2}, v, float32).dtype(), float32);
  EXPECT_EQ(vals(full({2, 2}, array(std::vector<float>{1, 2}))), (std::vector<double>{1, 2, 1, 2}));
  auto g = jit([](const Array& s) { return full({4}, s); });
  EXPECT_EQ(vals(g(scalar<float>(2.5f))), std::vector<double>(4, 2.5));
  oracle::check(
      "full_like traced", {ramp({8, 4}), {{1.5}, {}}}, {P("x", "y"), P()},
      [](const std::vector<Array>& a) { return full_like(a[0], a[1]); },
      [](const std::vector<Array>& a) { return full_like(a[0], 1.5); },
      [](const Array& r) { EXPECT_EQ(typeof(r).sharding.spec().size() >= 1, true); });
  oracle::check(
      "full out sharding", {{{1.5}, {}}}, {P()},
      [](const std::vector<Array>& a) {
        return full({8, 4}, a[0], {}, P("x"));
      },
      [](const std::vector<Array>& a) {
        return full({8, 4}, 1.5);
      },
      [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8@x,4]"); });
  EXPECT_HAS(error_of<ValueError>([&] { full({2}, ones({2, 2})); }), "cannot broadcast");
}

TEST(PermutationOutSharding, LaysOutTheShuffle) {
  oracle::check(
      "permutation out_sharding", {ramp({8, 4})}, {P("x")},
      [](const std::vector<Array>& a) {
        return random::permutation(random::key(3), a[0], 0, false, P("x"));
      },
      [](const std::vector<Array>& a) { return random::permutation(random::key(3), a[0]); },
      [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8@x,4]"); });
  oracle::check(
      "permutation independent out_sharding", {ramp({8, 4})}, {P("x", "y")},
      [](const std::vector<Array>& a) {
        return random::permutation(random::key(3), a[0], 1, true, P("x"));
      },
      [](const std::vector<Array>& a) {
        return random::permutation(random::key(3), a[0], 1, true);
      });
}

}  // namespace

// NumPy's %, mod and floor_divide: the sign of the divisor, floors toward -inf.
TEST(Remainder, MatchesNumPy) {
  Array a = array<int32_t>({-7, 7, -7, 7}), b = array<int32_t>({3, 3, -3, -3});
  EXPECT_EQ((a % b).to_vector<int32_t>(), (std::vector<int32_t>{2, 1, -1, -2}));
  EXPECT_EQ(mod(a, b).to_vector<int32_t>(), (std::vector<int32_t>{2, 1, -1, -2}));
  EXPECT_EQ(floor_divide(a, b).to_vector<int32_t>(), (std::vector<int32_t>{-3, 2, 2, -3}));
  Array f = array<float>({-7.5f, 7.5f, -7.5f, 7.5f}), g = array<float>({2.f, 2.f, -2.f, -2.f});
  EXPECT_EQ((f % g).to_vector<float>(), (std::vector<float>{0.5f, 1.5f, -1.5f, -0.5f}));
  EXPECT_EQ(floor_divide(f, g).to_vector<float>(), (std::vector<float>{-4.f, 3.f, 3.f, -4.f}));
  EXPECT_EQ((array<float>({5.f}) % 3).to_vector<float>(), (std::vector<float>{2.f}));
}
