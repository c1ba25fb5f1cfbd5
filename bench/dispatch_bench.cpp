// Eager dispatch and jit call overhead: a chain of 8-element adds (each op waits on
// the previous result through its device stream), synchronised once per batch, so
// the figure is the amortised cost of one op issued and executed.
//
//   build/bench/dispatch_bench --benchmark_repetitions=5 --benchmark_min_time=0.2
//       --benchmark_report_aggregates_only=true
//
// Reference in the same run: the same loop as a plain C++ add of 8 floats (the
// floor), for scale. PyTorch 1.13 from Debian measures ~1.1 us per 8-element add on
// this machine (torch.add in a Python loop), which is the comparison point.
#include <benchmark/benchmark.h>

#include <vector>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kBatch = 256;

Mesh mesh_of(int n) { return make_mesh({n}, {"x"}); }

void BM_EagerAdd(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = mesh_of(n);
  MeshScope scope(mesh);
  Array x = device_put(ones({8}), P());
  Array y = device_put(zeros({8}), P());
  for (int i = 0; i < 10; ++i) y = add(y, x);  // warm the executable cache
  y.block_until_ready();
  for (auto _ : st) {
    for (int i = 0; i < kBatch; ++i) y = add(y, x);
    y.block_until_ready();
  }
  st.SetItemsProcessed(st.iterations() * kBatch);  // 1 / items_per_second = time per op
}
BENCHMARK(BM_EagerAdd)->Arg(1)->Arg(8)->UseRealTime();

void BM_JitTrivial(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = mesh_of(n);
  MeshScope scope(mesh);
  auto f = jit([](const Array& a, const Array& b) { return a + b; });
  Array x = device_put(ones({8}), P());
  Array y = device_put(zeros({8}), P());
  for (int i = 0; i < 10; ++i) y = f(y, x);
  y.block_until_ready();
  for (auto _ : st) {
    for (int i = 0; i < kBatch; ++i) y = f(y, x);
    y.block_until_ready();
  }
  st.SetItemsProcessed(st.iterations() * kBatch);
}
BENCHMARK(BM_JitTrivial)->Arg(1)->Arg(8)->UseRealTime();

void BM_PlainLoopAdd(benchmark::State& st) {
  std::vector<float> x(8, 1.f), y(8, 0.f);
  for (auto _ : st) {
    for (int i = 0; i < kBatch; ++i) {
      for (int k = 0; k < 8; ++k) y[k] += x[k];
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
  }
  st.SetItemsProcessed(st.iterations() * kBatch);
}
BENCHMARK(BM_PlainLoopAdd);

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
