// visualize() at trace time (issue 12 item 7): inside jit the global type and its
// device grid; inside a shard_map body the block type with its vma and, per block,
// the devices holding it; mesh coordinates when only the abstract mesh is known.
#include <gtest/gtest.h>

#include <tsr/tsr.h>

#include "support/error_of.h"

using namespace tsr;

namespace {

Mesh mesh24() { return make_mesh({2, 4}, {"x", "y"}); }

const char* kBlockX =
    "f32[4]{V:x} block in a shard_map body on Mesh('x': 2, 'y': 4, axis_types=(Manual, "
    "Manual)), manual axes ('x', 'y')\n"
    "varies over x (cols): 2 different blocks; devices that differ only along y hold the same "
    "block\n"
    "┌───────────┬───────────┐\n"
    "│  CPU 0-3  │  CPU 4-7  │\n"
    "└───────────┴───────────┘\n"
    "block shape (4,), 16 B per device, 8 devices\n";

}  // namespace

TEST(VisualizeTraced, JitWithContextMeshNamesDevices) {
  Mesh m = mesh24();
  MeshScope scope(m);
  std::string inside;
  auto f = jit([&](const Array& x) {
    inside = visualize(x);
    return x + 1.0;
  });
  Array r = f(device_put(iota({2, 8}), P("x", nullptr)));
  EXPECT_EQ(r.to_vector<float>()[15], 16.f);
  EXPECT_EQ(inside,
            "f32[2@x,8] on Mesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))\n"
            "┌───────────┐\n"
            "│  CPU 0-3  │\n"
            "├───────────┤\n"
            "│  CPU 4-7  │\n"
            "└───────────┘\n"
            "shard shape (1, 8), 32 B per device, 8 devices\n");
}

TEST(VisualizeTraced, JitWithoutContextMeshPrintsCoordinates) {
  std::string inside;
  auto f = jit([&](const Array& x) {
    inside = visualize(x);
    return x;
  });
  f(device_put(iota({2, 8}), NamedSharding(mesh24(), P("x", nullptr))));
  EXPECT_EQ(inside,
            "f32[2@x,8] on AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))\n"
            "devices not known (only the abstract mesh): a cell gives the mesh coordinates (x, y) "
            "of the devices holding the block, * for every index\n"
            "┌─────────┐\n"
            "│  (0,*)  │\n"
            "├─────────┤\n"
            "│  (1,*)  │\n"
            "└─────────┘\n"
            "shard shape (1, 8), 32 B per device, 8 devices\n");
}

TEST(VisualizeTraced, ShardMapBodyVaryingThenPsum) {
  Mesh m = mesh24();
  MeshScope scope(m);
  std::string block, summed;
  auto f = shard_map(
      [&](const Array& x) {
        block = visualize(x);
        Array s = psum(x, "x");
        summed = visualize(s);
        return s;
      },
      {.in_specs = P("x"), .out_specs = P()});
  Array r = f(device_put(iota({8}), P("x")));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(block, kBlockX);
  EXPECT_EQ(summed,
            "f32[4] block in a shard_map body on Mesh('x': 2, 'y': 4, axis_types=(Manual, "
            "Manual)), manual axes ('x', 'y')\n"
            "invariant: every device holds the same block\n"
            "┌───────────┐\n"
            "│  CPU 0-7  │\n"
            "└───────────┘\n"
            "block shape (4,), 16 B per device, 8 devices\n");
}

TEST(VisualizeTraced, NestedJitInShardMapBody) {
  Mesh m = mesh24();
  Array a = device_put(iota({8}), NamedSharding(m, P("x")));
  // A fresh inner jit each time: a cached one would not trace (nor visualize) again.
  auto make = [&](std::string& out) {
    auto g = jit([&out](const Array& b) {
      out = visualize(b);
      return b * 2.0;
    });
    // .mesh without a context mesh: the body still knows its devices.
    return shard_map([g](const Array& x) { return g(x); },
                     {.mesh = m, .in_specs = P("x"), .out_specs = P("x")});
  };
  std::string direct, under_jit;
  EXPECT_EQ(make(direct)(a).to_vector<float>()[7], 14.f);
  EXPECT_EQ(direct, kBlockX);
  auto f = make(under_jit);
  auto h = jit([&](const Array& x) { return f(x); });
  EXPECT_EQ(h(a).to_vector<float>()[7], 14.f);
  EXPECT_EQ(under_jit, kBlockX);
}

