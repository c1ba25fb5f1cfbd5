// Vectorised math: eager elementwise transcendentals over 16 M float32 and a 4 MiB
// float32 sum, on 1 device, against plain C++ loops in the same run. NumPy's side
// is bench/math_numpy.py (same inputs); run it before and after this program.
//
//   /usr/bin/python3 bench/math_numpy.py --repetitions 5
//   build/bench/math_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   /usr/bin/python3 bench/math_numpy.py --repetitions 5
//
// The `vs_loop` / `vs_lanes` counters of BM_TsrSum are Tessera's time over a plain
// float loop's / a 16-accumulator loop's, timed in the same iterations
// (interleaved, so machine noise hits all three).
// TSR_CPU_ISA=baseline forces the SSE2 kernels.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "tsr/backends/cpu/vecmath.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t kN = int64_t{1} << 24;     // 16 M floats
constexpr int64_t kSumN = int64_t{1} << 20;  // 4 MiB of floats
constexpr double kStep2 = 0.7548776662466927;

// x[i] in [lo, hi), spread by the golden ratio (bench/math_numpy.py makes the same).
// A second operand uses another step, so that the two are not in lockstep.
std::vector<float> inputs(int64_t n, double lo, double hi, double step = 0.6180339887498949) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    double f = static_cast<double>(i) * step;
    v[i] = static_cast<float>(lo + (hi - lo) * (f - std::floor(f)));
  }
  return v;
}

struct OneDevice {
  Mesh mesh = make_mesh({1}, {"x"});
  MeshScope scope{mesh};
};

Array put(const std::vector<float>& v) { return device_put(array(v, {int64_t(v.size())}), P()); }

