// Data-parallel training of a small relu MLP (64 -> 128 -> 128 -> 10) on 8 simulated
// devices: the batch is sharded over mesh axis "data", the parameters are replicated,
// and one jitted step computes the loss, the gradients (all-reduced over "data" by the
// partitioner) and the SGD update (examples/mlp.h).
//
// The problem is learnable: each label is the argmax of a fixed random teacher
// network's output on a Gaussian input, so the loss falls from about log(10) = 2.3
// and the held-out accuracy rises well above chance (10%).
#include <chrono>
#include <cstdio>
#include <vector>

#include <tsr/tsr.h>

#include "mlp.h"

using namespace tsr;

int main() {
  tsr::init({.num_cpu_devices = 8});
  Mesh mesh = make_mesh({8}, {"data"});
  MeshScope scope(mesh);

  const mlp::Sizes sizes{64, 128, 128, 10};
  constexpr int64_t kTrain = 8192, kTest = 2048, kBatch = 256;
  constexpr int kEpochs = 10;
  auto [x_all, y_all] = mlp::teacher_data(kTrain + kTest, sizes.in, sizes.classes, 42);

  // Batches as device-resident row blocks: each device holds kBatch / 8 rows.
  std::vector<std::pair<Array, Array>> batches;
  for (int64_t s = 0; s < kTrain; s += kBatch)
    batches.emplace_back(device_put(slice(x_all, {s, 0}, {s + kBatch, sizes.in}), P("data")),
                         device_put(slice(y_all, {s}, {s + kBatch}), P("data")));
  Array x_test = device_put(slice(x_all, {kTrain, 0}, {kTrain + kTest, sizes.in}), P("data"));
  Array y_test = device_put(slice(y_all, {kTrain}, {kTrain + kTest}), P("data"));

  mlp::Params params = mlp::init_params(sizes, 0, P());
  auto step = mlp::make_step(/*lr=*/0.1);
  std::printf("params %s, batch %s on %d devices\n", tree::structure(params).str().c_str(),
              typeof(batches[0].first).str().c_str(), mesh.size());
  std::printf("epoch  mean loss  test accuracy  ms/step\n");
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    Array total = zeros({});
    for (const auto& [x, y] : batches) {
      auto [next, loss] = step(params, x, y);
      params = std::move(next);
      total = total + loss;
    }
    double mean_loss = total.item<float>() / static_cast<double>(batches.size());
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(batches.size());
    std::printf("%5d  %9.4f  %12.1f%%  %7.2f\n", epoch, mean_loss,
                100 * mlp::accuracy(params, x_test, y_test), ms);
  }
  return 0;
}
