// reshard between every pair of a set of shardings over the same 8 devices, on
// meshes (8), (2,4), (4,2), (2,2,2) and a permuted mesh; values checked element
// by element on every shard.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include <tsr/tsr.h>

#include "support/error_of.h"
#include "tsr/core/array_impl.h"
#include "tsr/sharding/reshard_plan.h"

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
      ASSERT_EQ(y.sharding().normalized(3), dst.normalized(3)) << what;
      EXPECT_EQ(typeof(y).sharding.spec(), type_sharding(dst, kShape).spec()) << what;
      EXPECT_EQ(y.to_vector<float>(), want) << what;
      check_shards(y, want, what);
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, static_cast<int>(all.size() * all.size()));
  // The exchange ran both with pieces sent / received in place and through packed
  // temporaries.
  int in_place = 0, packed = 0;
  for (const auto& src : all)
    for (const auto& dst : all) {
      auto plan = detail::get_plan(kShape, float32, src.normalized(3), dst.normalized(3));
      if (plan->kind != detail::PlanKind::Exchange || !plan->comm) continue;
      for (const auto& dp : plan->dev) {
        if (dp.send_bytes > 0) ++(dp.send_in_place.empty() ? packed : in_place);
        if (dp.recv_bytes > 0) ++(dp.recv_in_place.empty() ? packed : in_place);
      }
    }
  EXPECT_GT(in_place, 0);
  EXPECT_GT(packed, 0);
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
    auto buf = detail::Runtime::get().alloc(detail::slot(m.devices()[f]), 24 * sizeof(int));
    detail::HostWrite w(*buf, 24 * sizeof(int));  // device memory on an accelerator
    for (int e = 0; e < 24; ++e) {
      int v = data[a * 24 + e];
      static_cast<int*>(w.data())[e] = b == 0 ? v - 6 * 3 : 6;  // sums to v over b = 0..3
    }
    w.commit();
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
  EXPECT_THROW(reshard(iota({6, 4}), P("x")), ValueError);  // the type's E23
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

namespace {

// Small integers, exact in every dtype tried, with both signs.
std::vector<float> ints_of(const Shape& shape, int salt) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7 + salt) % 23) - 11.f;
  return v;
}

bool at_unreduced_origin(const NamedSharding& s, int flat) {
  const Mesh& m = *s.concrete_mesh();
  for (const auto& a : s.spec().unreduced())
    if (m.coords(flat)[m.abstract_mesh().axis_index(a)] != 0) return false;
  return true;
}

// `v` laid out as `s`, with real partial values on unreduced axes: the device at
// coordinate 0 holds v - (n - 1) * d, every other one d (n devices per group).
Array with_partials(const std::vector<float>& v, const Shape& shape, DType dt,
                    const NamedSharding& s) {
  Array x = device_put(astype(array(v, shape), dt), s);
  if (s.spec().unreduced().empty()) return x;
  const Mesh& m = *s.concrete_mesh();
  int n = 1;
  for (const auto& a : s.spec().unreduced()) n *= m.axis_size(a);
  std::vector<float> first(v.size()), d(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    d[i] = static_cast<float>(i % 5) - 2.f;
    first[i] = v[i] - static_cast<float>(n - 1) * d[i];
  }
  NamedSharding tiled(m, PartitionSpec(s.spec().entries()));
  Array a = device_put(astype(array(first, shape), dt), tiled);
  Array b = device_put(astype(array(d, shape), dt), tiled);
  auto impl = std::make_shared<detail::ArrayImpl>(*x.impl());
  for (int f = 0; f < m.size(); ++f)
    impl->buffers[f] = (at_unreduced_origin(s, f) ? a : b).impl()->buffers[f];
  return Array(impl);
}