TEST(VisualizeTraced, EveryDeviceItsOwnBlockAndUntrackedVma) {
  Mesh m = make_mesh({2, 2, 2}, {"a", "b", "c"});
  MeshScope scope(m);
  std::string all, index, untracked;
  auto f = shard_map(
      [&](const Array& x) {
        all = visualize(x);
        index = visualize(axis_index("b"));
        return x;
      },
      {.in_specs = P(Axes{"a", "c"}, "b"), .out_specs = P(Axes{"a", "c"}, "b")});
  f(device_put(iota({8, 4}), P(Axes{"a", "c"}, "b")));
  EXPECT_EQ(all,
            "f32[2,2]{V:(a,b,c)} block in a shard_map body on Mesh('a': 2, 'b': 2, 'c': 2, "
            "axis_types=(Manual, Manual, Manual)), manual axes ('a', 'b', 'c')\n"
            "varies over a (panels), b (rows), c (cols): 8 different blocks, one per device\n"
            "a=0\n"
            "┌─────────┬─────────┐\n"
            "│  CPU 0  │  CPU 1  │\n"
            "├─────────┼─────────┤\n"
            "│  CPU 2  │  CPU 3  │\n"
            "└─────────┴─────────┘\n"
            "a=1\n"
            "┌─────────┬─────────┐\n"
            "│  CPU 4  │  CPU 5  │\n"
            "├─────────┼─────────┤\n"
            "│  CPU 6  │  CPU 7  │\n"
            "└─────────┴─────────┘\n"
            "block shape (2, 2), 16 B per device, 8 devices\n");
  EXPECT_HAS(index, "i32[]{V:b} block");
  EXPECT_HAS(index, "devices that differ only along a, c hold the same block");
  EXPECT_HAS(index, "│  CPU 0,1,4,5  │  CPU 2,3,6,7  │");
  auto g = shard_map(
      [&](const Array& x) {
        untracked = visualize(x);
        return x;
      },
      {.in_specs = P("a"), .out_specs = P("a"), .check_vma = false});
  g(device_put(iota({8, 4}), P("a")));
  EXPECT_HAS(untracked, "f32[4,4] block");
  EXPECT_HAS(untracked, "vma is not tracked (check_vma=false)");
  EXPECT_HAS(untracked, "│  CPU 6  │  CPU 7  │");
}

TEST(VisualizeTraced, BodyValueOnARenamedAbstractMeshPrintsCoordinates) {
  Mesh m = mesh24();
  MeshScope scope(m);
  std::string out;
  auto f = shard_map(
      [&](const Array& x) {
        AbstractMeshScope renamed(
            get_abstract_mesh().update({.axis_names = std::vector<std::string>{"p", "q"}}));
        out = visualize(zeros({4}));
        return x;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  f(device_put(iota({8}), P("x")));
  EXPECT_EQ(out,
            "f32[4] block in a shard_map body on AbstractMesh('p': 2, 'q': 4, "
            "axis_types=(Manual, Manual)), manual axes ('p', 'q')\n"
            "devices not known (only the abstract mesh): a cell gives the mesh coordinates (p, q) "
            "of the devices holding the block, * for every index\n"
            "invariant: every device holds the same block\n"
            "┌─────────┐\n"
            "│  (*,*)  │\n"
            "└─────────┘\n"
            "block shape (4,), 16 B per device, 8 devices\n");
}

TEST(VisualizeTraced, OneDeviceAxis) {
  Mesh m = make_mesh({1}, {"x"});
  std::string out;
  shard_map(
      [&](const Array& b) {
        out = visualize(b);
        return b;
      },
      {.mesh = m, .in_specs = P("x"), .out_specs = P("x")})(
      device_put(iota({2}), NamedSharding(m, P("x"))));
  EXPECT_EQ(out,
            "f32[2]{V:x} block in a shard_map body on Mesh('x': 1, axis_types=(Manual,)), "
            "manual axes ('x',)\n"
            "varies over x (cols): 1 block, one per device\n"
            "┌─────────┐\n"
            "│  CPU 0  │\n"
            "└─────────┘\n"
            "block shape (2,), 8 B per device, 1 device\n");
}

TEST(VisualizeTraced, PartialManualAndNestedBodies) {
  Mesh m = mesh24();
  MeshScope scope(m);
  std::string outer, inner, replicated;
  auto g = shard_map(
      [&](const Array& c) {
        inner = visualize(c);
        return c;
      },
      {.in_specs = P(nullptr, "y"), .out_specs = P(nullptr, "y"), .axis_names = {"y"}});
  auto f = shard_map(
      [&](const Array& b) {
        outer = visualize(b);
        return g(b);
      },
      {.in_specs = P("x"), .out_specs = P("x"), .axis_names = {"x"}});
  Array a = device_put(iota({8, 12}), P("x", "y"));
  EXPECT_EQ(f(a).to_vector<float>(), a.to_vector<float>());
  // Only x is manual: the block keeps its y sharding, and devices along y hold its parts.
  EXPECT_EQ(outer,
            "f32[4,12@y]{V:x} block in a shard_map body on Mesh('x': 2, 'y': 4, "
            "axis_types=(Manual, Explicit)), manual axes ('x',)\n"
            "varies over x (cols): 2 different blocks; each block is split over y (its type's "
            "sharding)\n"
            "┌───────────┬───────────┐\n"
            "│  CPU 0-3  │  CPU 4-7  │\n"
            "└───────────┴───────────┘\n"
            "block shape (4, 12), split over y into (4, 3), 48 B per device, 8 devices\n");
  EXPECT_HAS(inner,
             "f32[4,3]{V:(x,y)} block in a shard_map body on Mesh('x': 2, 'y': 4, "
             "axis_types=(Manual, Manual)), manual axes ('x', 'y')");
  EXPECT_HAS(inner, "varies over x (rows), y (cols): 8 different blocks, one per device");
  EXPECT_HAS(inner, "│  CPU 4  │  CPU 5  │  CPU 6  │  CPU 7  │");
  // A block not split over the Explicit axis: devices along it hold the same block.
  auto h = shard_map(
      [&](const Array& b) {
        replicated = visualize(b);
        return b;
      },
      {.in_specs = P("x"), .out_specs = P("x"), .axis_names = {"x"}});
  h(device_put(iota({8, 12}), P("x")));
  EXPECT_HAS(replicated, "f32[4,12]{V:x} block");
  EXPECT_HAS(replicated, "devices that differ only along y hold the same block\n");
  EXPECT_HAS(replicated, "block shape (4, 12), 192 B per device, 8 devices\n");
}
