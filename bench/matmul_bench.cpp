// 2048x2048 float32 matmul, sharded by rows over 1, 2 and 8 simulated devices,
// against one direct OpenBLAS sgemm call with 2 threads, in the same run.
//
//   build/bench/matmul_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
//
// The sharded case is x: f32[2048@x,2048] @ w: f32[2048,2048] -> f32[2048@x,2048]:
// every device multiplies its row block by the whole of w with no communication
// (each device's GEMM runs single-threaded when 2+ devices share the 2 cores).
#include <benchmark/benchmark.h>

#include <vector>

#include "openblas_calls.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kN = 2048;

void BM_OpenBLAS_2threads(benchmark::State& st) {
  std::vector<float> a(kN * kN, 0.5f), b(kN * kN, 0.25f), c(kN * kN);
  openblas_set_num_threads(2);
  for (auto _ : st) {
    cblas_sgemm(101, 111, 111, kN, kN, kN, 1.f, a.data(), kN, b.data(), kN, 0.f, c.data(), kN);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_OpenBLAS_2threads)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrMatmul(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(full({kN, kN}, 0.5), P("x", nullptr));
  Array w = device_put(full({kN, kN}, 0.25), P());
  matmul(x, w).block_until_ready();  // warm the executable cache and the allocator
  for (auto _ : st) matmul(x, w).block_until_ready();
  st.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_TsrMatmul)->Arg(1)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrMatmulJit(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(full({kN, kN}, 0.5), P("x", nullptr));
  Array w = device_put(full({kN, kN}, 0.25), P());
  auto f = jit([](const Array& a, const Array& b) { return matmul(a, b); });
  f(x, w).block_until_ready();
  for (auto _ : st) f(x, w).block_until_ready();
  st.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kN * kN * kN, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_TsrMatmulJit)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