// Every shard of y holds its slice of the host value `want`.
void expect_slices(const Array& y, const std::vector<float>& want, const std::string& what) {
  const Shape& shape = y.shape();
  for (const Shard& s : y.addressable_shards()) {
    auto got = astype(*s.data, float32).to_vector<float>();
    int64_t n = 0;
    std::vector<int64_t> i(shape.size());
    std::function<void(size_t, int64_t)> walk = [&](size_t d, int64_t flat) {
      if (d == shape.size()) {
        ASSERT_EQ(got[static_cast<size_t>(n++)], want[static_cast<size_t>(flat)])
            << what << " on device " << s.device.id << " at flat " << flat;
        return;
      }
      for (int64_t k = s.index[d].start; k < s.index[d].stop; ++k) walk(d + 1, flat * shape[d] + k);
    };
    walk(0, 0);
  }
}

struct CollectiveCase {
  P src, dst;
  detail::PlanKind kind;
  const char* text;  // what .local names
};

}  // namespace

// The pairs that lower to a dedicated collective (all_gather / reduce_scatter, with
// the rank-ordered buffer as the block itself or through a pack / unpack copy) keep
// every value of the unsharded array, for real partial sums, in several dtypes and on
// meshes (1), (2), (8), (2,4); eager, jit and device_put all agree.
TEST(Reshard, DedicatedCollectivesMatchTheOracle) {
  using K = detail::PlanKind;
  const Shape shape{8, 8, 8};
  auto v = ints_of(shape, 3);
  struct MeshCase {
    Mesh mesh;
    std::vector<CollectiveCase> cases;
  };
  std::vector<CollectiveCase> one_axis = {
      {P("x"), P(), K::AllGather, "all_gather over"},
      {P(nullptr, "x"), P(), K::AllGather, "all_gather over"},
      {P(Unreduced{{"x"}}), P("x"), K::ReduceScatter, "reduce_scatter sum over"},
      {P(Unreduced{{"x"}}), P(nullptr, "x"), K::ReduceScatter, "reduce_scatter sum over"},
      {P(nullptr, nullptr, "x"), P(), K::AllGather, "all_gather over"},
      // The all_reduce alone, into the destination block.
      {P(Unreduced{{"x"}}), P(), K::Exchange, "all_reduce sum"},
  };
  std::vector<CollectiveCase> two_axes = {
      {P(Axes{"a", "b"}), P("a"), K::AllGather, "all_gather over 4 devices"},
      {P("a", "b"), P(), K::AllGather, "all_gather over 8 devices"},
      {P("a", "b"), P("a"), K::AllGather, "all_gather over 4 devices"},
      {P("b", Unreduced{{"a"}}), P(), K::AllGather, "all_reduce sum, all_gather over 4"},
      {P(nullptr, Unreduced{{"a", "b"}}), P("a"), K::ReduceScatter,
       "reduce_scatter sum over 2 devices, all_reduce sum"},
      {P(Unreduced{{"a", "b"}}), P(Axes{"a", "b"}), K::ReduceScatter,
       "reduce_scatter sum over 8 devices"},
      {P(Unreduced{{"a", "b"}}), P("b", "a"), K::ReduceScatter, "reduce_scatter sum over 8"},
      {P("a", Unreduced{{"b"}}), P(Axes{"a", "b"}), K::ReduceScatter, "reduce_scatter sum over 4"},
      {P(Unreduced{{"b"}}), P("b"), K::ReduceScatter, "reduce_scatter sum over 4"},
      {P("b", Unreduced{{"a"}}), P("b"), K::Exchange, "all_reduce sum"},
      // Not a prefix: the exchange, after the all_reduce.
      {P("a", Unreduced{{"b"}}), P(Axes{"b", "a"}), K::Exchange, "all_reduce sum, all_to_allv"},
  };
  std::vector<MeshCase> meshes = {
      {make_mesh({1}, {"x"}), {}},
      {make_mesh({2}, {"x"}), one_axis},
      {make_mesh({8}, {"x"}), one_axis},
      {make_mesh({2, 4}, {"a", "b"}), two_axes},
  };
  // One device: nothing crosses devices, the plan stays a local copy.
  for (auto c : one_axis)
    meshes[0].cases.push_back(
        {c.src, c.dst, K::Exchange, c.src.unreduced().empty() ? "local copy" : "all_reduce sum"});
  int direct = 0, packed = 0;
  for (const auto& mc : meshes) {
    for (const auto& c : mc.cases) {
      NamedSharding src(mc.mesh, c.src), dst(mc.mesh, c.dst);
      auto plan = detail::get_plan(shape, float32, src.normalized(3), dst.normalized(3));
      std::string what = src.str() + " -> " + dst.str();
      EXPECT_EQ(plan->kind, c.kind) << what;
      for (const auto& dp : plan->dev)
        if (c.kind != K::Exchange) ++(dp.direct ? direct : packed);
      for (DType dt : {float32, bfloat16, float64, int32, int8}) {
        std::string w = what + " " + dtype_name(dt);
        Array x = with_partials(v, shape, dt, src);
        expect_slices(reshard(x, dst), v, w + " (eager)");
        expect_slices(device_put(x, dst), v, w + " (device_put)");
        auto f = jit([&](const Array& a) { return reshard(a, dst); });
        expect_slices(f(x), v, w + " (jit)");
        EXPECT_HAS(f.lower(x).local, c.text) << w;
      }
    }
  }
  // Both the in-place and the packed forms ran.
  EXPECT_GT(direct, 0);
  EXPECT_GT(packed, 0);
}

