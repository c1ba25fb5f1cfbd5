// The MLP training step of mlp_train_bench (784 -> 1024 -> 1024 -> 10, batch 256,
// jit(value_and_grad) + SGD, examples/mlp.h) on 8 devices, once with the mesh axis
// Explicit (the batch's sharding in the types: the hand-annotated program) and once
// with it Auto (the same inputs placed the same way, no annotation in the program:
// the propagation pass of docs/design/0013 picks every layout). Goal: Auto <= 1.05x
// Explicit. BM_MlpStepAutoPinned pins the new params replicated (wsc to P()), the
// Explicit step's layouts; BM_MlpStepAuto/model:4 runs on a (data 2, model 4) mesh
// with the first two weights on `model` (the pass picks Megatron's split).
//
//   build/bench/auto_mlp_bench --benchmark_repetitions=5 --benchmark_min_time=2
//       --benchmark_report_aggregates_only=true
//
// TSR_BENCH_SHOW_LOCAL=1 prints each step's lowered form (`.local`) once.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "mlp_step_timer.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kBatch = 256;
constexpr double kLr = 0.01;
const mlp::Sizes kSizes{};

// mlp::make_step with the new params pinned replicated (with_sharding_constraint to
// P(): a hard constraint on Auto axes), the layouts of the Explicit step.
auto pinned_step() {
  return jit([](const mlp::Params& p, const Array& x, const Array& y) {
    auto f = [](const mlp::Params& q, const Array& a, const Array& b) {
      return mlp::loss(q, a, b);
    };
    auto [l, g] = value_and_grad(f)(p, x, y);
    mlp::Params next = tree::map2(
        [](const Array& w, const Array& dw) { return with_sharding_constraint(w - kLr * dw, P()); },
        p, g);
    return std::make_pair(next, l);
  });
}

// Times `make()`'s jitted step with x, y on `data` and the params placed by `place`.
template <class Place, class Make>
void time_step(benchmark::State& st, const Mesh& mesh, Place place, Make make) {
  MeshScope scope(mesh);
  mlp::Params p = place(mlp::init_params(kSizes, 0, P()));
  auto step = make();
  st.counters["loss"] = bench::time_mlp_steps(st, step, p, kSizes, kBatch);
}

mlp::Params as_is(mlp::Params p) { return p; }
auto plain_step() { return mlp::make_step(kLr); }

void BM_MlpStepExplicit(benchmark::State& st) {
  time_step(st, make_mesh({8}, {"data"}), as_is, plain_step);
}
BENCHMARK(BM_MlpStepExplicit)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MlpStepAutoPinned(benchmark::State& st) {
  time_step(st, make_mesh({8}, {"data"}, {AxisType::Auto}), as_is, pinned_step);
}
BENCHMARK(BM_MlpStepAutoPinned)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MlpStepAuto(benchmark::State& st) {
  int model = static_cast<int>(st.range(0));
  if (model == 1) {
    time_step(st, make_mesh({8}, {"data"}, {AxisType::Auto}), as_is, plain_step);
    return;
  }
  Mesh mesh = make_mesh({8 / model, model}, {"data", "model"}, {AxisType::Auto, AxisType::Auto});
  auto megatron = [](mlp::Params p) {
    p.w1 = device_put(p.w1, P(nullptr, "model"));
    p.b1 = device_put(p.b1, P("model"));
    p.w2 = device_put(p.w2, P("model", nullptr));
    return p;
  };
  time_step(st, mesh, megatron, plain_step);
}
BENCHMARK(BM_MlpStepAuto)
    ->ArgName("model")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A fresh jit per iteration: trace, lower (the Auto pass runs here) and one step. The
// Auto - Explicit difference is what the propagation pass costs for this program.
void BM_MlpFirstCall(benchmark::State& st) {
  bool autos = st.range(0) != 0;
  Mesh mesh = autos ? make_mesh({8}, {"data"}, {AxisType::Auto}) : make_mesh({8}, {"data"});
  MeshScope scope(mesh);
  mlp::Params p = mlp::init_params(kSizes, 0, P());
  Array k = random::key(1);
  Array x = device_put(random::normal(random::fold_in(k, 0), {kBatch, kSizes.in}), P("data"));
  Array y =
      device_put(random::randint(random::fold_in(k, 1), {kBatch}, 0, kSizes.classes), P("data"));
  for (auto _ : st) {
    auto step = mlp::make_step(kLr);
    auto r = step(p, x, y);
    r.second.block_until_ready();
    r.first.w1.block_until_ready();
  }
}
BENCHMARK(BM_MlpFirstCall)
    ->ArgName("auto")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
