// jit and mesh edge cases: visualize while tracing, in/out_shardings counts, recursion
// through jit, reshard onto a renamed mesh, Auto axes in out_shardings, mesh updates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tsr/tsr.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/core/array_impl.h"

using namespace tsr;

TEST(JitMesh, VisualizeTracedArray) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  Array a = device_put(iota({8, 4}), NamedSharding(m, P("X", "Y")));
  std::string inside, inside_ctx, plain;
  auto f = jit([&](const Array& x) {
    inside = visualize(x);
    return x * 2.0;
  });
  Array r = f(a);
  EXPECT_EQ(test::values<float>(r)[31], 62.f);
  EXPECT_HAS(inside, "f32[8@X,4@Y] on AbstractMesh('X': 4, 'Y': 2");
  EXPECT_HAS(inside, "a cell gives the mesh coordinates (X, Y)");
  EXPECT_HAS(inside, "│  (0,0)  │  (0,1)  │");
  EXPECT_HAS(inside, "│  (3,0)  │  (3,1)  │");
  EXPECT_HAS(inside, "shard shape (2, 2), 16 B per device, 8 devices");
  {
    // Under the array's mesh the devices are known.
    MeshScope scope(m);
    auto g = jit([&](const Array& x) {
      inside_ctx = visualize(x);
      return x;
    });
    g(a);
  }
  EXPECT_HAS(inside_ctx, "│  CPU 6  │  CPU 7  │");
  // Unsharded values with no mesh in the type print just the type.
  auto h = jit([&](const Array& x) {
    plain = visualize(x);
    return x;
  });
  h(array({1.f, 2.f}));
  EXPECT_HAS(plain, "f32[2]");
  EXPECT_HAS(plain, "holds the whole value");
}

TEST(JitMesh, InOutShardingsCountMustMatch) {
  Mesh m = make_mesh({2}, {"X"});
  MeshScope scope(m);
  Array a = iota({4, 2});
  auto more_in = jit([](const Array& x) { return x; }, {.in_shardings = {P("X"), P()}});
  std::string e = error_of<ValueError>([&] { more_in(a); });
  EXPECT_HAS(e,
             "jit in_shardings is the wrong length: got a tuple or list of length 2 for an "
             "args tuple of length 1");
  auto fewer_in =
      jit([](const Array& x, const Array& y) { return x + y; }, {.in_shardings = {P("X")}});
  e = error_of<ValueError>([&] { fewer_in(a, a); });
  EXPECT_HAS(e, "length 1 for an args tuple of length 2");
  auto more_out = jit([](const Array& x) { return x; }, {.out_shardings = {P("X"), P()}});
  e = error_of<ValueError>([&] { more_out(a); });
  EXPECT_HAS(e, "Got 2 out_shardings for 1 result");
  auto fewer_out =
      jit([](const Array& x) { return std::make_pair(x, x); }, {.out_shardings = {P("X")}});
  e = error_of<ValueError>([&] { fewer_out(a); });
  EXPECT_HAS(e, "Got 1 out_shardings for 2 results");
  // Matching counts (monostate keeps a leaf's sharding) still work.
  auto ok = jit(
      [](const Array& x, const Array& y) { return std::make_pair(x, y); },
      {.in_shardings = {P("X"), std::monostate{}}, .out_shardings = {std::monostate{}, P("X")}});
  auto [r0, r1] = ok(a, a);
  EXPECT_EQ(typeof(r0).str(), "f32[4@X,2]");
  EXPECT_EQ(typeof(r1).str(), "f32[4@X,2]");
}

