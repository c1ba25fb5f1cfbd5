// The training step of examples/mlp_train.cpp (examples/mlp.h): a few SGD steps on
// the teacher problem make the loss fall, and the data-parallel run on 8 devices
// (batch sharded, params replicated) follows the 1-device run step by step.
#include <gtest/gtest.h>

#include <vector>

#include "../../examples/mlp.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

const mlp::Sizes kSizes{16, 32, 32, 10};
constexpr int64_t kBatch = 64;
constexpr int kSteps = 12;

struct Trace {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;  // leaves after the last step
};

// kSteps steps over 4 fixed batches on a mesh of n devices along "data".
Trace train(int n) {
  Mesh mesh = make_mesh({n}, {"data"});
  MeshScope scope(mesh);
  auto [x_all, y_all] = mlp::teacher_data(4 * kBatch, kSizes.in, kSizes.classes, 7);
  mlp::Params p = mlp::init_params(kSizes, 3, P());
  auto step = mlp::make_step(0.2);
  Trace r;
  for (int s = 0; s < kSteps; ++s) {
    int64_t b = (s % 4) * kBatch;
    Array x = device_put(slice(x_all, {b, 0}, {b + kBatch, kSizes.in}), P("data"));
    Array y = device_put(slice(y_all, {b}, {b + kBatch}), P("data"));
    auto [next, loss] = step(p, x, y);
    EXPECT_EQ(typeof(next.w2).str(), "f32[32,32]");  // gradients came back replicated
    p = std::move(next);
    r.losses.push_back(loss.item<float>());
  }
  for (const Array& leaf : tree::leaves(p)) r.params.push_back(leaf.to_vector<float>());
  return r;
}

TEST(MlpTrain, LossFallsAnd8DevicesEqual1) {
  Trace one = train(1);
  Trace eight = train(8);
  // Learning: the last pass over the 4 batches is clearly below the first.
  float first = 0, last = 0;
  for (int i = 0; i < 4; ++i) first += one.losses[i], last += one.losses[kSteps - 4 + i];
  EXPECT_LT(last, 0.8f * first) << "the loss did not fall";
  // Sharding changes where the work runs, not the answer (up to summation order).
  ASSERT_EQ(one.losses.size(), eight.losses.size());
  for (size_t i = 0; i < one.losses.size(); ++i)
    EXPECT_NEAR(one.losses[i], eight.losses[i], 1e-4f * (1 + one.losses[i])) << "step " << i;
  ASSERT_EQ(one.params.size(), eight.params.size());
  for (size_t l = 0; l < one.params.size(); ++l)
    for (size_t j = 0; j < one.params[l].size(); ++j)
      ASSERT_NEAR(one.params[l][j], eight.params[l][j], 1e-4f) << "leaf " << l << " at " << j;
}

}  // namespace
