// Decompositions of 2048x2048 float32 on one device (tsr::linalg, eager and jit) against
// LAPACK called directly (LAPACKE over OpenBLAS, 2 threads) on a copy of the same matrix,
// in the same run; and a batch of 4096 8x8 Cholesky factorizations sharded over 1, 2
// and 8 devices.
//
//   build/bench/linalg_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
//
// The reference copies its input first (LAPACK overwrites it; the library never
// touches its input), so both sides do the same work. tsr's cholesky is timed with
// symmetrize_input=false, the primitive alone, and with JAX's default (a + a^T) / 2.
#include <benchmark/benchmark.h>
#include <lapacke.h>

#include <cstring>
#include <vector>

#include "openblas_calls.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kN = 2048;

// A symmetric positive definite matrix: a a^T / n + I for a in [-1, 1).
std::vector<float> spd_host() {
  std::vector<float> a(static_cast<size_t>(kN) * kN), s(a.size());
  uint32_t r = 12345;
  for (auto& v : a) {
    r = r * 1664525u + 1013904223u;
    v = static_cast<float>(r >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  openblas_set_num_threads(2);
  cblas_sgemm(101, 111, 112, kN, kN, kN, 1.0f / kN, a.data(), kN, a.data(), kN, 0.f, s.data(), kN);
  for (int i = 0; i < kN; ++i) s[static_cast<size_t>(i) * kN + i] += 1.0f;
  return s;
}
const std::vector<float>& spd() {
  static const std::vector<float> s = spd_host();
  return s;
}

void BM_LapackPotrf(benchmark::State& st) {
  std::vector<float> w(spd().size());
  openblas_set_num_threads(2);
  for (auto _ : st) {
    std::memcpy(w.data(), spd().data(), w.size() * sizeof(float));
    LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', kN, w.data(), kN);
    benchmark::DoNotOptimize(w.data());
  }
}
BENCHMARK(BM_LapackPotrf)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrCholesky(benchmark::State& st) {
  const bool symmetrize = st.range(0) != 0;
  Array a = array<float>(spd(), {kN, kN});
  linalg::cholesky(a, false, symmetrize).block_until_ready();
  for (auto _ : st) linalg::cholesky(a, false, symmetrize).block_until_ready();
}
BENCHMARK(BM_TsrCholesky)
    ->ArgName("symmetrize")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LapackGesdd(benchmark::State& st) {
  std::vector<float> w(spd().size()), s(kN), u(spd().size()), vt(spd().size());
  openblas_set_num_threads(2);
  for (auto _ : st) {
    std::memcpy(w.data(), spd().data(), w.size() * sizeof(float));
    LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'S', kN, kN, w.data(), kN, s.data(), u.data(), kN, vt.data(),
                   kN);
    benchmark::DoNotOptimize(s.data());
  }
}
BENCHMARK(BM_LapackGesdd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrSvd(benchmark::State& st) {
  Array a = array<float>(spd(), {kN, kN});
  linalg::svd(a, false).S.block_until_ready();
  for (auto _ : st) {
    auto r = linalg::svd(a, false);
    r.U.block_until_ready();
    r.Vh.block_until_ready();
  }
}
BENCHMARK(BM_TsrSvd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LapackGesddValues(benchmark::State& st) {
  std::vector<float> w(spd().size()), s(kN);
  float dummy = 0;
  openblas_set_num_threads(2);
  for (auto _ : st) {
    std::memcpy(w.data(), spd().data(), w.size() * sizeof(float));
    LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'N', kN, kN, w.data(), kN, s.data(), &dummy, 1, &dummy, 1);
    benchmark::DoNotOptimize(s.data());
  }
}
BENCHMARK(BM_LapackGesddValues)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TsrSvdvals(benchmark::State& st) {
  Array a = array<float>(spd(), {kN, kN});
  linalg::svdvals(a).block_until_ready();
  for (auto _ : st) linalg::svdvals(a).block_until_ready();
}
BENCHMARK(BM_TsrSvdvals)->Unit(benchmark::kMillisecond)->UseRealTime();

// 4096 small factorizations: the batch sharded over n devices.
void BM_TsrBatchedCholesky(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"x"});
  MeshScope scope(mesh);
  Array e = eye(8, -1, 0, float32);
  Array a = device_put(add(multiply(broadcast_to(e, {4096, 8, 8}), 4.0), 0.5), P("x"));
  auto f = jit([](const Array& x) { return linalg::cholesky(x, false, false); });
  f(a).block_until_ready();
  for (auto _ : st) f(a).block_until_ready();
}
BENCHMARK(BM_TsrBatchedCholesky)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(2)
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
