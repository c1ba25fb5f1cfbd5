// PartitionSpec, NamedSharding validation (spec §6–§8, errors E18–E24) and geometry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/error_of.h"

#include <tsr/tsr.h>

using namespace tsr;
using ::testing::HasSubstr;

namespace {

Mesh mesh42() { return make_mesh({4, 2}, {"x", "y"}); }

}  // namespace

TEST(PartitionSpec, ReprAndCanonicalForm) {
  EXPECT_EQ(P().repr(), "P()");
  EXPECT_EQ(P("x").repr(), "P('x',)");
  EXPECT_EQ(P("x", nullptr).repr(), "P('x', None)");
  EXPECT_EQ(P(Axes{"x", "y"}, nullptr).repr(), "P(('x', 'y'), None)");
  EXPECT_EQ(P(Axes{"x"}), P("x"));             // 1-tuples collapse
  EXPECT_EQ(P(Axes{}, "x"), P(nullptr, "x"));  // empty tuples are None
  EXPECT_EQ(P(""), P(nullptr));
  EXPECT_NE(P("x"), P("x", nullptr));  // structural, as JAX
  EXPECT_EQ(P(UNCONSTRAINED).repr(), "P(P.UNCONSTRAINED,)");
  EXPECT_EQ(P("a", "b", nullptr, Unreduced{{"c"}}, Reduced{{"d"}}).repr(),
            "P('a', 'b', None, unreduced={'c'}, reduced={'d'}, unreduced_kind=sum)");
  EXPECT_EQ(P(Unreduced{{"x"}}).repr(), "P(unreduced={'x'}, unreduced_kind=sum)");
  EXPECT_EQ(P("x").hash(), P(Axes{"x"}).hash());
}

TEST(PartitionSpec, SetValidation) {
  EXPECT_THAT(error_of<ValueError>([] { P(Unreduced{{"x"}}, Reduced{{"x"}}); }),
              HasSubstr("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got "
                        "unreduced: {'x'} and reduced: {'x'}"));
  EXPECT_THAT(error_of<ValueError>([] { P("x", Unreduced{{"x"}}); }),
              HasSubstr("partitions cannot overlap with unreduced axes passed to PartitionSpec"));
  EXPECT_THAT(error_of<ValueError>([] {
                P("x", Unreduced{{"y"}})[0];
              }),
              HasSubstr("Using pspec[...] is dangerous"));
}

TEST(NamedSharding, E18DuplicateAxes) {
  Mesh m = mesh42();
  auto msg = error_of<DuplicateSpecError>([&] { NamedSharding(m, P("x", "x")); });
  EXPECT_THAT(msg, HasSubstr("A single NamedSharding spec specification can map every mesh axis "
                             "to at most one positional dimension, but P('x', 'x') has "
                             "duplicate entries for `x`"));
  msg = error_of<DuplicateSpecError>([&] { NamedSharding(m, P(Axes{"x", "y"}, Axes{"y", "x"})); });
  EXPECT_THAT(msg, HasSubstr("has duplicate entries for `x`, `y`"));
}

TEST(NamedSharding, E19UnknownAxis) {
  auto msg = error_of<ValueError>([] { NamedSharding(mesh42(), P("z")); });
  EXPECT_THAT(msg, HasSubstr("Resource axis: z of P('z',) is not found in mesh: ('x', 'y')."));
}

TEST(NamedSharding, E20UnconstrainedNeedsAuto) {
  auto msg = error_of<ValueError>([] { NamedSharding(mesh42(), P(UNCONSTRAINED)); });
  EXPECT_THAT(msg, HasSubstr("P(P.UNCONSTRAINED,) cannot contain `P.UNCONSTRAINED` when no mesh "
                             "axis_types are `Auto`. Got mesh axis_types: (Explicit, Explicit)"));
  Mesh a = make_mesh({4, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Explicit});
  EXPECT_NO_THROW(NamedSharding(a, P(UNCONSTRAINED)));
}

TEST(NamedSharding, UnreducedAxesMustExistAndBeExplicit) {
  EXPECT_THAT(error_of<ValueError>([] { NamedSharding(mesh42(), P(Unreduced{{"q"}})); }),
              HasSubstr("Unreduced axes q is not found in mesh.axis_names=('x', 'y')"));
  Mesh a = make_mesh({4, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Explicit});
  EXPECT_THAT(error_of<ValueError>([&] { NamedSharding(a, P(Unreduced{{"x"}})); }),
              HasSubstr("Unreduced axes can only refer to mesh axes that is of type `Explicit`"));
  EXPECT_THAT(error_of<ValueError>([&] { NamedSharding(a, P(Reduced{{"x"}})); }),
              HasSubstr("Reduced axes can only refer to mesh axes that is of type `Explicit`"));
}