TEST(JitMesh, RecursionThroughJitIsBounded) {
  std::function<Array(const Array&)> self;
  auto f = jit([&self](const Array& x) { return self(x) + 1.0; }, {.name = "runaway"});
  self = [&f](const Array& x) { return f(x); };
  std::string e = error_of<ValueError>([&] { f(iota({4})); });
  EXPECT_HAS(e, "jit of `runaway`");
  EXPECT_HAS(e, "would nest 65 jit traces (limit 64)");
  EXPECT_HAS(e, "Stop the recursion");
  // Recursion with a static base case traces once per depth and runs.
  std::function<Array(const Array&, int)> down;
  auto g = jit([&down](const Array& x, int n) { return n == 0 ? x : down(x, n - 1) + 1.0; });
  down = [&g](const Array& x, int n) { return g(x, n); };
  EXPECT_EQ(test::values<float>(g(iota({4}), 20))[3], 23.f);
  // The guard unwound cleanly: jit still works on this thread.
  EXPECT_EQ(test::values<float>(jit([](const Array& x) { return x * 2.0; })(iota({4})))[3], 6.f);
}

TEST(JitMesh, ReshardOntoRenamedContextMesh) {
  const std::vector<AxisType> ex{AxisType::Explicit, AxisType::Explicit};
  Mesh xy = make_mesh({2, 1}, {"x", "y"});
  Mesh ab(xy.devices(), {2, 1}, {"a", "b"}, ex);
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
  Array a = array(v, {4, 2}, NamedSharding(xy, P("x", "y")));
  {
    MeshScope scope(ab);
    Array r = reshard(a, P("a", "b"));  // eager
    EXPECT_EQ(typeof(r).str(), "f32[4@a,2@b]");
    EXPECT_EQ(r.sharding(), NamedSharding(ab, P("a", "b")));
    EXPECT_EQ(test::values<float>(r), v);
    Array s = r * 2.0;  // ops now run on the context mesh
    EXPECT_EQ(test::values<float>(s)[7], 14.f);
    // Under jit: the reshard and the ops after it lower on the renamed mesh.
    auto f = jit([](const Array& x) { return reshard(x, P(nullptr, "a")) + 1.0; });
    Array j = f(a);
    EXPECT_EQ(typeof(j).str(), "f32[4,2@a]");
    EXPECT_EQ(j.sharding(), NamedSharding(ab, P(nullptr, "a")));
    EXPECT_EQ(test::values<float>(j)[5], 6.f);
    // Other ops on the old mesh still name the mismatch, and the advised reshard works.
    std::string e = error_of<ValueError>([&] { (void)(a * 2.0); });
    EXPECT_HAS(e, "should match the aval mesh");
    EXPECT_HAS(e, "reshard the array onto the context mesh");
    EXPECT_EQ(test::values<float>((reshard(a, P("a")) * 2.0))[7], 14.f);
  }
  // A NamedSharding on another mesh, eager and under jit, with no context mesh.
  Array b = reshard(a, NamedSharding(ab, P(nullptr, "a")));
  EXPECT_EQ(test::values<float>(b), v);
  auto g = jit([&](const Array& x) { return reshard(x, NamedSharding(ab, P("a"))) * 3.0; });
  Array gb = g(a);
  EXPECT_EQ(gb.sharding(), NamedSharding(ab, P("a", nullptr)));
  EXPECT_EQ(test::values<float>(gb)[3], 9.f);
  // From an unsharded single-device value onto a mesh, under jit.
  auto h = jit([&](const Array& x) { return reshard(x, NamedSharding(ab, P("a"))) * 2.0; });
  EXPECT_EQ(test::values<float>(h(array(v, {4, 2})))[7], 14.f);
}

