// reshard between every pair of a set of shardings over the same 8 devices, on
// meshes (8), (2,4), (4,2), (2,2,2) and a permuted mesh; values checked element
// by element on every shard.
#include <gtest/gtest.h>

#include <numeric>

#include <tsr/tsr.h>

#include "tsr/core/array_impl.h"

using namespace tsr;

namespace {

const Shape kShape{16, 8, 2};

std::vector<NamedSharding> shardings() {
  Mesh m8 = make_mesh({8}, {"d"});
  Mesh m24 = make_mesh({2, 4}, {"a", "b"});
  Mesh m42 = make_mesh({4, 2}, {"x", "y"});
  Mesh m222 = make_mesh({2, 2, 2}, {"p", "q", "r"});
  std::vector<Device> rev = devices();
  std::reverse(rev.begin(), rev.end());
  Mesh mrev(rev, {2, 4}, {"u", "v"}, {AxisType::Explicit, AxisType::Explicit});
  return {
      NamedSharding(m8, P()),
      NamedSharding(m8, P("d")),
      NamedSharding(m8, P(nullptr, "d")),
      NamedSharding(m8, P(nullptr, nullptr, Unreduced{{"d"}})),
      NamedSharding(m24, P("a", "b")),
      NamedSharding(m24, P("b", "a")),
      NamedSharding(m24, P(Axes{"a", "b"})),
      NamedSharding(m24, P(Axes{"b", "a"}, nullptr)),
      NamedSharding(m24, P(nullptr, Axes{"a", "b"})),
      NamedSharding(m24, P("b", Unreduced{{"a"}})),
      NamedSharding(m42, P("x", "y")),
      NamedSharding(m42, P("y")),
      NamedSharding(m42, P(nullptr, "x", "y")),
      NamedSharding(m222, P(Axes{"p", "q"}, "r")),
      NamedSharding(m222, P("r", Axes{"q", "p"})),
      NamedSharding(m222, P("q", nullptr, Unreduced{{"p", "r"}})),
      NamedSharding(mrev, P("u", "v")),
      NamedSharding(mrev, P(Axes{"v", "u"})),
  };
}

std::vector<float> host_data() {
  std::vector<float> v(static_cast<size_t>(numel(kShape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i * 7 % 251) + 0.25f;
  return v;
}

// Each shard must hold exactly its slice of `want` (or zeros / its part of the sum
// when the sharding is unreduced).
void check_shards(const Array& y, const std::vector<float>& want, const std::string& what) {
  const NamedSharding& s = y.sharding();
  Shape local = s.shard_shape(kShape);
  auto shards = y.addressable_shards();
  const Mesh& mesh = *s.concrete_mesh();
  for (size_t k = 0; k < shards.size(); ++k) {
    auto got = shards[k].data->to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(numel(local)));
    bool zero = false;
    for (const auto& a : s.spec().unreduced())
      if (mesh.coords(static_cast<int>(k))[mesh.abstract_mesh().axis_index(a)] != 0) zero = true;
    const ShardIndex& idx = shards[k].index;
    int64_t n = 0;
    for (int64_t i = idx[0].start; i < idx[0].stop; ++i)
      for (int64_t j = idx[1].start; j < idx[1].stop; ++j)
        for (int64_t l = idx[2].start; l < idx[2].stop; ++l, ++n) {
          float w = zero ? 0.f : want[(i * kShape[1] + j) * kShape[2] + l];
          ASSERT_EQ(got[n], w) << what << " shard " << k << " at (" << i << "," << j << "," << l
                               << ")";
        }
  }
}

}  // namespace

TEST(Reshard, EveryPairKeepsData) {
  auto all = shardings();
  ASSERT_GE(all.size(), 12u);
  auto want = host_data();
  int pairs = 0;
  for (const auto& src : all) {
    Array x = array(want, kShape, src);
    for (const auto& dst : all) {
      Array y = reshard(x, dst);
      std::string what = src.str() + " -> " + dst.str();
      ASSERT_EQ(y.sharding(), dst.normalized(3)) << what;
      EXPECT_EQ(typeof(y).sharding.spec(), type_sharding(dst, kShape).spec()) << what;
      EXPECT_EQ(y.to_vector<float>(), want) << what;
      check_shards(y, want, what);
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, static_cast<int>(all.size() * all.size()));
}

TEST(Reshard, UnreducedPartialsAreSummed) {
  // Real partial values: device k along the unreduced axes holds data - 3k or k.
  Mesh m = make_mesh({2, 4}, {"a", "b"});
  NamedSharding src(m, P("a", Unreduced{{"b"}}));
  Shape shape{8, 6};
  std::vector<int> data(48);
  std::iota(data.begin(), data.end(), -5);
  Array x = array(data, shape, src);
  // Rebuild x's buffers so every device along b holds a non-trivial partial value.
  auto impl = std::make_shared<detail::ArrayImpl>(*x.impl());
  for (int f = 0; f < 8; ++f) {
    int b = f % 4, a = f / 4;
    auto buf = detail::Runtime::get().alloc(f, 24 * sizeof(int));
    for (int e = 0; e < 24; ++e) {
      int v = data[a * 24 + e];
      buf->data<int>()[e] = b == 0 ? v - 6 * 3 : 6;  // sums to v over b = 0..3
    }
    impl->buffers[f] = buf;
  }
  Array partial(impl);
  EXPECT_EQ(partial.to_vector<int>(), data);
  for (const P& dst : {P(), P("b", "a"), P(Axes{"a", "b"}), P(nullptr, "a")}) {
    Array y = reshard(partial, NamedSharding(m, dst));
    EXPECT_EQ(y.to_vector<int>(), data) << dst.repr();
    for (const Shard& s : y.addressable_shards()) {
      auto got = s.data->to_vector<int>();
      int64_t n = 0;
      for (int64_t i = s.index[0].start; i < s.index[0].stop; ++i)
        for (int64_t j = s.index[1].start; j < s.index[1].stop; ++j, ++n)
          ASSERT_EQ(got[n], data[i * 6 + j]) << dst.repr();
    }
  }
  // Keeping the unreduced axis keeps the partials where they are.
  Array kept = reshard(partial, NamedSharding(m, P(nullptr, Unreduced{{"b"}})));
  EXPECT_EQ(kept.to_vector<int>(), data);
  EXPECT_EQ(typeof(kept).str(), "i32[8,6]{U:b}");
  // A value placed as max-unreduced is that value (every device of the axis holds
  // it: copies reduce to themselves), negative entries included.
  NamedSharding mx(m, P(nullptr, Unreduced{{"b"}, UnreducedKind::Max}));
  Array xm = array(data, shape, mx);
  EXPECT_EQ(reshard(xm, NamedSharding(m, P())).to_vector<int>(), data);
}

TEST(Reshard, SameShardingIsFreeAndErrorsAreTyped) {
  Mesh m = make_mesh({4, 2}, {"x", "y"});
  MeshScope scope(m);
  Array x = iota({8, 4}, float32, P("x"));
  Array y = reshard(x, P("x"));
  EXPECT_EQ(x.impl(), y.impl());  // nothing to move
  EXPECT_THROW(reshard(x, P("z")), ValueError);
  EXPECT_THROW(reshard(iota({6, 4}), P("x")), IndivisibleError);
  Mesh a = make_mesh({4, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Explicit});
  EXPECT_THROW(reshard(x, NamedSharding(a, P("x"))), ValueError);
  EXPECT_NO_THROW(device_put(x, NamedSharding(a, P("x"))));
  // Max-kind unreduced can be added by reshard (beyond JAX, which refuses).
  EXPECT_NO_THROW(reshard(x, P(nullptr, Unreduced{{"y"}, UnreducedKind::Max})));
}

TEST(Reshard, DeviceSubsetsAndSingleDevice) {
  // Moving between different device sets also goes device to device.
  Mesh lo = make_mesh({2}, {"x"}, {}, {devices()[0], devices()[1]});
  Mesh hi = make_mesh({4}, {"x"}, {}, {devices()[4], devices()[5], devices()[6], devices()[7]});
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 1.f);
  Array x = array(v, {16}, NamedSharding(lo, P("x")));
  Array y = device_put(x, NamedSharding(hi, P("x")));
  EXPECT_EQ(y.to_vector<float>(), v);
  EXPECT_EQ(y.addressable_shards()[0].device.id, 4);
  Array z = device_put(y, Device{Platform::CPU, 3});
  EXPECT_EQ(z.to_vector<float>(), v);
  Array w = device_put(z, NamedSharding(make_mesh({8}, {"d"}), P("d")));
  EXPECT_EQ(w.to_vector<float>(), v);
}
