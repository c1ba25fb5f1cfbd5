// Fusion in jit: a 5-op elementwise chain on 16 M floats (1 device), jitted (fused
// into one blocked loop), jitted with TSR_FUSION=0 semantics (the same chain as 5
// kernels: measured by the eager chain, which runs one kernel per op), against one
// memcpy of the same 64 MiB in the same run.
//
//   build/bench/fusion_bench --benchmark_repetitions=5 --benchmark_min_time=0.5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t kN = int64_t{1} << 24;

// mul, add, mul, sub, max: five memory-bound ops.
Array chain(const Array& x) { return maximum((x * 2.0f + 1.0f) * x - 3.0f, 0.0f); }

void BM_Memcpy(benchmark::State& st) {
  std::vector<float> a(kN, 1.f), b(kN);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), kN * sizeof(float));
    benchmark::DoNotOptimize(b.data());
  }
  st.SetBytesProcessed(st.iterations() * kN * 4);
}
BENCHMARK(BM_Memcpy)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_ChainEager(benchmark::State& st) {
  MeshScope scope(make_mesh({1}, {"x"}));
  Array x = device_put(linspace(-2, 2, kN).astype(float32), P());
  Array y = chain(x);
  y.block_until_ready();
  for (auto _ : st) {
    y = chain(x);
    y.block_until_ready();
  }
}
BENCHMARK(BM_ChainEager)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

void BM_ChainJitFused(benchmark::State& st) {
  MeshScope scope(make_mesh({1}, {"x"}));
  Array x = device_put(linspace(-2, 2, kN).astype(float32), P());
  auto f = jit(chain);
  Array y = f(x);
  y.block_until_ready();
  for (auto _ : st) {
    y = f(x);
    y.block_until_ready();
  }
}
BENCHMARK(BM_ChainJitFused)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