// The comm report names the collective a reshard performs.
TEST(Reshard, CommReportNamesGatherAndScatter) {
  Mesh m = make_mesh({8}, {"x"});
  Array x = device_put(ones({64}), NamedSharding(m, P("x")));
  auto kind = [](auto f, const Array& a) {
    Lowered l = jit(f).lower(a);
    const CommReport& r = l.comm_report();
    return r.events.size() == 1 ? r.events[0].kind : r.str();
  };
  EXPECT_EQ(kind([&](const Array& a) { return reshard(a, NamedSharding(m, P())); }, x),
            "all_gather");
  Array u = with_partials(ints_of({64}, 1), {64}, float32, NamedSharding(m, P(Unreduced{{"x"}})));
  EXPECT_EQ(kind([&](const Array& a) { return reshard(a, NamedSharding(m, P("x"))); }, u),
            "reduce_scatter");
  EXPECT_EQ(kind([&](const Array& a) { return reshard(a, NamedSharding(m, P())); }, u),
            "all_reduce");
  Mesh m2 = make_mesh({2, 4}, {"a", "b"});
  Array u2 = with_partials(ints_of({8, 8}, 2), {8, 8}, float32,
                           NamedSharding(m2, P(Unreduced{{"a", "b"}})));
  EXPECT_EQ(kind([&](const Array& a) { return reshard(a, NamedSharding(m2, P("a"))); }, u2),
            "reduce_scatter + all_reduce");
}

