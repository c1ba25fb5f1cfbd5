// Values of the cumulative, sorting and NumPy ops against hand-computed results,
// their sharded results, and every error text (spec E14–E17 and bad inputs).
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "unit/oracle_harness.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Array f32(std::vector<float> v, Shape shape = {-1}) { return array(v, shape); }
Array i32(std::vector<int32_t> v, Shape shape = {-1}) { return array(v, shape); }

std::vector<float> fv(const Array& a) { return a.to_vector<float>(); }
std::vector<int32_t> iv(const Array& a) { return a.to_vector<int32_t>(); }

void expect_floats(const std::vector<float>& want, const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(want[i], got[i]) << "at " << i;
    else
      EXPECT_NEAR(want[i], got[i], 1e-5 * std::max(1.f, std::fabs(want[i]))) << "at " << i;
  }
}

// ---- values, single device -------------------------------------------------------

TEST(MoreOps, CumulativeValues) {
  expect_floats({10, 9, 7, 4}, fv(cumsum(f32({1, 2, 3, 4}), 0, {.reverse = true})));
  expect_floats({1, 3, 6, 10}, fv(cumsum(f32({1, 2, 3, 4}))));
  Array b = cumsum(array<bool>({true, false, true}));
  EXPECT_EQ(b.dtype(), int32);
  EXPECT_EQ(iv(b), (std::vector<int32_t>{1, 1, 2}));
  EXPECT_EQ(iv(cumprod(i32({1, 2, 3, 4}))), (std::vector<int32_t>{1, 2, 6, 24}));
  // jnp.cumprod/cumsum promote only bool (reductions.py's _cumulative_reduction).
  EXPECT_EQ(cumprod(array<int8_t>({1, 2})).dtype(), int8);
  EXPECT_EQ(cummax(array<bool>({false, true})).dtype(), int32);
  expect_floats({1, kNaN, kNaN}, fv(cummax(f32({1, kNaN, 3}))));
  EXPECT_EQ(iv(cummin(i32({3, 1, 2, 0}, {2, 2}), 1)), (std::vector<int32_t>{3, 1, 2, 0}));
  EXPECT_EQ(iv(cummin(i32({3, 1, 2, 0}, {2, 2}), 0)), (std::vector<int32_t>{3, 1, 2, 0}));
  EXPECT_EQ(iv(cummax(i32({3, 1, 2, 5}), 0, {.reverse = true})),
            (std::vector<int32_t>{5, 5, 5, 5}));
  // log(cumsum(exp(log k))) = log(1, 3, 6, 10).
  Array l = cumlogsumexp(f32({0.f, std::log(2.f), std::log(3.f), std::log(4.f)}));
  expect_floats({0.f, std::log(3.f), std::log(6.f), std::log(10.f)}, fv(l));
  expect_floats({-kInf, 1.f}, fv(cumlogsumexp(f32({-kInf, 1.f}))));
  // 2-D, axis 1, and flattened.
  Array m = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_floats({1, 3, 6, 4, 9, 15}, fv(cumsum(m, 1)));
  expect_floats({1, 3, 6, 10, 15, 21}, fv(cumsum(m)));
  EXPECT_EQ(cumsum(m).shape(), (Shape{6}));
}

