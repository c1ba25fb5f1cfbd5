// Scatter-based reductions (items 19 and the segment_* APIs): bincount's out_sharding
// (replicated or fully unreduced), segment_sum/prod/max/min, .at[].divide/power.
#include <gtest/gtest.h>

#include <limits>

#include "support/error_of.h"
#include "unit/oracle_harness.h"

#include "tsr/tsr.h"

using namespace tsr;
using oracle::ramp;

namespace {

// P(unreduced={every axis of the context mesh}).
PartitionSpec all_unreduced() {
  const auto& n = get_abstract_mesh().axis_names();
  return PartitionSpec({}, std::set<std::string>(n.begin(), n.end()));
}

std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }

TEST(Bincount, ShardedOutShardingIsRefusedWithJaxsWords) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(array(std::vector<int32_t>{0, 1, 1, 3, 2, 0, 1, 1}), P("x"));
  const char* jax =
      "out_sharding passed to `tsr::bincount` can only be fully replicated or fully unreduced "
      "along all mesh axes";
  for (auto bad : {P("x"), P(Unreduced{{"x"}}), P(Reduced{{"x"}})}) {
    EXPECT_HAS(error_of<ShardingTypeError>([&] { bincount(x, 8, {}, bad); }), jax);
    auto j = jit([&](const Array& a) { return bincount(a, 8, {}, bad); });
    EXPECT_HAS(error_of<ShardingTypeError>([&] { j(x); }), jax);
  }
}

TEST(Bincount, FullyUnreducedResultReshardsToTheOracle) {
  // 13 values (not a multiple of the mesh size), some negative (bin 0), some >= 5 (dropped).
  // A replicated x of 13 is padded to the mesh size inside bincount.
  for (auto [spec, n] : {std::pair{P(), 13}, {P(), 16}, {P("x"), 16}, {P(Axes{"x", "y"}), 16}}) {
    oracle::Input x = ramp({n}, 0, int32), w = ramp({n}, 1);
    oracle::check("bincount unreduced", {x}, {spec}, [](const std::vector<Array>& a) {
      Array u = bincount(a[0], 5, {}, all_unreduced());
      EXPECT_EQ(typeof(u).sharding.spec().unreduced().size(),
                get_abstract_mesh().axis_names().size());
      return reshard(u, P());
    });
    oracle::check("bincount weighted unreduced", {x, w}, {spec, spec},
                  [](const std::vector<Array>& a) {
                    return reshard(bincount(a[0], 5, a[1], all_unreduced()), P());
                  });
    oracle::check("bincount replicated", {x}, {spec},
                  [](const std::vector<Array>& a) { return bincount(a[0], 5, {}, P()); });
  }
  Mesh one = make_mesh({1}, {"x"});
  MeshScope scope(one);
  Array xs = array(std::vector<int32_t>{-2, 0, 1, 1, 4, 7});
  EXPECT_EQ(vals(reshard(bincount(xs, 5, {}, P(Unreduced{{"x"}})), P())),
            (std::vector<double>{2, 2, 0, 0, 1}));
}

TEST(Segment, ValuesAndIdentitiesOfEmptySegments) {
  Array d = array(std::vector<float>{1, 2, 3, 4, 5});
  Array ids = array(std::vector<int32_t>{0, 0, 2, -1, 5});
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(vals(segment_sum(d, ids, 4)), (std::vector<double>{3, 0, 3, 0}));
  EXPECT_EQ(vals(segment_prod(d, ids, 4)), (std::vector<double>{2, 1, 3, 1}));
  EXPECT_EQ(vals(segment_max(d, ids, 4)), (std::vector<double>{2, -inf, 3, -inf}));
  EXPECT_EQ(vals(segment_min(d, ids, 4)), (std::vector<double>{1, inf, 3, inf}));
  EXPECT_EQ(vals(segment_sum(d, ids, 4, {.mode = IndexMode::Clip})),
            (std::vector<double>{7, 0, 3, 5}));
  Array di = array(std::vector<int64_t>{1, 2});
  Array i2 = array(std::vector<int32_t>{0, 0});
  EXPECT_EQ(segment_min(di, i2, 2).to_vector<int64_t>()[1], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(segment_max(di, i2, 2).to_vector<int64_t>()[1], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(segment_max(array(std::vector<int32_t>{3}), array(std::vector<int32_t>{1}), 2)
                .to_vector<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  // Rows of a 2-D data array.
  Array m = arange(6).reshape({3, 2});
  EXPECT_EQ(segment_sum(m, array(std::vector<int32_t>{1, 0, 1}), 2).to_vector<int32_t>(),
            (std::vector<int32_t>{2, 3, 4, 6}));
}

TEST(Segment, ShardedOverMeshesMatchesTheOracle) {
  oracle::Input data = ramp({16, 4}), ids = ramp({16}, 2, int32);
  using Seg = Array (*)(const Array&, const Array&, int64_t, const SegmentOptions&);
  for (Seg f : {&segment_sum, &segment_prod, &segment_max, &segment_min})
    for (auto spec : {P(), P("x"), P(Axes{"x", "y"})})
      oracle::check(
          "segment_* out_sharding", {data, ids}, {spec, spec},
          [f](const std::vector<Array>& a) { return f(a[0], a[1], 8, {.out_sharding = P("x")}); });
  for (auto spec : {P(), P("x"), P(Axes{"x", "y"})})
    oracle::check("segment_sum unreduced", {data, ids}, {spec, spec},
                  [](const std::vector<Array>& a) {
                    Array u = segment_sum(a[0], a[1], 5, {.out_sharding = all_unreduced()});
                    return reshard(u, P());
                  });
}

TEST(Segment, Refusals) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array d = device_put(ones({8}), P("x"));
  Array ids = device_put(zeros({8}, int32), P("x"));
  // As JAX: the scatter rule cannot pick a layout for sharded ids and updates.
  EXPECT_HAS(error_of<ShardingTypeError>([&] { segment_sum(d, ids, 4); }),
             "out sharding could not be resolved unambiguously");
  EXPECT_HAS(error_of<NotImplementedError>(
                 [&] { segment_max(d, ids, 4, {.out_sharding = all_unreduced()}); }),
             "unreduced for max is not yet supported.");
  EXPECT_HAS(error_of<ShardingTypeError>(
                 [&] { segment_sum(d, ids, 4, {.out_sharding = P(Unreduced{{"x"}})}); }),
             "unreduced over every mesh axis");
  EXPECT_HAS(error_of<ValueError>([&] { segment_sum(d, ids, -1); }),
             "num_segments must be non-negative.");
}

TEST(AtUpdate, DivideAndPowerAsJax) {
  Array x = array(std::vector<float>{8, 8, 8, 8});
  Array i = array(std::vector<int32_t>{1, 3, 3});
  EXPECT_EQ(vals(x.at(i).divide(2.0)), (std::vector<double>{8, 4, 8, 2}));
  EXPECT_EQ(vals(x.at(i).power(2.0)), (std::vector<double>{8, 64, 8, 8 * 8 * 8 * 8}));
  Array xi = array(std::vector<int32_t>{3, 3});
  Array q = xi.at(0).divide(2);
  EXPECT_EQ(q.dtype(), float32);  // true division, as jnp
  EXPECT_EQ(vals(q), (std::vector<double>{1.5, 3}));
  oracle::check("at.divide", {ramp({8, 4})}, {P("x")},
                [](const std::vector<Array>& a) { return a[0].at(all, 1).divide(4.0); });
}

}  // namespace
