// The jitted forward pass of a 784 -> 1024 -> 1024 -> 10 relu MLP (batch 256,
// float32; examples/mlp.h) on 1 simulated device and with the batch sharded over 8
// (weights replicated: every device multiplies its 32 rows by the whole weights).
// BM_GemmFloor runs the forward's three GEMMs as direct OpenBLAS calls with 2
// threads. At the end the program prints the in-run ratio 8 devices / 1 device
// (medians when repetitions are asked for), the figure issue 14 item 5 targets.
// small_gemm:0 forces every GEMM to OpenBLAS (the code before small_gemm), so one
// run on this shared machine compares both.
//
//   build/bench/sharded_mlp_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "../examples/mlp.h"
#include "openblas_calls.h"
#include "tsr/backends/cpu/small_gemm_mode.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

// CPU seconds of every thread of the process: with devices outnumbering cores, the
// work done, which other load on a shared machine inflates less than wall time.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

constexpr int kBatch = 256;
const mlp::Sizes kSizes{};

double forward_flops() {
  double b = kBatch, i = kSizes.in, h1 = kSizes.h1, h2 = kSizes.h2, c = kSizes.classes;
  return 2 * b * (i * h1 + h1 * h2 + h2 * c);
}

void BM_MlpForward(benchmark::State& st) {
  using tsr::detail::cpu::SmallGemmMode;
  int n = static_cast<int>(st.range(0));
  tsr::detail::cpu::set_small_gemm_mode(st.range(1) ? SmallGemmMode::Auto : SmallGemmMode::Never);
  Mesh mesh = make_mesh({n}, {"data"});
  MeshScope scope(mesh);
  mlp::Params p = mlp::init_params(kSizes, 0, P());
  Array x = device_put(random::normal(random::key(1), {kBatch, kSizes.in}), P("data"));
  auto f = jit([](const mlp::Params& q, const Array& a) { return mlp::forward(q, a); });
  for (int i = 0; i < 3; ++i) f(p, x).block_until_ready();  // trace, lower, allocator
  double cpu0 = process_cpu_seconds();
  for (auto _ : st) f(p, x).block_until_ready();
  st.counters["cpu_ms"] =
      benchmark::Counter(1e3 * (process_cpu_seconds() - cpu0), benchmark::Counter::kAvgIterations);
  tsr::detail::cpu::set_small_gemm_mode(SmallGemmMode::Auto);
  st.counters["GFLOPS"] = benchmark::Counter(
      forward_flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MlpForward)
    ->ArgNames({"devices", "small_gemm"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({8, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The forward's GEMMs alone (no bias, no relu): the time a forward cannot beat
// with OpenBLAS on this machine.
void BM_GemmFloor(benchmark::State& st) {
  const int b = kBatch, i = static_cast<int>(kSizes.in), h1 = static_cast<int>(kSizes.h1),
            h2 = static_cast<int>(kSizes.h2), c = static_cast<int>(kSizes.classes);
  std::vector<float> x(b * i, 0.5f), w1(i * h1, 0.01f), w2(h1 * h2, 0.01f), w3(h2 * c, 0.01f);
  std::vector<float> a1(b * h1), a2(b * h2), lo(b * c);
  openblas_set_num_threads(2);
  for (auto _ : st) {
    cblas_sgemm(101, 111, 111, b, h1, i, 1.f, x.data(), i, w1.data(), h1, 0.f, a1.data(), h1);
    cblas_sgemm(101, 111, 111, b, h2, h1, 1.f, a1.data(), h1, w2.data(), h2, 0.f, a2.data(), h2);
    cblas_sgemm(101, 111, 111, b, c, h2, 1.f, a2.data(), h2, w3.data(), c, 0.f, lo.data(), c);
    benchmark::DoNotOptimize(lo.data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(
      forward_flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GemmFloor)->Unit(benchmark::kMillisecond)->UseRealTime();

// The console reporter, remembering each run's real time (the median when the
// runs are aggregated) so main can print the ratio measured in this run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Iteration || median)
        times_[r.run_name.function_name + "/" + r.run_name.args] = r.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void print_ratio() const {
    auto one = times_.find("BM_MlpForward/devices:1/small_gemm:1");
    if (one == times_.end()) return;
    for (const char* v : {"1", "0"}) {
      auto eight = times_.find(std::string("BM_MlpForward/devices:8/small_gemm:") + v);
      if (eight != times_.end())
        std::printf("MLP forward, 8 devices (small_gemm:%s) / 1 device: %.3fx\n", v,
                    eight->second / one->second);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratio();
  benchmark::Shutdown();
  return 0;
}
