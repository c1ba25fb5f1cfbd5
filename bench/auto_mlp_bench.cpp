// The MLP training step of mlp_train_bench (784 -> 1024 -> 1024 -> 10, batch 256,
// jit(value_and_grad) + SGD, examples/mlp.h) on 8 devices, once with the mesh axis
// Explicit (the batch's sharding in the types, the hand-annotated program) and once
// with it Auto (the same inputs placed the same way, no annotation in the program:
// the propagation pass of docs/design/0013 picks every layout). Goal: Auto <= 1.05x
// Explicit. BM_MlpStepAuto/model:4 runs the Auto step on a (data 2, model 4) mesh
// with the weights on `model` (Megatron column/row split chosen by the pass).
//
//   build/bench/auto_mlp_bench --benchmark_repetitions=5 --benchmark_min_time=2
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "../examples/mlp.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kBatch = 256;
constexpr double kLr = 0.01;
const mlp::Sizes kSizes{};

// Times the jitted step with x, y on `data` and the params placed by `place`.
template <class Place>
void time_step(benchmark::State& st, const Mesh& mesh, Place place) {
  MeshScope scope(mesh);
  mlp::Params p = place(mlp::init_params(kSizes, 0, P()));
  Array k = random::key(1);
  Array x = device_put(random::normal(random::fold_in(k, 0), {kBatch, kSizes.in}), P("data"));
  Array y =
      device_put(random::randint(random::fold_in(k, 1), {kBatch}, 0, kSizes.classes), P("data"));
  auto step = mlp::make_step(kLr);
  if (std::getenv("TSR_BENCH_SHOW_LOCAL"))
    std::fprintf(stderr, "%s\n", step.lower(p, x, y).local.c_str());
  for (int i = 0; i < 3; ++i) p = step(p, x, y).first;  // trace, lower, warm the allocator
  p.w1.block_until_ready();
  Array loss;
  for (auto _ : st) {
    auto [next, l] = step(p, x, y);
    p = std::move(next);
    loss = l;
    loss.block_until_ready();
    p.w1.block_until_ready();
  }
  st.counters["loss"] = loss.item<float>();
}

mlp::Params replicated(mlp::Params p) { return p; }

void BM_MlpStepExplicit(benchmark::State& st) {
  time_step(st, make_mesh({8}, {"data"}), replicated);
}
BENCHMARK(BM_MlpStepExplicit)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MlpStepAuto(benchmark::State& st) {
  int model = static_cast<int>(st.range(0));
  if (model == 1) {
    time_step(st, make_mesh({8}, {"data"}, {AxisType::Auto}), replicated);
    return;
  }
  Mesh mesh = make_mesh({8 / model, model}, {"data", "model"}, {AxisType::Auto, AxisType::Auto});
  time_step(st, mesh, [](mlp::Params p) {
    p.w1 = device_put(p.w1, P(nullptr, "model"));
    p.b1 = device_put(p.b1, P("model"));
    p.w2 = device_put(p.w2, P("model", nullptr));
    return p;
  });
}
BENCHMARK(BM_MlpStepAuto)
    ->ArgName("model")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
