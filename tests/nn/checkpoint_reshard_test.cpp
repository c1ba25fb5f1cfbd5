// Restore onto another mesh: a tree saved on each of four layouts (8 devices 1-D,
// (4, 2), (2, 2, 2), one device) is restored onto each of the others and must come
// back bitwise identical, laid out as `like` asks.
#include <map>
#include <string>
#include <vector>

#include "nn/checkpoint_support.h"

using namespace tsr;
using namespace ckpt_test;

namespace {

struct Net {
  Array w;      // f32[16, 8]
  Array b;      // bf16[8]
  Array steps;  // i32[] (a scalar)
  Array table;  // u8[8, 4, 2]
};
TSR_TREE(Net, w, b, steps, table);

// The four layouts: a name and a placement per leaf.
struct Layout {
  std::string name;
  std::vector<Placement> where;  // w, b, steps, table
};

std::vector<Layout> layouts() {
  Mesh m1 = make_mesh({8}, {"data"});
  Mesh m2 = make_mesh({4, 2}, {"x", "y"});
  Mesh m3 = make_mesh({2, 2, 2}, {"a", "b", "c"});
  Device one = devices()[3];
  return {
      {"1d",
       {NamedSharding(m1, P("data")), NamedSharding(m1, P()), NamedSharding(m1, P()),
        NamedSharding(m1, P(nullptr, nullptr, nullptr))}},
      {"4x2",
       {NamedSharding(m2, P("x", "y")), NamedSharding(m2, P("y")), NamedSharding(m2, P()),
        NamedSharding(m2, P("y", "x"))}},
      {"2x2x2",
       {NamedSharding(m3, P("c", Axes{"a", "b"})), NamedSharding(m3, P(Axes{"b", "c"})),
        NamedSharding(m3, P()), NamedSharding(m3, P(Axes{"a", "c"}, nullptr, "b"))}},
      {"1dev", {one, one, one, one}},
  };
}

Net values() {
  std::vector<uint8_t> t(64);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(i * 37 + 5);
  return {pattern({16, 8}, 0.25f), pattern({8}, 1.5f).astype(bfloat16), scalar<int32_t>(-7),
          array(t, {8, 4, 2})};
}

Net placed(const Net& n, const Layout& l) {
  return {device_put(n.w, l.where[0]), device_put(n.b, l.where[1]), device_put(n.steps, l.where[2]),
          device_put(n.table, l.where[3])};
}

class CheckpointReshard : public ScratchTest {};

TEST_F(CheckpointReshard, EveryLayoutRestoresOntoEveryOther) {
  Net v = values();
  auto ls = layouts();
  for (const auto& from : ls) {
    fs::path dir = root_ / from.name;
    ckpt::save(dir, placed(v, from));
    for (const auto& to : ls) {
      Net like = placed(tree::map([](const Array& x) { return zeros_like(x); }, v), to);
      Net got = ckpt::restore(dir, like);
      std::string what = from.name + " -> " + to.name;
      auto gl = tree::leaves(got), ll = tree::leaves(like), vl = tree::leaves(v);
      for (size_t i = 0; i < gl.size(); ++i) {
        expect_bitwise(vl[i], gl[i], what + " leaf " + std::to_string(i));
        EXPECT_EQ(gl[i].sharding(), ll[i].sharding()) << what << " leaf " << i;
        // Every device block holds its part of the value (not just the gathered whole).
        for (const auto& s : gl[i].addressable_shards()) {
          Shape start, stop;
          for (const auto& sl : s.index) {
            start.push_back(sl.start);
            stop.push_back(sl.stop);
          }
          expect_bitwise(slice(vl[i], start, stop), *s.data, what + " block");
        }
      }
    }
  }
}

TEST_F(CheckpointReshard, StoresEachDistinctBlockOnce) {
  Net v = values();
  auto ls = layouts();
  // Distinct blocks per leaf (w, b, steps, table) for each layout.
  std::map<std::string, std::vector<size_t>> want = {
      {"1d", {8, 1, 1, 1}}, {"4x2", {8, 2, 1, 8}}, {"2x2x2", {8, 4, 1, 8}}, {"1dev", {1, 1, 1, 1}}};
  for (const auto& l : ls) {
    ckpt::save(root_ / l.name, placed(v, l));
    ckpt::Info info = ckpt::inspect(root_ / l.name);
    ASSERT_EQ(info.leaves.size(), 4u);
    int64_t stored = 0;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(info.leaves[i].blocks.size(), want[l.name][i]) << l.name << " leaf " << i;
      stored += info.leaves[i].nbytes();
    }
    // Nothing is stored twice: the stored bytes are exactly the logical bytes.
    EXPECT_EQ(info.stored_bytes(), stored) << l.name;
  }
}

TEST_F(CheckpointReshard, RestoresOntoAbstractLike) {
  Net v = values();
  auto ls = layouts();
  ckpt::save(root_ / "c", placed(v, ls[1]));
  const auto& to = ls[2];
  Net like{shape_dtype_struct({16, 8}, float32, to.where[0]),
           shape_dtype_struct({8}, bfloat16, to.where[1]),
           shape_dtype_struct({}, int32, to.where[2]),
           shape_dtype_struct({8, 4, 2}, uint8, to.where[3])};
  Net got = ckpt::restore(root_ / "c", like);
  EXPECT_FALSE(is_abstract(got.w));
  expect_bitwise(v.w, got.w, "w");
  expect_bitwise(v.table, got.table, "table");
  EXPECT_EQ(got.w.sharding(), like.w.sharding());
}

TEST_F(CheckpointReshard, UnevenOverlapsAcrossMeshes) {
  // 3 blocks of 4 rows restored as 2 blocks of 6 rows: each target block takes parts of
  // two stored blocks.
  Array x = pattern({12, 5}, 0.5f);
  Mesh m3 = make_mesh({3}, {"r"}, {}, {devices()[0], devices()[1], devices()[2]});
  Mesh m2 = make_mesh({2}, {"r"}, {}, {devices()[5], devices()[6]});
  ckpt::save(root_ / "u", std::vector<Array>{device_put(x, NamedSharding(m3, P("r")))});
  auto got = ckpt::restore(
      root_ / "u", std::vector<Array>{device_put(zeros_like(x), NamedSharding(m2, P("r")))});
  expect_bitwise(x, got[0], "12x5 from 3 blocks onto 2");
}

}  // namespace