void BM_LoopTanhLibm(benchmark::State& st) {
  auto x = inputs(kN, -4, 4);
  std::vector<float> y(kN);
  for (auto _ : st) {
    for (int64_t i = 0; i < kN; ++i) y[i] = std::tanh(x[i]);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
}
BENCHMARK(BM_LoopTanhLibm)->Unit(benchmark::kMillisecond)->UseRealTime();

// The tanh kernel alone on the calling thread (no dispatch, no second core): the
// per-core figure to hold against NumPy's single thread.
void BM_KernelTanh1Thread(benchmark::State& st) {
  auto x = inputs(kN, -4, 4);
  std::vector<float> y(kN);
  auto k = detail::cpu::vecmath().unary_f32[static_cast<size_t>(prim::UnaryOp::Tanh)];
  for (auto _ : st) {
    k(x.data(), y.data(), kN);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN);
  st.SetLabel(detail::cpu::cpu_isa_name(detail::cpu::cpu_isa()));
}
BENCHMARK(BM_KernelTanh1Thread)->Unit(benchmark::kMillisecond)->UseRealTime();

template <Array (*F)(const Array&)>
void unary_bench(benchmark::State& st, double lo, double hi) {
  OneDevice d;
  Array x = put(inputs(kN, lo, hi));
  F(x).block_until_ready();
  for (auto _ : st) F(x).block_until_ready();
  st.SetItemsProcessed(st.iterations() * kN);
}

Array tanh_chain(const Array& x) { return tanh(x * 2.0 + 1.0); }

#define TSR_UNARY_BENCH(name, fn, lo, hi)                                  \
  void BM_Tsr##name(benchmark::State& st) { unary_bench<fn>(st, lo, hi); } \
  BENCHMARK(BM_Tsr##name)->Unit(benchmark::kMillisecond)->UseRealTime()

TSR_UNARY_BENCH(Tanh, tsr::tanh, -4, 4);
TSR_UNARY_BENCH(TanhChain, tanh_chain, -4, 4);
TSR_UNARY_BENCH(Exp, tsr::exp, -10, 10);
TSR_UNARY_BENCH(Log, tsr::log, 0.01, 100);
TSR_UNARY_BENCH(Log1p, tsr::log1p, -0.5, 100);
TSR_UNARY_BENCH(Expm1, tsr::expm1, -10, 10);
TSR_UNARY_BENCH(Logistic, tsr::logistic, -10, 10);
TSR_UNARY_BENCH(Erf, tsr::erf, -4, 4);
TSR_UNARY_BENCH(ErfInv, tsr::erfinv, -0.999, 0.999);
TSR_UNARY_BENCH(Sin, tsr::sin, -100, 100);
TSR_UNARY_BENCH(Cos, tsr::cos, -100, 100);
TSR_UNARY_BENCH(Tan, tsr::tan, -100, 100);

void BM_TsrPow(benchmark::State& st) {
  OneDevice d;
  Array x = put(inputs(kN, 0.01, 10)), y = put(inputs(kN, -4, 4, kStep2));
  power(x, y).block_until_ready();
  for (auto _ : st) power(x, y).block_until_ready();
  st.SetItemsProcessed(st.iterations() * kN);
}
BENCHMARK(BM_TsrPow)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrAtan2(benchmark::State& st) {
  OneDevice d;
  Array y = put(inputs(kN, -10, 10)), x = put(inputs(kN, -10, 10, kStep2));
  atan2(y, x).block_until_ready();
  for (auto _ : st) atan2(y, x).block_until_ready();
  st.SetItemsProcessed(st.iterations() * kN);
}
BENCHMARK(BM_TsrAtan2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The reference sum: one float accumulator, as a plain loop is written (GCC keeps
// it sequential: reassociating float adds needs -ffast-math).
float plain_sum(const std::vector<float>& v) {
  float s = 0;
  for (float f : v) s += f;
  return s;
}

// A loop written to vectorise: 16 independent float accumulators (4 SSE2 vectors),
// as -ffast-math would reassociate the plain loop. Its error grows as n / 16.
float lanes_sum(const std::vector<float>& v) {
  float acc[16] = {};
  size_t i = 0;
  for (; i + 16 <= v.size(); i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += v[i + j];
  float s = 0;
  for (float a : acc) s += a;
  for (; i < v.size(); ++i) s += v[i];
  return s;
}

void BM_LoopSum(benchmark::State& st) {
  auto v = inputs(kSumN, -1, 1);
  for (auto _ : st) benchmark::DoNotOptimize(plain_sum(v));
  st.SetBytesProcessed(st.iterations() * kSumN * 4);
}
BENCHMARK(BM_LoopSum)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LoopSumLanes(benchmark::State& st) {
  auto v = inputs(kSumN, -1, 1);
  for (auto _ : st) benchmark::DoNotOptimize(lanes_sum(v));
  st.SetBytesProcessed(st.iterations() * kSumN * 4);
}
BENCHMARK(BM_LoopSumLanes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Tessera's sum, with both loops timed in the same iterations for `vs_loop` and
// `vs_lanes`; each iteration runs 8 of each (the time shown is for 8 sums).
void BM_TsrSum(benchmark::State& st) {
  OneDevice d;
  auto v = inputs(kSumN, -1, 1);
  Array x = put(v);
  sum(x).block_until_ready();
  using Clock = std::chrono::steady_clock;
  double tsr_s = 0, loop_s = 0, lanes_s = 0;
  constexpr int kBatch = 8;  // calls back to back, as the device thread expects them
  for (auto _ : st) {
    auto t0 = Clock::now();
    for (int r = 0; r < kBatch; ++r) sum(x).block_until_ready();
    auto t1 = Clock::now();
    for (int r = 0; r < kBatch; ++r) benchmark::DoNotOptimize(plain_sum(v));
    auto t2 = Clock::now();
    for (int r = 0; r < kBatch; ++r) benchmark::DoNotOptimize(lanes_sum(v));
    auto t3 = Clock::now();
    tsr_s += std::chrono::duration<double>(t1 - t0).count();
    loop_s += std::chrono::duration<double>(t2 - t1).count();
    lanes_s += std::chrono::duration<double>(t3 - t2).count();
    st.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  st.counters["vs_loop"] = tsr_s / loop_s;
  st.counters["vs_lanes"] = tsr_s / lanes_s;
  st.SetBytesProcessed(st.iterations() * kBatch * kSumN * 4);
}
BENCHMARK(BM_TsrSum)->Unit(benchmark::kMicrosecond)->UseManualTime();

// The sum kernel alone on the calling thread, with both loops timed in the same
// iterations: the kernel's speed without the eager dispatch to the device thread
// (whose wake-up dominates BM_TsrSum on a loaded machine).
void BM_KernelSum1Thread(benchmark::State& st) {
  auto v = inputs(kSumN, -1, 1);
  auto k = detail::cpu::vecmath().sum_f32;
  using Clock = std::chrono::steady_clock;
  double k_s = 0, loop_s = 0, lanes_s = 0;
  for (auto _ : st) {
    auto t0 = Clock::now();
    benchmark::DoNotOptimize(k(v.data(), kSumN));
    auto t1 = Clock::now();
    benchmark::DoNotOptimize(plain_sum(v));
    auto t2 = Clock::now();
    benchmark::DoNotOptimize(lanes_sum(v));
    auto t3 = Clock::now();
    k_s += std::chrono::duration<double>(t1 - t0).count();
    loop_s += std::chrono::duration<double>(t2 - t1).count();
    lanes_s += std::chrono::duration<double>(t3 - t2).count();
    st.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  st.counters["vs_loop"] = k_s / loop_s;
  st.counters["vs_lanes"] = k_s / lanes_s;
  st.SetBytesProcessed(st.iterations() * kSumN * 4);
  st.SetLabel(detail::cpu::cpu_isa_name(detail::cpu::cpu_isa()));
}
BENCHMARK(BM_KernelSum1Thread)->Unit(benchmark::kMicrosecond)->UseManualTime();

// Row sums of a [1024, 1024] float32 matrix over axis 0 (a strided reduced dim).
void BM_TsrSumAxis0(benchmark::State& st) {
  OneDevice d;
  Array x = device_put(array(inputs(kSumN, -1, 1), {1024, 1024}), P());
  sum(x, 0).block_until_ready();
  for (auto _ : st) sum(x, 0).block_until_ready();
  st.SetBytesProcessed(st.iterations() * kSumN * 4);
}
BENCHMARK(BM_TsrSumAxis0)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TsrMax(benchmark::State& st) {
  OneDevice d;
  Array x = put(inputs(kSumN, -1, 1));
  max(x).block_until_ready();
  for (auto _ : st) max(x).block_until_ready();
  st.SetBytesProcessed(st.iterations() * kSumN * 4);
}
BENCHMARK(BM_TsrMax)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
