// A 1000-step fori_loop of x = x * 0.999 + 1 on 1024 floats, per iteration, in one run:
//
// - BM_ForiJit/{1,8}: jit(fori_loop) on 1 device and with x sharded over 8 devices
//   (the loop runs inside each device's task; goal: <= 2 us per iteration on 1 device).
// - BM_EagerLoop/{1,8}: the same loop written in C++ over eager ops (two dispatches per
//   iteration).
// - BM_PlainLoop: a C++ loop over a std::vector<float> (the floor).
//
// Times are per iteration (the benchmark's items are loop iterations).
//
//   build/bench/control_flow_bench --benchmark_repetitions=5 --benchmark_min_time=0.5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kSteps = 1000;
constexpr int64_t kN = 1024;

Array start(int devices) {
  Mesh m = make_mesh({devices}, {"x"});
  return device_put(ones({kN}), NamedSharding(m, P("x")));
}

void BM_ForiJit(benchmark::State& st) {
  Array x = start(static_cast<int>(st.range(0)));
  auto f = jit([](const Array& v) {
    return fori_loop(
        0, kSteps, [](const Array&, const Array& c) { return c * 0.999f + 1.0f; }, v);
  });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
  st.SetItemsProcessed(st.iterations() * kSteps);
  st.counters["per_iter"] = benchmark::Counter(
      static_cast<double>(st.iterations() * kSteps),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ForiJit)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EagerLoop(benchmark::State& st) {
  Array x = start(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    Array c = x;
    for (int i = 0; i < kSteps; ++i) c = c * 0.999f + 1.0f;
    c.block_until_ready();
  }
  st.SetItemsProcessed(st.iterations() * kSteps);
}
BENCHMARK(BM_EagerLoop)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PlainLoop(benchmark::State& st) {
  std::vector<float> v(kN, 1.0f);
  for (auto _ : st) {
    std::vector<float> c = v;
    for (int i = 0; i < kSteps; ++i)
      for (auto& e : c) e = e * 0.999f + 1.0f;
    benchmark::DoNotOptimize(c.data());
  }
  st.SetItemsProcessed(st.iterations() * kSteps);
}
BENCHMARK(BM_PlainLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
