// Pooling of a ResNet stem's activations, f32[32, 112, 112, 64] (NHWC): max_pool 3x3
// stride 2 SAME forward, and forward + backward (the gradient of sum(max_pool(x) * w));
// avg_pool 2x2 stride 2. One device, and the image rows sharded over 4 devices
// (halo exchange for the 3x3 window). JAX's numbers: bench/window_jax.py, same shapes.
//
//   build/bench/window_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

const Shape kShape{32, 112, 112, 64};

Array input(int devices) {
  Array x = random::normal(random::key(0), kShape);
  if (devices == 1) return device_put(x, local_devices()[0]);
  return device_put(x, NamedSharding(make_mesh({devices}, {"x"}), P(nullptr, "x")));
}
// The sharded cases run with their mesh as the context mesh (below), as jit's halo
// exchange (a shard_map) needs under a trace; without one the rows are gathered.
Mesh mesh_for(int devices) { return make_mesh({devices}, {"x"}); }

void BM_MaxPool3x3(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::optional<MeshScope> scope;
  if (n > 1) scope.emplace(mesh_for(n));
  Array x = input(n);
  auto f = jit([](const Array& a) { return max_pool(a, {3, 3}, {2, 2}, "SAME"); });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_MaxPool3x3)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_MaxPool3x3Grad(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::optional<MeshScope> scope;
  if (n > 1) scope.emplace(mesh_for(n));
  Array x = input(n);
  auto f = jit(grad([](const Array& a) { return sum(max_pool(a, {3, 3}, {2, 2}, "SAME")); }));
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_MaxPool3x3Grad)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_AvgPool2x2(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::optional<MeshScope> scope;
  if (n > 1) scope.emplace(mesh_for(n));
  Array x = input(n);
  auto f = jit([](const Array& a) { return avg_pool(a, {2, 2}, {2, 2}); });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_AvgPool2x2)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(4)
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