TEST(MoreOps, SortValues) {
  expect_floats({-kInf, 0, 1, 3, kNaN, kNaN}, fv(sort(f32({3, kNaN, -kInf, 1, kNaN, 0}))));
  expect_floats({kNaN, kNaN, 3, 1, 0, -kInf},
                fv(sort(f32({3, kNaN, -kInf, 1, kNaN, 0}), -1, true, true)));
  // Stable multi-operand sort: ties keep their order.
  auto s = sort({i32({2, 1, 2, 1, 0}), i32({10, 11, 12, 13, 14})});
  EXPECT_EQ(iv(s[0]), (std::vector<int32_t>{0, 1, 1, 2, 2}));
  EXPECT_EQ(iv(s[1]), (std::vector<int32_t>{14, 11, 13, 10, 12}));
  // Two keys.
  auto t = sort({i32({1, 0, 1, 0}), i32({5, 7, 3, 7}), i32({0, 1, 2, 3})}, 0, true, 2);
  EXPECT_EQ(iv(t[2]), (std::vector<int32_t>{1, 3, 2, 0}));
  EXPECT_EQ(iv(argsort(i32({3, 1, 3, 2}))), (std::vector<int32_t>{1, 3, 0, 2}));
  EXPECT_EQ(iv(argsort(i32({3, 1, 3, 2}), -1, true, true)), (std::vector<int32_t>{0, 2, 3, 1}));
  EXPECT_EQ(iv(argsort(f32({2, kNaN, 1}))), (std::vector<int32_t>{2, 0, 1}));
  // Along axis 0 of a matrix, and flattened.
  Array m = i32({3, 0, 1, 2, 2, 1}, {3, 2});
  EXPECT_EQ(iv(sort(m, 0)), (std::vector<int32_t>{1, 0, 2, 1, 3, 2}));
  EXPECT_EQ(iv(argsort(m, std::nullopt)), (std::vector<int32_t>{1, 2, 5, 3, 4, 0}));
  // -0.0 and 0.0 are equal keys: a stable sort keeps their order.
  auto z = sort({f32({0.f, -0.f, 0.f}), i32({0, 1, 2})});
  EXPECT_EQ(iv(z[1]), (std::vector<int32_t>{0, 1, 2}));
}

