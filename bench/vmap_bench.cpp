// vmap against the same computation written batched by hand, in one run:
//
// - BM_VmapChain / BM_HandChain: a per-example matrix-vector chain
//   z = W2 tanh(W1 x) over 256 examples of 512 (W 512x512), jitted. vmap must
//   produce the batched dot_generals (no loop): goal <= 1.1x the hand-written form.
// - BM_PerExampleGrads / BM_BatchGrad: the per-example gradients of the MLP of
//   examples/mlp.h (784 -> 1024 -> 1024 -> 10) for a batch of 64, as
//   vmap(grad(loss of one example)), against the plain gradient of the batch loss;
//   on 1 and 8 devices with the batch sharded. Per-example gradients materialise 64
//   copies of the parameters (476 MB), so the ratio is reported, not a goal.
//
//   build/bench/vmap_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "../examples/mlp.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t kExamples = 256, kDim = 512;

struct Chain {
  Array w1, w2, xs;
  Chain() {
    Array k = random::key(0);
    w1 = random::normal(random::fold_in(k, 1), {kDim, kDim}) * 0.05;
    w2 = random::normal(random::fold_in(k, 2), {kDim, kDim}) * 0.05;
    xs = random::normal(random::fold_in(k, 3), {kExamples, kDim});
  }
};

void BM_VmapChain(benchmark::State& st) {
  Chain c;
  auto one = [](const Array& w1, const Array& w2, const Array& x) {
    return matmul(w2, tanh(matmul(w1, x)));
  };
  auto f = jit(vmap(one, {.in_axes = {none, none, 0}}));
  f(c.w1, c.w2, c.xs).block_until_ready();
  for (auto _ : st) f(c.w1, c.w2, c.xs).block_until_ready();
}
BENCHMARK(BM_VmapChain)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_HandChain(benchmark::State& st) {
  Chain c;
  auto f = jit([](const Array& w1, const Array& w2, const Array& xs) {
    return matmul(tanh(matmul(xs, transpose(w1))), transpose(w2));
  });
  f(c.w1, c.w2, c.xs).block_until_ready();
  for (auto _ : st) f(c.w1, c.w2, c.xs).block_until_ready();
}
BENCHMARK(BM_HandChain)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kBatch = 64;
const mlp::Sizes kSizes{};

template <class Make>
void time_grads(benchmark::State& st, Make make) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"data"});
  MeshScope scope(mesh);
  mlp::Params p = mlp::init_params(kSizes, 0, P());
  Array k = random::key(1);
  Array x = device_put(random::normal(random::fold_in(k, 0), {kBatch, kSizes.in}), P("data"));
  Array y =
      device_put(random::randint(random::fold_in(k, 1), {kBatch}, 0, kSizes.classes), P("data"));
  auto f = make();
  mlp::Params g = f(p, x, y);
  g.w1.block_until_ready();
  for (auto _ : st) {
    g = f(p, x, y);
    g.w1.block_until_ready();
  }
}

// The loss of one example: x f32[in], y i32[].
Array loss_one(const mlp::Params& p, const Array& x, const Array& y) {
  return mlp::loss(p, reshape(x, {1, kSizes.in}), reshape(y, {1}));
}

void BM_PerExampleGrads(benchmark::State& st) {
  time_grads(st, [] { return jit(vmap(grad(loss_one), {.in_axes = {none, 0, 0}})); });
}
BENCHMARK(BM_PerExampleGrads)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_BatchGrad(benchmark::State& st) {
  time_grads(st, [] {
    return jit([](const mlp::Params& p, const Array& x, const Array& y) {
      return grad([](const mlp::Params& q, const Array& a, const Array& b) {
        return mlp::loss(q, a, b);
      })(p, x, y);
    });
  });
}
BENCHMARK(BM_BatchGrad)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