TEST(NamedSharding, E21RankTooSmall) {
  NamedSharding s(mesh42(), P("x", "y"));
  EXPECT_THAT(error_of<ValueError>([&] { s.shard_shape({8}); }),
              HasSubstr("is only valid for values of rank at least 2, but was applied to a value "
                        "of rank 1."));
  NamedSharding s1(mesh42(), P("x"));
  EXPECT_THAT(error_of<ValueError>([&] { s1.shard_shape({}); }),
              HasSubstr("rank 0. For scalars the PartitionSpec should be P()"));
  EXPECT_EQ(NamedSharding(mesh42(), P()).shard_shape({}), Shape{});  // P() fits scalars
}

TEST(NamedSharding, E22Indivisible) {
  NamedSharding s(mesh42(), P("x", nullptr));
  auto msg = error_of<IndivisibleError>([&] { s.shard_shape({6, 4}); });
  EXPECT_THAT(msg, HasSubstr("implies that array axis 0 is partitioned 4 times, but the dimension "
                             "size is 6 (full shape: (6, 4), per-dimension tiling factors: (4, 1) "
                             "should evenly divide the shape)"));
}

TEST(NamedSharding, E23E24TypeSharding) {
  NamedSharding s(mesh42(), P("x"));
  EXPECT_THAT(error_of<ValueError>([&] {
                type_sharding(s, {6, 2});
              }),
              HasSubstr("Sharding spec ('x',) implies that array axis 0 is partitioned 4 times, "
                        "but does not evenly divide the dimension size 6. Got shape: (6, 2)"));
  NamedSharding s3(mesh42(), P("x", nullptr, nullptr));
  EXPECT_THAT(error_of<ValueError>([&] {
                type_sharding(s3, {8, 2});
              }),
              HasSubstr("Length of sharding.spec (3) must be equal to aval's ndim (2). Got "
                        "sharding.spec P('x', None, None), aval.ndim 2"));
}

TEST(NamedSharding, TypeShardingDropsAutoAxes) {
  AbstractMesh m({2, 2, 2, 1}, {"a", "b", "c", "d"},
                 {AxisType::Explicit, AxisType::Explicit, AxisType::Auto, AxisType::Manual});
  auto t = type_sharding(NamedSharding(m, P(Axes{"a", "b", "c"}, "d")), {8, 2});
  EXPECT_EQ(t.spec(), P(Axes{"a", "b"}, nullptr));
  t = type_sharding(NamedSharding(m, P(Axes{"a", "c"}, "b", "d")), {8, 2, 2});
  EXPECT_EQ(t.spec(), P("a", "b", nullptr));
}

TEST(NamedSharding, EqualityHashAndEquivalence) {
  Mesh m = mesh42();
  NamedSharding a(m, P("x")), b(m, P("x", nullptr)), c(m, P("x"));
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.hash(), c.hash());
  EXPECT_NE(a, b);  // JAX quirk kept for ==
  EXPECT_TRUE(a.is_equivalent_to(b, 2));
  EXPECT_FALSE(a.is_equivalent_to(NamedSharding(m, P("y")), 2));
  // Size-1 axes do not change the layout.
  Mesh m1 = make_mesh({8, 1}, {"x", "y"});
  EXPECT_TRUE(NamedSharding(m1, P("x", "y")).is_equivalent_to(NamedSharding(m1, P("x")), 2));
  EXPECT_TRUE(NamedSharding(m, P()).is_equivalent_to(NamedSharding(m, P(nullptr)), 1));
}