TEST(JitMesh, OutShardingsMayNameAutoAxes) {
  Mesh m = make_mesh({2, 4}, {"x", "y"}, {AxisType::Auto, AxisType::Explicit});
  MeshScope scope(m);
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(i);
  Array a = array(v, {4, 8}, NamedSharding(m, P()));
  auto f = jit([](const Array& x) { return x * 2.0; }, {.out_shardings = {P("x", "y")}});
  Array r = f(a);
  EXPECT_EQ(typeof(r).str(), "f32[4,8@y]");                // the type keeps the Explicit part
  EXPECT_EQ(r.sharding(), NamedSharding(m, P("x", "y")));  // the layout the whole spec
  EXPECT_EQ(test::values<float>(r)[31], 62.f);
  for (const Shard& sh : r.addressable_shards())
    if (sh.device.id == 4) {
      EXPECT_EQ(sh.index[0].start, 2);  // device 4 holds rows 2:4
    }
  // A NamedSharding works the same; an indivisible shape is E22.
  auto g = jit([](const Array& x) { return x + 1.0; },
               {.out_shardings = {NamedSharding(m, P(Axes{"y", "x"}))}});
  Array s = g(array(v, {8, 4}, NamedSharding(m, P())));
  EXPECT_EQ(s.sharding(), NamedSharding(m, P(Axes{"y", "x"})));  // as given (JAX)
  EXPECT_EQ(s.impl()->sharding(), NamedSharding(m, P(Axes{"y", "x"}, nullptr)));
  EXPECT_EQ(test::values<float>(s)[31], 32.f);
  std::string e = error_of<IndivisibleError>([&] { f(array(v, {1, 32}, NamedSharding(m, P()))); });
  // A single-Array result's key path is `result` (a tuple's elements: result[0], ...).
  EXPECT_HAS(e, "One of pjit outputs with pytree key path result was given the sharding");
  EXPECT_HAS(e, "should evenly divide the shape");
  // All-Auto meshes (Auto mode) take out_shardings too.
  Mesh au = make_mesh({8}, {"d"}, {AxisType::Auto});
  MeshScope inner(au);
  auto h = jit([](const Array& x) { return x - 1.0; }, {.out_shardings = {P("d")}});
  Array t = h(array(v, {32}, NamedSharding(au, P())));
  EXPECT_EQ(typeof(t).str(), "f32[32]");
  EXPECT_EQ(t.sharding(), NamedSharding(au, P("d")));
  EXPECT_EQ(test::values<float>(t)[31], 30.f);
}

TEST(JitMesh, ReshardLongerSpecIsE24) {
  Mesh m = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(m);
  Array a = iota({2, 2, 2});
  const char* want = "Length of sharding.spec (4) must be equal to aval's ndim (3)";
  EXPECT_HAS(error_of<ValueError>([&] { reshard(a, P("x", nullptr, "y", nullptr)); }), want);
  auto f = jit([](const Array& x) { return reshard(x, P("x", nullptr, "y", nullptr)); });
  EXPECT_HAS(error_of<ValueError>([&] { f(a); }), want);
}

TEST(JitMesh, MaxMinUnreducedPlacement) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(m);
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i) - 9.5f;  // negatives too
  Array a = array(v, {8, 2}, NamedSharding(m, P("x")));
  for (UnreducedKind k : {UnreducedKind::Max, UnreducedKind::Min}) {
    P target("x", Unreduced{{"y"}, k});
    Array put = device_put(a, target);
    EXPECT_EQ(put.sharding().spec(), target);  // as given; the type normalises
    EXPECT_EQ(typeof(put).sharding.spec(), P("x", nullptr, Unreduced{{"y"}, k}));
    Array back = reshard(put, P());
    EXPECT_EQ(test::values<float>(back), v);
    // Every device's block max/min-reduces to the value (here: holds it).
    for (const Shard& s : put.addressable_shards()) {
      auto got = s.data->to_vector<float>();
      for (int64_t i = s.index[0].start; i < s.index[0].stop; ++i)
        for (int j = 0; j < 2; ++j) EXPECT_EQ(got[(i - s.index[0].start) * 2 + j], v[i * 2 + j]);
    }
    // reshard to it, eager and under jit, and on from host data.
    EXPECT_EQ(test::values<float>(reshard(reshard(a, target), P())), v);
    auto f = jit([&](const Array& x) { return reshard(reshard(x, target), P()); });
    EXPECT_EQ(test::values<float>(f(a)), v);
    EXPECT_EQ(test::values<float>(reshard(array(v, {8, 2}, target), P())), v);
    // Reducing with the kind's own op keeps the value: max(x, x) over copies.
    Array r = k == UnreducedKind::Max ? maximum(put, put) : minimum(put, put);
    EXPECT_EQ(test::values<float>(reshard(r, P())), v);
  }
}

