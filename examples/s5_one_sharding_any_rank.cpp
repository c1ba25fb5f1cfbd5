// Scenario S5 (SCENARIOS.md): one sharding for tensors of different ranks.
//
// Training data holds rank-3 and rank-2 tensors (and a scalar). A named sharding,
// P("data"), splits the leading dimension over mesh axis "data" whatever the rank
// (trailing dimensions replicated); P() replicates any rank, scalars included.
// shard(tree, policy) applies one policy to every leaf of a batch struct; statics
// pass through, and a leaf that cannot take its placement is named in the error.
//
// The mistake from the scenario, as a contrast (JAX's old positional shardings):
//
//   sharding = PositionalSharding(devices).reshape(n, 1)     # fits rank-2 arrays only
//   jax.device_put(images, sharding)                         # rank 3: rejected
//   sharding = sharding.reshape(n, 1, 1)                     # fits rank-3 arrays only
//   jax.device_put(labels, sharding)                         # rank 2: rejected
//   jax.device_put(batch, sharding.replicate())              # "works": every device holds
//                                                            # the whole batch, no data
//                                                            # parallelism left
//
// Tessera has named shardings only: a spec names mesh axes per leading dimension, so
// the rank of the mesh and the rank of the array are never tied together.
#include <iostream>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

struct Batch {
  Array images;          // rank 3: (batch, height, width)
  Array labels;          // rank 2: (batch, classes)
  Array weight;          // rank 0: a loss weight
  std::string tag = "";  // static: passes through untouched
};
TSR_TREE(Batch, images, labels, weight, tag)

void show(const char* title, const Batch& b) {
  std::cout << title << "\n";
  auto paths = tree::paths(b, "batch");
  auto leaves = tree::leaves(b);
  for (size_t i = 0; i < leaves.size(); ++i)
    std::cout << "  " << paths[i] << " : " << typeof(leaves[i]) << "\n";
  std::cout << "  batch.tag : '" << b.tag << "' (static)\n";
}

Array loss(const Batch& b) {
  // Per-example losses: sharding says where they are computed, never what they are.
  return (sum(b.images, {1, 2}) + sum(b.labels, 1)) * b.weight;
}

}  // namespace

int main() {
  tsr::init({.num_cpu_devices = 8});
  Mesh mesh = make_mesh({8}, {"data"});
  MeshScope scope(mesh);

  Batch batch{iota({16, 4, 4}), iota({16, 10}), scalar(0.5f), "train"};
  std::cout << "structure: " << tree::structure(batch) << "\n\n";

  // One policy for every leaf: leading dimension over "data", scalars replicated.
  Batch sharded = shard(batch, [](const std::string&, const ArrayType& t) -> Placement {
    return t.ndim() == 0 ? P() : P("data");
  });
  show("shard(batch, policy):", sharded);
  // The same policy ships as batch_sharding("data").
  Batch same = shard(batch, batch_sharding("data"));
  std::cout << "batch_sharding(\"data\") gives the same types: "
            << (typeof(same.images) == typeof(sharded.images) ? "yes" : "no") << "\n\n";

  // P() replicates every rank, the scalar included.
  show("shard(batch, P()):", shard(batch, P()));

  // Sharding changes where data lives, never the answer.
  auto jloss = jit(loss);
  auto want = loss(batch).to_vector<float>();
  auto got = jloss(sharded).to_vector<float>();
  std::cout << "\nper-example loss, unsharded vs sharded under jit: " << want[0] << " / " << got[0]
            << ", ..., " << want[15] << " / " << got[15]
            << (want == got ? "  (equal)" : "  (DIFFERENT)") << "\n\n";

  // One spec for everything: the scalar cannot take P("data"), and the error says which
  // leaf and why.
  try {
    shard(batch, P("data"), "batch");
  } catch (const ValueError& e) {
    std::cout << "shard(batch, P(\"data\")): ValueError: " << e.what() << "\n\n";
  }
  // A batch of 10 does not split over 8 devices: the leaf is named, with the reason.
  Batch odd{iota({10, 4, 4}), iota({10, 10}), scalar(1.f), "eval"};
  try {
    shard(odd, batch_sharding("data"), "batch");
  } catch (const ValueError& e) {
    std::cout << "shard(odd batch): ValueError: " << e.what() << "\n";
  }
  return 0;
}
