// FFTs of complex64: a 1-D transform of 2^22 points on one device against KISS FFT's
// template called directly (the library the kernel runs), the real transform of 2^22
// float32 points, and a [64, 65536] batch of
// transforms on 1 device and over 8 devices, sharded along the batch (each device
// transforms its rows) or along the transformed dim (moved onto the batch by an
// all-to-all each way: the transpose method).
//
//   build/bench/fft_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <kissfft/kissfft.hh>

#include <complex>
#include <vector>

#include "tsr/fft.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t kN = int64_t{1} << 22;

void BM_KissDirect1D(benchmark::State& st) {
  kissfft<float> plan(kN, false);
  std::vector<std::complex<float>> in(kN), out(kN);
  for (int64_t i = 0; i < kN; ++i) in[i] = {std::sin(0.001f * i), std::cos(0.003f * i)};
  for (auto _ : st) {
    plan.transform(in.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_KissDirect1D)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Tessera1D(benchmark::State& st) {
  Device d = local_devices()[0];
  Array x = device_put(astype(random::normal(random::key(0), {kN}), complex64), d);
  auto f = jit([](const Array& a) { return fft::fft(a); });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_Tessera1D)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TesseraRfft1D(benchmark::State& st) {
  Device d = local_devices()[0];
  Array x = device_put(random::normal(random::key(2), {kN}), d);
  auto f = jit([](const Array& a) { return fft::rfft(a); });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_TesseraRfft1D)->Unit(benchmark::kMillisecond)->UseRealTime();

// range(0): devices; range(1): 0 = batch dim sharded, 1 = transformed dim sharded.
void BM_TesseraBatched(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  Array x0 = astype(random::normal(random::key(1), {64, 65536}), complex64);
  Array x;
  if (n == 1) {
    x = device_put(x0, local_devices()[0]);
  } else {
    Mesh m = make_mesh({n}, {"x"});
    x = device_put(x0, NamedSharding(m, st.range(1) ? P(nullptr, "x") : P("x")));
  }
  auto f = jit([](const Array& a) { return fft::fft(a); });
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_TesseraBatched)
    ->ArgNames({"devices", "sharded_fft_dim"})
    ->Args({1, 0})
    ->Args({8, 0})
    ->Args({8, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