TEST(JitMesh, ErrorClassesAndOrder) {
  // with_sharding_constraint with a spec and no mesh is RuntimeError (spec §13.3).
  std::string e = error_of<RuntimeError>([] { with_sharding_constraint(iota({4}), P()); });
  EXPECT_HAS(e, "with_sharding_constraint requires a non-empty mesh in context");
  // An empty axis name is reported before the count mismatch.
  std::vector<Device> d{devices()[0], devices()[1]};
  e = error_of<ValueError>([&] { Mesh(d, {2}, {"x", ""}); });
  EXPECT_HAS(e, "Mesh axis names cannot be empty");
  e = error_of<ValueError>([&] { AbstractMesh({2}, {"", "y"}); });
  EXPECT_HAS(e, "Mesh axis names cannot be empty");
}

TEST(JitMesh, MeshUpdate) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  AbstractMesh am = m.abstract_mesh();
  AbstractMesh renamed = am.update({.axis_names = std::vector<std::string>{"a", "b"}});
  EXPECT_EQ(renamed.str(), "AbstractMesh('a': 2, 'b': 4, axis_types=(Explicit, Explicit))");
  EXPECT_EQ(am.update({.axis_sizes = std::vector<int>{4, 2}}).axis_sizes(),
            (std::vector<int>{4, 2}));
  EXPECT_EQ(am.update({.axis_types = std::vector<AxisType>{AxisType::Auto, AxisType::Explicit}})
                .auto_axes(),
            (std::vector<std::string>{"x"}));
  EXPECT_EQ(am.update_axis_types({{"y", AxisType::Auto}}).auto_axes(),
            (std::vector<std::string>{"y"}));
  EXPECT_THROW(am.update({.devices = devices()}), ValueError);
  EXPECT_THROW(am.update({.axis_names = std::vector<std::string>{"a"}}), ValueError);

  Mesh mr = m.update({.axis_names = std::vector<std::string>{"a", "b"}});
  EXPECT_EQ(mr.devices(), m.devices());
  EXPECT_EQ(mr.abstract_mesh(), renamed);
  Mesh flat =
      m.update({.axis_sizes = std::vector<int>{8}, .axis_names = std::vector<std::string>{"d"}});
  EXPECT_EQ(flat.str(), "Mesh('d': 8, axis_types=(Auto,))");
  std::vector<Device> two{devices()[6], devices()[7]};
  Mesh moved = m.update({.axis_sizes = std::vector<int>{2, 1}, .devices = two});
  EXPECT_EQ(moved.devices(), two);
  EXPECT_EQ(moved.axis_names(), m.axis_names());
  EXPECT_THROW(m.update({.devices = two}), ValueError);  // 2 devices for (2, 4)
}

TEST(JitMesh, UseAbstractMesh) {
  Mesh m = make_mesh({2, 4}, {"x", "y"});
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Array a = array(v, {8, 2}, NamedSharding(m, P("x")));
  MeshScope scope(m);
  AbstractMesh ab = m.abstract_mesh().update({.axis_names = std::vector<std::string>{"a", "b"}});
  {
    use_abstract_mesh inner(ab);
    EXPECT_EQ(get_abstract_mesh(), ab);
    EXPECT_EQ(get_mesh(), m);      // the concrete context is unchanged
    Array r = reshard(a, P("b"));  // eager: onto the renamed devices
    EXPECT_EQ(typeof(r).str(), "f32[8@b,2]");
    EXPECT_EQ(test::values<float>((r * 2.0))[15], 30.f);
    {
      MeshScope again(m);  // set_mesh inside replaces both contexts
      EXPECT_EQ(get_abstract_mesh(), m.abstract_mesh());
    }
    EXPECT_EQ(get_abstract_mesh(), ab);
    std::string e = error_of<ValueError>([&] {
      AbstractMeshScope bad(AbstractMesh({2, 2}, {"p", "q"}));
    });
    EXPECT_HAS(e,
               "use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
               "AbstractMesh('p': 2, 'q': 2");
    EXPECT_HAS(e, "with size=4 and prev mesh: AbstractMesh('a': 2, 'b': 4");
  }
  EXPECT_EQ(get_abstract_mesh(), m.abstract_mesh());
  // Inside jit: rename, compute, come back; and make an axis Auto for a region.
  auto f = jit([&](const Array& x) {
    Array y;
    {
      AbstractMeshScope inner(
          typeof(x).sharding.mesh().update({.axis_names = std::vector<std::string>{"a", "b"}}));
      y = sin(reshard(x, P(nullptr, "a"))) * 0.0 + reshard(x, P(nullptr, "a"));
    }
    Array z;
    {
      AbstractMeshScope auto_x(get_abstract_mesh().update_axis_types({{"x", AxisType::Auto}}));
      z = reshard(x, P()) + 1.0;
      EXPECT_EQ(typeof(z).sharding.mesh().auto_axes(), (std::vector<std::string>{"x"}));
    }
    return std::make_pair(reshard(y, P("x")), reshard(z, P("x")));
  });
  auto [y, z] = f(a);
  EXPECT_EQ(typeof(y).str(), "f32[8@x,2]");
  EXPECT_EQ(test::values<float>(y), v);
  EXPECT_EQ(test::values<float>(z)[15], 16.f);
}