// A reduction over dims sharded as many ways as they are long is the identity on each
// block: no kernel runs, the all_reduce reads the operand. Values match one device.
TEST(Reshard, SumOverFullyShardedDimsSharesTheOperand) {
  struct Case {
    Mesh mesh;
    Shape shape;
    P spec;
    std::vector<int> axes;
  };
  std::vector<Case> cases = {
      {make_mesh({8}, {"x"}), {8, 6}, P("x"), {0}},
      {make_mesh({2}, {"x"}), {2, 3, 4}, P(nullptr, nullptr, "x"), {2}},  // local 4: kernel
      {make_mesh({2}, {"x"}), {3, 2}, P(nullptr, "x"), {1}},
      {make_mesh({2, 4}, {"a", "b"}), {2, 4, 3}, P("a", "b"), {0, 1}},
      {make_mesh({2, 4}, {"a", "b"}), {2, 4, 3}, P("a", "b"), {0}},
      {make_mesh({1}, {"x"}), {1, 5}, P("x"), {0}},
  };
  for (const auto& c : cases) {
    auto v = ints_of(c.shape, 5);
    for (DType dt : {float32, bfloat16, int32, int8}) {
      Array one = astype(array(v, c.shape), dt);
      Array x = device_put(one, NamedSharding(c.mesh, c.spec));
      std::string what = c.spec.repr() + " " + dtype_name(dt);
      for (auto op : {+[](const Array&a, const std::vector<int>&ax) { return sum(a, ax); },
                      +[](const Array&a, const std::vector<int>&ax) { return max(a, ax); }}) {
        auto want = astype(op(one, c.axes), float32).to_vector<float>();
        expect_slices(op(x, c.axes), want, what + " (eager)");
        auto f = jit([&](const Array& a) { return op(a, c.axes); });
        expect_slices(f(x), want, what + " (jit)");
      }
    }
  }
  Mesh m = make_mesh({8}, {"x"});
  Array x = device_put(ones({8, 6}), NamedSharding(m, P("x")));
  std::string local = jit([](const Array& a) { return sum(a, 0); }).lower(x).local;
  EXPECT_HAS(local, "[size-1 local dims: same buffer]");
  Array y = device_put(ones({16, 6}), NamedSharding(m, P("x")));
  std::string local2 = jit([](const Array& a) { return sum(a, 0); }).lower(y).local;
  EXPECT_EQ(local2.find("same buffer"), std::string::npos) << local2;
}

// ZeRO-style data parallelism: weights stored sharded are gathered for the step as a
// value reduced over the batch axis (all_gather), so their gradient comes back partial
// over it and lands sharded with a reduce_scatter: no all_to_allv, no all_reduce +
// slice. Matches one device.
TEST(Reshard, ShardedWeightsGatherAndReduceScatterTheirGradient) {
  Mesh m = make_mesh({8}, {"data"});
  std::vector<float> wv = ints_of({16, 4}, 1), xv = ints_of({32, 16}, 2);
  Array w = device_put(array(wv, {16, 4}), NamedSharding(m, P("data", nullptr)));
  Array x = device_put(array(xv, {32, 16}), NamedSharding(m, P("data")));
  auto loss = [&](const Array& w, const Array& x) {
    Array full = reshard(w, NamedSharding(m, P(nullptr, nullptr, Reduced{{"data"}})));
    return sum(square(matmul(x, full)));
  };
  auto step = jit(grad(loss));
  std::string local = step.lower(w, x).local;
  EXPECT_HAS(local, "all_gather over 8 devices");
  EXPECT_HAS(local, "reduce_scatter sum over 8 devices");
  EXPECT_EQ(local.find("all_to_allv"), std::string::npos) << local;
  EXPECT_EQ(local.find("all_reduce"), std::string::npos) << local;
  Array g = step(w, x);
  EXPECT_EQ(g.sharding().spec(), P("data", nullptr));
  auto one = [](const Array& w, const Array& x) { return sum(square(matmul(x, w))); };
  Array g1 = grad(one)(array(wv, {16, 4}), array(xv, {32, 16}));
  expect_slices(g, g1.to_vector<float>(), "gradient");
}

// A reshard that leaves every device's block as it is (P() -> P('x') on one device) moves
// no bytes inside jit: its uses read the source (a program output keeps its own step, as
// DedicatedCollectivesMatchTheOracle checks). On 8 devices the same reshard is a slice.
TEST(Reshard, SameBlockReshardInsideJitIsDropped) {
  for (int n : {1, 8}) {
    Mesh m = make_mesh({n}, {"x"});
    Array x = device_put(iota({8, 4}), NamedSharding(m, P()));
    auto f =
        jit([&](const Array& a) { return reshard(a * 2.0f, NamedSharding(m, P("x"))) + 1.0f; });
    std::string local = f.lower(x).local;
    EXPECT_EQ(local.find(" = reshard ") == std::string::npos, n == 1) << local;
    std::vector<float> got = f(x).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 2.0f * static_cast<float>(i) + 1.0f);
  }
}
