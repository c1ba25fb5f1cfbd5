// Scenario S5 (SCENARIOS.md): one sharding for tensors of different ranks. A batch
// struct with rank-3, rank-2 and rank-0 leaves (and a static) is sharded with one
// policy on meshes (1), (2), (8) and (2, 4); values equal the unsharded run, eagerly
// and under jit, and a leaf that cannot take its placement is named in the error.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Batch {
  Array images;  // (batch, h, w)
  Array labels;  // (batch, classes)
  Array weight;  // scalar
  int step = 0;  // static
};
TSR_TREE(Batch, images, labels, weight, step)

Batch make_batch(int64_t n) { return Batch{iota({n, 3, 2}), iota({n, 5}) * 0.5, scalar(0.25f), 7}; }

// Per-example outputs (what vmap would compute) and one pooled scalar.
std::pair<Array, Array> step_fn(const Batch& b) {
  Array per = (sum(b.images, {1, 2}) + sum(b.labels, 1)) * b.weight;
  return {per, mean(b.labels) + static_cast<double>(b.step)};
}

struct MeshCase {
  std::vector<int> shape;
  std::vector<std::string> names;
};
// ctest lists a case by its mesh, not a byte dump.
void PrintTo(const MeshCase& m, std::ostream* os) {
  *os << "mesh";
  for (int d : m.shape) *os << "_" << d;
}

class S5 : public ::testing::TestWithParam<MeshCase> {
 protected:
  void SetUp() override {
    batch = make_batch(8);
    auto [per, pooled] = step_fn(batch);  // the unsharded oracle, before any mesh
    want_per = per.to_vector<float>();
    want_pooled = pooled.item<float>();
    mesh = make_mesh(GetParam().shape, GetParam().names);
  }
  Batch batch;
  std::vector<float> want_per;
  float want_pooled = 0;
  Mesh mesh;
};

TEST_P(S5, OnePolicyForEveryRank) {
  MeshScope scope(mesh);
  Batch s = shard(batch, batch_sharding("data"));
  EXPECT_EQ(typeof(s.images).str(), "f32[8@data,3,2]");
  EXPECT_EQ(typeof(s.labels).str(), "f32[8@data,5]");
  EXPECT_EQ(typeof(s.weight).str(), "f32[]");
  EXPECT_EQ(s.step, 7);  // statics pass through
  int data = mesh.abstract_mesh().axis_sizes()[0];
  for (const Shard& sh : s.images.addressable_shards())
    EXPECT_EQ(sh.data->shape(), (Shape{8 / data, 3, 2}));
  // The data itself is unchanged.
  EXPECT_EQ(s.images.to_vector<float>(), batch.images.to_vector<float>());
  EXPECT_EQ(s.labels.to_vector<float>(), batch.labels.to_vector<float>());

  // Same answers as the unsharded run, eagerly and under jit.
  auto [per, pooled] = step_fn(s);
  EXPECT_EQ(typeof(per).str(), "f32[8@data]");
  EXPECT_EQ(per.to_vector<float>(), want_per);
  EXPECT_FLOAT_EQ(pooled.item<float>(), want_pooled);
  auto jstep = jit(step_fn);
  auto [jper, jpooled] = jstep(s);
  EXPECT_EQ(jper.to_vector<float>(), want_per);
  EXPECT_FLOAT_EQ(jpooled.item<float>(), want_pooled);

  // P() replicates any rank, scalars included; P("data") fits any rank >= 1.
  Batch r = shard(batch, P());
  EXPECT_EQ(typeof(r.images).str(), "f32[8,3,2]");
  EXPECT_TRUE(r.weight.sharding().is_fully_replicated());
  std::vector<Array> ranks =
      shard(std::vector<Array>{iota({8}), iota({8, 2}), iota({8, 2, 2, 2})}, P("data"));
  EXPECT_EQ(typeof(ranks[2]).str(), "f32[8@data,2,2,2]");
  // device_put over the tree with a prefix: per field.
  Batch d = device_put(
      batch, tree::Prefix<Placement>{{"images", P("data")}, {"labels", P()}, {"weight", P()}});
  EXPECT_EQ(typeof(d.images).str(), "f32[8@data,3,2]");
  EXPECT_EQ(typeof(d.labels).str(), "f32[8,5]");
  EXPECT_EQ(jstep(d).first.to_vector<float>(), want_per);
}

TEST_P(S5, ErrorsNameTheLeaf) {
  MeshScope scope(mesh);
  // One spec for every leaf: the scalar has no dimension to split.
  std::string e = error_of<ValueError>([&] { shard(batch, P("data"), "batch"); });
  EXPECT_HAS(e, "[shard] leaf 'batch.weight' (f32[]) cannot take P('data',): ");
  EXPECT_HAS(e, "Give that leaf a placement it can take");
  // A spec longer than a leaf's rank.
  e = error_of<ValueError>([&] {
    shard(std::make_tuple(iota({8, 2}), iota({8})), P("data", nullptr), "pair");
  });
  EXPECT_HAS(e, "[shard] leaf 'pair[1]' (f32[8]) cannot take P('data', None): ");
  // An axis the mesh does not have.
  e = error_of<ValueError>([&] { shard(batch, P("nope"), "batch"); });
  EXPECT_HAS(e, "[shard] leaf 'batch.images' (f32[8,3,2]) cannot take P('nope',): ");
}

TEST_P(S5, IndivisibleBatchNamesTheLeaf) {
  MeshScope scope(mesh);
  int data = mesh.abstract_mesh().axis_sizes()[0];
  Batch odd = make_batch(3);
  if (data == 1) {
    EXPECT_EQ(typeof(shard(odd, batch_sharding("data")).images).str(), "f32[3@data,3,2]");
    return;
  }
  // The type's divisibility check (E23, a ValueError as JAX's device_put on Explicit axes).
  std::string e = error_of<ValueError>([&] { shard(odd, batch_sharding("data"), "batch"); });
  EXPECT_HAS(e, "[shard] leaf 'batch.images' (f32[3,3,2]) cannot take P('data',): ");
  EXPECT_HAS(e, "does not evenly divide the dimension size 3");
}

INSTANTIATE_TEST_SUITE_P(Meshes, S5,
                         ::testing::Values(MeshCase{{1}, {"data"}}, MeshCase{{2}, {"data"}},
                                           MeshCase{{8}, {"data"}},
                                           MeshCase{{2, 4}, {"data", "model"}}),
                         [](const auto& info) {
                           std::string n;
                           for (int s : info.param.shape)
                             n += (n.empty() ? "" : "x") + std::to_string(s);
                           return "mesh" + n;
                         });

}  // namespace