TEST(JitMesh, PartitionSpecConcatenation) {
  EXPECT_EQ(P("x") + P(nullptr, "y"), P("x", nullptr, "y"));
  EXPECT_EQ(P("x", Unreduced{{"z"}}) + P("y", Reduced{{"w"}}),
            P("x", "y", Unreduced{{"z"}}, Reduced{{"w"}}));
  EXPECT_EQ((P("x") + std::vector<PartitionEntry>{nullptr, Axes{"y", "z"}}),
            (P("x", nullptr, Axes{"y", "z"})));
  EXPECT_EQ(std::vector<PartitionEntry>{"a"} + P("b"), P("a", "b"));
  P p("x");
  p += {nullptr, "y"};
  EXPECT_EQ(p, P("x", nullptr, "y"));
  p += P(Unreduced{{"u"}});
  EXPECT_EQ(p.unreduced(), (std::set<std::string>{"u"}));
  std::string e = error_of<TypeError>(
      [] { (void)(P("x", Unreduced{{"u"}}) + std::vector<PartitionEntry>{"y"}); });
  EXPECT_HAS(e, "other ('y',) cannot be of instance `tuple` when self");
  EXPECT_HAS(e, "has unreduced in `__add__` of PartitionSpec");
  e = error_of<TypeError>([] {
    (void)(P(Unreduced{{"u"}, UnreducedKind::Max}) + P(Unreduced{{"v"}}));
  });
  EXPECT_HAS(e, "PartitionSpec can't be added if the unreduced_kind differs in self and other");
  // The sets must stay disjoint from the partitions (as the constructor).
  EXPECT_THROW((void)(P("x") + P(Unreduced{{"x"}})), ValueError);
}

TEST(JitMesh, SingleDeviceSharding) {
  SingleDeviceSharding s(devices()[3]);
  EXPECT_EQ(s.device(), devices()[3]);
  EXPECT_EQ(static_cast<const NamedSharding&>(s), NamedSharding(device_mesh(devices()[3]), P()));
  Array a = device_put(iota({4}), s);
  EXPECT_TRUE(a.sharding().is_equivalent_to(s, 1));
  // Under mpirun the one shard is addressable on its device's process only.
  for (const Shard& sh : a.addressable_shards()) EXPECT_EQ(sh.device, devices()[3]);
  EXPECT_EQ(a.addressable_shards().size(), devices()[3].process_index() == process_index());
  Array b = array({1.f, 2.f}, {2}, SingleDeviceSharding(devices()[5]));
  for (const Shard& sh : b.addressable_shards()) EXPECT_EQ(sh.device, devices()[5]);
  EXPECT_EQ(b.addressable_shards().size(), devices()[5].process_index() == process_index());
  EXPECT_EQ(test::values<float>(reshard(a, SingleDeviceSharding(devices()[1])))[3], 3.f);
}