TEST(NamedSharding, DevicesIndicesMapSpecExample) {
  // spec §8.3: mesh (4,2) ('x','y'), devices 0..7, shape (8,2).
  Mesh m = mesh42();
  Shape shape{8, 2};
  NamedSharding px(m, P("x"));
  auto map = px.devices_indices_map(shape);
  ASSERT_EQ(map.size(), 8u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      int f = i * 2 + j;
      EXPECT_EQ(map[f].first.id, f);
      EXPECT_EQ(index_str(map[f].second),
                "(" + std::to_string(2 * i) + ":" + std::to_string(2 * i + 2) + ", :)");
      EXPECT_EQ(px.replica_id(f), j);
    }
  NamedSharding py(m, P("y"));
  for (int f = 0; f < 8; ++f) {
    int j = f % 2;
    EXPECT_EQ(index_str(py.index_of(f, shape)),
              "(" + std::to_string(4 * j) + ":" + std::to_string(4 * j + 4) + ", :)");
    EXPECT_EQ(py.replica_id(f), f / 2);
  }
  NamedSharding pxy(m, P(Axes{"x", "y"}));
  for (int f = 0; f < 8; ++f)
    EXPECT_EQ(index_str(pxy.index_of(f, shape)),
              "(" + std::to_string(f) + ":" + std::to_string(f + 1) + ", :)");
  NamedSharding pyx(m, P(Axes{"y", "x"}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)  // y major: chunk = j*4 + i
      EXPECT_EQ(pyx.index_of(i * 2 + j, shape)[0].start, j * 4 + i);
  NamedSharding rep(m, P());
  for (int f = 0; f < 8; ++f) {
    EXPECT_EQ(index_str(rep.index_of(f, shape)), "(:, :)");
    EXPECT_EQ(rep.replica_id(f), f);
  }
}

TEST(NamedSharding, GeometryMultiAxis) {
  Mesh m = make_mesh({2, 2, 2}, {"a", "b", "c"});
  NamedSharding s(m, P(Axes{"c", "a"}, "b"));
  EXPECT_EQ(s.shard_shape({8, 6}), (Shape{2, 3}));
  EXPECT_EQ(s.tiling(2), (std::vector<int64_t>{4, 2}));
  // Device (a=1,b=0,c=1) = flat 5: dim0 chunk = c*2 + a = 3, dim1 chunk = b = 0.
  ShardIndex idx = s.index_of(5, {8, 6});
  EXPECT_EQ(index_str(idx), "(6:8, 0:3)");
  EXPECT_EQ(s.replica_id(5), 0);
  EXPECT_TRUE(s.replicated_axes().empty());
  NamedSharding u(m, P("a", Unreduced{{"b"}}));
  EXPECT_EQ(u.shard_shape({8, 8}), (Shape{4, 8}));  // unreduced axes do not shrink dims
  EXPECT_FALSE(u.is_fully_replicated());
  EXPECT_EQ(u.replicated_axes(), std::vector<std::string>{"c"});
  EXPECT_THROW(u.devices_indices_map({8, 8}), NotImplementedError);
  EXPECT_TRUE(NamedSharding(make_mesh({8, 1}, {"x", "y"}), P(nullptr, "y")).is_fully_replicated());
}

TEST(Mesh, ConstructionAndErrors) {
  Mesh m = mesh42();
  EXPECT_EQ(m.str(), "Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))");
  EXPECT_EQ(m.repr(),
            "Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))");
  EXPECT_EQ(m.abstract_mesh().str(),
            "AbstractMesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))");
  EXPECT_EQ(m.coords(5), (std::vector<int>{2, 1}));
  EXPECT_EQ(m, make_mesh({4, 2}, {"x", "y"}));
  EXPECT_NE(m, make_mesh({4, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Auto}));
  EXPECT_NE(m.hash(), make_mesh({4, 2}, {"x", "y"}, {AxisType::Auto, AxisType::Auto}).hash());
  // Mesh(...) defaults to Auto, make_mesh to Explicit.
  Mesh raw(devices(), {8}, {"d"});
  EXPECT_EQ(raw.axis_types()[0], AxisType::Auto);
  EXPECT_THAT(error_of<ValueError>([] {
                make_mesh({4, 4}, {"x", "y"});
              }),
              HasSubstr("Number of devices 8 must be >= the product of mesh_shape (4, 4)"));
  EXPECT_THAT(error_of<ValueError>([] {
                make_mesh({2, 2}, {"x", "x"});
              }),
              HasSubstr("appears twice"));
  EXPECT_THAT(error_of<ValueError>([] {
                make_mesh({2, 2}, {"x"});
              }),
              HasSubstr("as many axis sizes as axis names"));
  EXPECT_THAT(error_of<ValueError>([] {
                make_mesh({2}, {"x"}, {AxisType::Auto, AxisType::Auto});
              }),
              HasSubstr("Number of axis names should match the number of axis_types"));
  EXPECT_THAT(error_of<ValueError>([] {
                Mesh({Device{}, Device{}}, {2}, {"x"});
              }),
              HasSubstr("a device appears twice"));
  EXPECT_THAT(error_of<ValueError>([] { create_device_mesh({3}); }),
              HasSubstr("Number of devices 8 must equal the product of mesh_shape (3,)"));
  // make_mesh uses the first prod(sizes) devices.
  EXPECT_EQ(make_mesh({2}, {"x"}).devices()[1].id, 1);
}

TEST(Mesh, ContextScope) {
  EXPECT_TRUE(get_mesh().empty());
  {
    MeshScope s(mesh42());
    EXPECT_EQ(get_mesh(), mesh42());
    EXPECT_EQ(get_abstract_mesh(), mesh42().abstract_mesh());
    {
      MeshScope inner(make_mesh({8}, {"d"}));
      EXPECT_EQ(get_mesh().axis_names()[0], "d");
    }
    EXPECT_EQ(get_mesh(), mesh42());
  }
  EXPECT_TRUE(get_mesh().empty());
  Mesh manual = make_mesh({8}, {"d"}, {AxisType::Manual});
  EXPECT_THAT(error_of<ValueError>([&] { set_mesh(manual); }),
              HasSubstr("contains manual axes which is not allowed"));
}

TEST(AbstractMesh, Basics) {
  AbstractMesh a({2, 4}, {"x", "y"});
  EXPECT_EQ(a.size(), 8);
  EXPECT_TRUE(a.are_all_axes_explicit());
  EXPECT_FALSE(AbstractMesh().are_all_axes_explicit());  // false for the empty mesh
  EXPECT_EQ(AbstractMesh().size(), 0);
  auto b = a.update_axis_types({{"y", AxisType::Auto}});
  EXPECT_EQ(b.auto_axes(), std::vector<std::string>{"y"});
  EXPECT_NE(a, b);
}