TEST(MoreOps, TopKValues) {
  auto [v, i] = top_k(f32({1, 3, 3, 2}), 3);
  expect_floats({3, 3, 2}, fv(v));
  EXPECT_EQ(iv(i), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(i.dtype(), int32);
  auto [v2, i2] = top_k(f32({1, 5, kNaN, 4, 0, 2}, {2, 3}), 2);
  expect_floats({kNaN, 5, 4, 2}, fv(v2));
  EXPECT_EQ(iv(i2), (std::vector<int32_t>{2, 1, 0, 2}));
  EXPECT_EQ(top_k(f32({1, 2}), 0).first.shape(), (Shape{0}));
}

TEST(MoreOps, SearchSortedValues) {
  Array s = f32({1, 2, 2, 3});
  EXPECT_EQ(iv(searchsorted(s, f32({2, 0, 5, 2.5, kNaN}))), (std::vector<int32_t>{1, 0, 4, 3, 4}));
  EXPECT_EQ(iv(searchsorted(s, f32({2, 0, 5, 2.5}), "right")), (std::vector<int32_t>{3, 0, 4, 3}));
  EXPECT_EQ(searchsorted(s, 2).item<int32_t>(), 1);
  EXPECT_EQ(iv(searchsorted(i32({0, 10}), i32({-1, 10, 11}, {3}), "left")),
            (std::vector<int32_t>{0, 1, 2}));
}

TEST(MoreOps, RollTileRepeatFlip) {
  Array m = arange(12).reshape({3, 4});
  EXPECT_EQ(iv(roll(m, {-1, 2}, {0, 1})),
            (std::vector<int32_t>{6, 7, 4, 5, 10, 11, 8, 9, 2, 3, 0, 1}));
  EXPECT_EQ(iv(roll(arange(6).reshape({2, 3}), 1)), (std::vector<int32_t>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(iv(roll(arange(4), -5, 0)), (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_EQ(iv(roll(m, {1, 1}, {1, 1})), iv(roll(m, 2, 1)));
  EXPECT_EQ(iv(tile(i32({1, 2}, {1, 2}), {2, 2})), (std::vector<int32_t>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(tile(i32({1, 2}), {2, 1, 2}).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(iv(tile(i32({1, 2}), {2})), (std::vector<int32_t>{1, 2, 1, 2}));
  Array r = i32({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(iv(repeat(r, {1, 2}, 0)), (std::vector<int32_t>{1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(iv(repeat(i32({1, 2, 3}, {1, 3}), {1, 0, 3}, 1)), (std::vector<int32_t>{1, 3, 3, 3}));
  EXPECT_EQ(iv(repeat(i32({1, 2, 3}), 2, 0, 4)), (std::vector<int32_t>{1, 1, 2, 2}));
  EXPECT_EQ(iv(repeat(i32({1, 2, 3}), 2, 0, 8)), (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(iv(repeat(r, 2)), (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(iv(flip(r)), (std::vector<int32_t>{4, 3, 2, 1}));
  EXPECT_EQ(iv(flip(r, 1)), (std::vector<int32_t>{2, 1, 4, 3}));
}

TEST(MoreOps, TrianglesAndDiagonals) {
  Array m = arange(12).reshape({3, 4});
  EXPECT_EQ(iv(triu(m, 1)), (std::vector<int32_t>{0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11}));
  EXPECT_EQ(iv(tril(m, -1)), (std::vector<int32_t>{0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}));
  EXPECT_EQ(iv(tril(m)), (std::vector<int32_t>{0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0}));
  EXPECT_EQ(iv(diag(i32({1, 2}), 1)), (std::vector<int32_t>{0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(iv(diag(i32({1, 2}), -1)), (std::vector<int32_t>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(iv(diag(m, 1)), (std::vector<int32_t>{1, 6, 11}));
  EXPECT_EQ(iv(diag(m, -1)), (std::vector<int32_t>{4, 9}));
  EXPECT_EQ(iv(diag(m)), (std::vector<int32_t>{0, 5, 10}));
  EXPECT_EQ(diag(m, 5).shape(), (Shape{0}));
  // The diagonal of each (axis1, axis2) plane, as the last dim.
  Array c = arange(18).reshape({2, 3, 3});
  EXPECT_EQ(iv(diagonal(c, 0, 1, 2)), (std::vector<int32_t>{0, 4, 8, 9, 13, 17}));
  EXPECT_EQ(iv(diagonal(c, 0, 0, 2)), (std::vector<int32_t>{0, 10, 3, 13, 6, 16}));
  EXPECT_EQ(trace(m).item<int32_t>(), 15);
  EXPECT_EQ(trace(m, 1).item<int32_t>(), 18);
  // NaN and inf off the diagonal do not leak into it.
  expect_floats({1, 4}, fv(diagonal(f32({1, kNaN, kInf, 4}, {2, 2}))));
}

TEST(MoreOps, ShapeHelpers) {
  Array x = zeros({2, 3, 4});
  EXPECT_EQ(moveaxis(x, 0, -1).shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(moveaxis(x, {0, 1}, {-1, -2}).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(swapaxes(x, 0, 2).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(ravel(x).shape(), (Shape{24}));
  EXPECT_EQ(flatten(x).shape(), (Shape{24}));
  auto u = unstack(arange(6).reshape({2, 3}), 1);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(iv(u[2]), (std::vector<int32_t>{2, 5}));
  auto g = meshgrid({i32({1, 2, 3}), i32({4, 5})});
  EXPECT_EQ(g[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(iv(g[0]), (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(iv(g[1]), (std::vector<int32_t>{4, 4, 4, 5, 5, 5}));
  auto h = meshgrid({i32({1, 2, 3}), i32({4, 5})}, "ij");
  EXPECT_EQ(h[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(iv(h[0]), (std::vector<int32_t>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(iv(h[1]), (std::vector<int32_t>{4, 5, 4, 5, 4, 5}));
}

TEST(MoreOps, ProductsAndComparisons) {
  EXPECT_EQ(iv(outer(i32({1, 2}), i32({3, 4, 5}))), (std::vector<int32_t>{3, 4, 5, 6, 8, 10}));
  EXPECT_EQ(iv(kron(i32({1, 2, 3, 4}, {2, 2}), i32({0, 1, 1, 0}, {2, 2}))),
            (std::vector<int32_t>{0, 1, 0, 2, 1, 0, 2, 0, 0, 3, 0, 4, 3, 0, 4, 0}));
  EXPECT_EQ(iv(kron(i32({1, 2}), i32({1, 10}))), (std::vector<int32_t>{1, 10, 2, 20}));
  Array a = f32({1, kNaN, kInf, kInf, 1});
  Array b = f32({1.000001f, kNaN, kInf, -kInf, 1.1f});
  EXPECT_EQ(isclose(a, b).to_vector<bool>(), (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(isclose(a, b, 1e-5, 1e-8, true).to_vector<bool>(),
            (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(isclose(i32({1, 2}), 2).to_vector<bool>(), (std::vector<bool>{false, true}));
  Array ac = allclose(f32({1, 2}), f32({1, 2.00001f}));
  EXPECT_EQ(ac.dtype(), bool_);
  EXPECT_EQ(ac.ndim(), 0);
  EXPECT_TRUE(ac.item<bool>());
  EXPECT_FALSE(allclose(f32({1, kNaN}), f32({1, kNaN})).item<bool>());
  EXPECT_TRUE(allclose(f32({1, kNaN}), f32({1, kNaN}), 1e-5, 1e-8, true).item<bool>());
  expect_floats({0, 0.5f, 1, kNaN}, fv(clip(f32({-2, 0.5f, 3, kNaN}), 0, 1)));
  expect_floats({-2, 0.5f, 1}, fv(clip(f32({-2, 0.5f, 3}), std::nullopt, 1)));
  expect_floats({0, FLT_MAX, -FLT_MAX, 1}, fv(nan_to_num(f32({kNaN, kInf, -kInf, 1}))));
  expect_floats({5, 9, -9, 1}, fv(nan_to_num(f32({kNaN, kInf, -kInf, 1}), 5, 9, -9)));
  Array h = nan_to_num(f32({kInf}).astype(float16));
  EXPECT_EQ(h.astype(float32).item<float>(), 65504.f);
  EXPECT_EQ(iv(nan_to_num(i32({1, 2}))), (std::vector<int32_t>{1, 2}));
}

TEST(MoreOps, HalfAndOtherDtypes) {
  expect_floats({1, 3, 6}, fv(cumsum(f32({1, 2, 3}).astype(bfloat16)).astype(float32)));
  expect_floats({-1, 2, kNaN}, fv(sort(f32({kNaN, 2, -1}).astype(float16)).astype(float32)));
  EXPECT_EQ(iv(sort(array<uint8_t>({3, 200, 1})).astype(int32)), (std::vector<int32_t>{1, 3, 200}));
  EXPECT_EQ(cumsum(array<uint8_t>({200, 100})).dtype(), uint8);  // as jnp.cumsum
  EXPECT_EQ(iv(argsort(array<bool>({true, false, true}))), (std::vector<int32_t>{1, 0, 2}));
}

// ---- sharded ---------------------------------------------------------------------

class MoreOpsSharded : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope{mesh};
};

TEST_F(MoreOpsSharded, ResultsKeepTheOperandSharding) {
  Array x = device_put(arange(32.f).reshape({8, 4}), P("x"));
  Array c = cumsum(x, 1);
  EXPECT_EQ(typeof(c).str(), "f32[8@x,4]");
  EXPECT_EQ(fv(c)[7], 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 - 0 - 1 - 2 - 3);
  EXPECT_EQ(typeof(sort(x)).str(), "f32[8@x,4]");
  EXPECT_EQ(typeof(argsort(x, 1, true, true)).str(), "i32[8@x,4]");
  auto [v, i] = top_k(x, 2);
  EXPECT_EQ(typeof(v).str(), "f32[8@x,2]");
  EXPECT_EQ(typeof(i).str(), "i32[8@x,2]");
  std::vector<float> vals = fv(v);
  expect_floats({3, 2, 7, 6}, std::vector<float>(vals.begin(), vals.begin() + 4));
  EXPECT_EQ(typeof(roll(x, 1, 1)).str(), "f32[8@x,4]");
  EXPECT_EQ(typeof(tile(x, {1, 2})).str(), "f32[8@x,8]");
  EXPECT_EQ(typeof(repeat(x, 2, 1)).str(), "f32[8@x,8]");
  EXPECT_EQ(typeof(repeat(x, 2, 0, std::nullopt, P("x"))).str(), "f32[16@x,4]");
  EXPECT_EQ(typeof(triu(x)).str(), "f32[8@x,4]");
  EXPECT_EQ(iv(repeat(x, 2, 0, std::nullopt, P("x")).astype(int32))[8], 4);
}

TEST_F(MoreOpsSharded, SearchSortedGathersAShardedTable) {
  Array s = device_put(arange(8.f), P("x"));
  Array q = device_put(array<float>({-1, 0.5f, 7, 9, 3, 3, 3, 3}), P("y"));
  Array r = searchsorted(s, q);
  EXPECT_EQ(typeof(r).str(), "i32[8@y]");
  EXPECT_EQ(iv(r), (std::vector<int32_t>{0, 1, 7, 8, 3, 3, 3, 3}));
  auto j = jit([](const std::vector<Array>& a) {
    return std::vector<Array>{searchsorted(a[0], a[1], "right")};
  });
  EXPECT_EQ(iv(j(std::vector<Array>{s, q})[0]), (std::vector<int32_t>{0, 1, 8, 8, 4, 4, 4, 4}));
}

// ---- errors: spec E14–E17 and the other sharding texts -----------------------------

TEST_F(MoreOpsSharded, E14CumulativeOnShardedAxis) {
  Array x = device_put(zeros({8, 4}), P("x"));
  for (auto f : {cumsum, cumprod, cummax, cummin, cumlogsumexp}) {
    auto m = error_of<ShardingTypeError>([&] { f(x, 0, {}); });
    EXPECT_HAS(m,
               "Input should be unsharded over the axis being reduced. Got input "
               "type=f32[8@x,4] and axis=0");
  }
  auto m = error_of<ShardingTypeError>([&] { cumsum(x); });
  EXPECT_HAS(m,
             "[cumsum] The input should be fully replicated when axis is not specified to "
             "cumsum. Got input type=f32[8@x,4]");
  auto p = error_of<ShardingTypeError>([&] { cummax(x); });
  EXPECT_HAS(p, "not specified to cummax. Got input type=f32[8@x,4]");
  EXPECT_EQ(typeof(cumsum(x, 1)).str(), "f32[8@x,4]");
}

TEST_F(MoreOpsSharded, E15SortOnShardedDimension) {
  Array x = device_put(zeros({8, 4}), P(nullptr, "y"));
  auto m = error_of<ShardingTypeError>([&] { sort(x); });
  EXPECT_HAS(m,
             "[sort] Arguments to sort must be unsharded over the sorting dimension. Got arg "
             "sharding=NamedSharding(mesh=");
  EXPECT_HAS(m, "spec=P(None, 'y')");
  EXPECT_HAS(m, ") and sorting dimension=1");
  auto a = error_of<ShardingTypeError>([&] { argsort(x); });
  EXPECT_HAS(a, "Arguments to sort must be unsharded over the sorting dimension.");
  Array y = device_put(zeros({8, 4}), P("x"));
  Array w = device_put(zeros({8, 4}), P());
  auto e = error_of<ShardingTypeError>([&] { sort({y, w}, 1); });
  EXPECT_HAS(e, "[sort] Arguments to sort must have equal shardings, got: [NamedSharding(");
  EXPECT_HAS(e, "spec=P('x', None)), NamedSharding(");
  EXPECT_HAS(e, "spec=P(None, None))]");
}

TEST_F(MoreOpsSharded, E16TopKOnShardedAxis) {
  Array x = device_put(zeros({8, 4}), P(nullptr, "y"));
  auto m = error_of<ShardingTypeError>([&] { top_k(x, 2); });
  EXPECT_HAS(m,
             "[top_k] The input should be unsharded over the axis along which to compute the "
             "top_k values. Got input type=f32[8,4@y] and axis=1");
}

TEST_F(MoreOpsSharded, E17RollTileUnstack) {
  Array x = device_put(zeros({8, 4}), P("x"));
  auto r = error_of<ShardingTypeError>([&] { roll(x, 1, 0); });
  EXPECT_HAS(r,
             "[roll] `a` cannot be sharded on the axis being rolled over. Got arr "
             "type=f32[8@x,4] and axis=0");
  auto r2 = error_of<ShardingTypeError>([&] { roll(x, {1, 1}, {1, -2}); });
  EXPECT_HAS(r2, "Got arr type=f32[8@x,4] and axis=0");
  auto r3 = error_of<ShardingTypeError>([&] { roll(x, 3); });  // the flattened array
  EXPECT_HAS(r3, "Got arr type=f32[32@x] and axis=0");
  auto t = error_of<ShardingTypeError>([&] { tile(x, {2, 1}); });
  EXPECT_HAS(t,
             "[tile] Operand cannot be sharded on dimension 0 when the tiling is non-trivial. "
             "Got input type: f32[8@x,4] with reps: (2, 1)");
  auto u = error_of<ShardingTypeError>([&] { unstack(x, 0); });
  EXPECT_HAS(u,
             "[unstack] unstack operand cannot be sharded on the unstacking axis 0. Got operand "
             "type=f32[8@x,4]");
  EXPECT_EQ(unstack(x, 1).size(), 4u);
  EXPECT_EQ(typeof(unstack(x, 1)[0]).str(), "f32[8@x]");
}

TEST_F(MoreOpsSharded, RepeatNeedsOutSharding) {
  Array x = device_put(zeros({8, 4}), P("x"));
  const char* want = "[repeat] Please pass sharding to `tsr::repeat` via `out_sharding` parameter.";
  EXPECT_HAS(error_of<ValueError>([&] { repeat(x, 2, 0); }), want);
  EXPECT_HAS(error_of<ValueError>([&] { repeat(x, 2); }), want);
}

// Item 18: no axis repeats the flattened array along axis 0 (jnp.repeat ravels
// first, so a replicated operand is accepted in an Explicit mesh).
TEST_F(MoreOpsSharded, RepeatWithoutAxisFlattens) {
  Array r = repeat(device_put(arange(4), P()), 2);
  EXPECT_EQ(typeof(r).str(), "i32[8]");
  EXPECT_EQ(iv(r), (std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  Array m = device_put(arange(4).reshape({2, 2}), P());
  EXPECT_EQ(iv(repeat(m, {1, 0, 2, 1})), (std::vector<int32_t>{0, 2, 2, 3}));
  EXPECT_EQ(iv(repeat(m, 2, std::nullopt, 5)), (std::vector<int32_t>{0, 0, 1, 1, 2}));
  auto f = jit([](const Array& a) { return repeat(a, 2); });
  EXPECT_EQ(iv(f(m)), (std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 3}));
}

TEST(MoreOpsRepeat, WithoutAxisMatchesTheOracleOnManyMeshes) {
  for (auto spec : {P(), P("x"), P("x", "y")})
    oracle::check("repeat no axis", {oracle::ramp({8, 4})}, {spec},
                  [](const std::vector<Array>& a) {
                    return repeat(a[0], 3, std::nullopt, std::nullopt, P());
                  });
  oracle::check("repeat no axis replicated", {oracle::ramp({8, 4})}, {P()},
                [](const std::vector<Array>& a) { return repeat(a[0], {2}); });
}

// ---- bad inputs --------------------------------------------------------------------

TEST(MoreOpsErrors, BadArguments) {
  Array m = zeros({2, 4});
  EXPECT_HAS(error_of<ValueError>([&] { top_k(m, 5); }),
             "[top_k] k must be in [0, size of the last axis]. Got k=5 for f32[2,4]; expected 0 "
             "<= k <= 4.");
  EXPECT_HAS(error_of<ValueError>([&] { top_k(m, -1); }), "Got k=-1");
  EXPECT_HAS(error_of<TypeError>([&] { top_k(zeros({}), 1); }),
             "[top_k] top_k operand must have >= 1 dimension.");
  EXPECT_HAS(error_of<ValueError>([&] { cumsum(m, 2); }),
             "[cumsum] axis 2 is out of bounds for an array of rank 2.");
  EXPECT_HAS(error_of<ValueError>([&] { sort(m, -3); }), "[sort] axis -3 is out of bounds");
  EXPECT_HAS(error_of<ValueError>([&] {
               sort({m, m}, 0, true, 3);
             }),
             "[sort] num_keys must be in [1, number of operands]. Got num_keys=3 for 2 operands");
  EXPECT_HAS(error_of<TypeError>([&] {
               sort({m, zeros({4, 2})}, 0);
             }),
             "[sort] sort operands must all have the same shape.");
  EXPECT_HAS(error_of<ValueError>([&] { searchsorted(m, 1.0); }),
             "[searchsorted] sorted array must be 1-D. Got f32[2,4]");
  EXPECT_HAS(error_of<ValueError>([&] { searchsorted(zeros({4}), 1.0, "middle"); }),
             "[searchsorted] side must be 'left' or 'right'. Got 'middle'");
  EXPECT_HAS(error_of<ValueError>([&] {
               roll(m, {1, 2, 3}, {0, 1});
             }),
             "[roll] shift and axis must broadcast against each other.");
  EXPECT_HAS(error_of<ValueError>([&] { tile(m, {-1}); }), "[tile] reps must be non-negative.");
  EXPECT_HAS(error_of<ValueError>([&] {
               repeat(m, {1, 2}, 1);
             }),
             "[repeat] repeats must have one entry per element along the axis. Got 2 repeats for "
             "axis 1 of size 4");
  EXPECT_HAS(error_of<ValueError>([&] { repeat(m, -1, 0); }),
             "[repeat] repeats must be non-negative.");
  EXPECT_HAS(error_of<ValueError>([&] { tril(zeros({3})); }),
             "[tril] Argument to tril must be at least 2D. Got f32[3]");
  EXPECT_HAS(error_of<ValueError>([&] {
               diag(zeros({2, 2, 2}));
             }),
             "[diag] diag input must be 1d or 2d. Got f32[2,2,2]");
  EXPECT_HAS(error_of<ValueError>([&] { diagonal(m, 0, 1, -1); }),
             "[diagonal] axis1 and axis2 cannot be the same.");
  EXPECT_HAS(error_of<ValueError>([&] { unstack(zeros({})); }),
             "[unstack] unstack requires an array of rank >= 1.");
  EXPECT_HAS(error_of<ValueError>([&] {
               moveaxis(m, {0, 1}, {0});
             }),
             "[moveaxis] source and destination must have the same number of axes.");
  EXPECT_HAS(error_of<ValueError>([&] {
               moveaxis(m, {0, 0}, {0, 1});
             }),
             "[moveaxis] repeated axis");
  EXPECT_HAS(error_of<ValueError>([&] { meshgrid({zeros({2})}, "xx"); }),
             "[meshgrid] Valid values for indexing are 'xy' and 'ij'. Got 'xx'");
  EXPECT_HAS(error_of<ValueError>([&] { meshgrid({m}); }),
             "[meshgrid] Arguments to meshgrid must be 1D. Got f32[2,4]");
  EXPECT_HAS(error_of<TypeError>([&] { cumsum(m, 0, {.dtype = bool_}); }),
             "[cumsum] cumsum does not accept bool.");
}

}  // namespace

namespace {

// Auto axes are not in types: no rule refuses, and kernels get whole axes.
TEST(MoreOpsAuto, AutoAxesRunUnconstrained) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"}, {AxisType::Auto, AxisType::Auto});
  MeshScope scope(mesh);
  Array x = device_put(arange(32.f).reshape({8, 4}), P("x", "y"));
  Array c = cumsum(x, 0);
  EXPECT_EQ(fv(c)[28], 112.f);  // 0 + 4 + ... + 28
  std::vector<float> s = fv(sort(x, 0, true, true));
  EXPECT_EQ(s[0], 28.f);
  auto [v, i] = top_k(x, 1);
  EXPECT_EQ(iv(i)[7], 3);
  EXPECT_EQ(iv(roll(arange(8), 1, 0))[0], 7);
}

}  // namespace
