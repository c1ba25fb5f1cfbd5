// Embedding lookup (gather) and scatter-add of rows: a 65536 x 128 float32 table,
// 16384 int32 row indices, against a plain memcpy/add loop over the same rows in
// the same run.
//
//   build/bench/gather_bench --benchmark_repetitions=5 --benchmark_min_time=0.5
//       --benchmark_report_aggregates_only=true
//
// Sharded cases: the table's columns over 1, 2 or 8 devices (the gather rule keeps
// a full-slice dim sharded, so each device gathers its column block locally).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t kRows = 65536, kCols = 128, kIdx = 16384;

std::vector<int32_t> indices() {
  std::vector<int32_t> v(kIdx);
  uint32_t s = 12345;
  for (auto& i : v) {
    s = s * 1664525u + 1013904223u;
    i = static_cast<int32_t>(s % kRows);
  }
  return v;
}

void BM_MemcpyRows(benchmark::State& st) {
  std::vector<float> table(kRows * kCols, 1.f), out(kIdx * kCols);
  auto idx = indices();
  for (auto _ : st) {
    for (int64_t r = 0; r < kIdx; ++r)
      std::memcpy(&out[r * kCols], &table[idx[r] * kCols], kCols * sizeof(float));
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() * kIdx * kCols * 4);
}
BENCHMARK(BM_MemcpyRows)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TsrTake(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"x"});
  MeshScope scope(mesh);
  Array table = device_put(full({kRows, kCols}, 1.0), P(nullptr, "x"));
  Array idx = device_put(array(indices(), {kIdx}), P());
  take(table, idx, 0).block_until_ready();
  for (auto _ : st) take(table, idx, 0).block_until_ready();
  st.SetBytesProcessed(st.iterations() * kIdx * kCols * 4);
}
BENCHMARK(BM_TsrTake)->Arg(1)->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_AddRows(benchmark::State& st) {
  std::vector<float> table(kRows * kCols, 1.f), upd(kIdx * kCols, 0.5f);
  auto idx = indices();
  for (auto _ : st) {
    std::vector<float> out = table;  // .at[].add returns a new array
    for (int64_t r = 0; r < kIdx; ++r)
      for (int64_t c = 0; c < kCols; ++c) out[idx[r] * kCols + c] += upd[r * kCols + c];
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_AddRows)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TsrScatterAdd(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"x"});
  MeshScope scope(mesh);
  Array table = device_put(full({kRows, kCols}, 1.0), P(nullptr, "x"));
  Array idx = device_put(array(indices(), {kIdx}), P());
  Array upd = device_put(full({kIdx, kCols}, 0.5), P(nullptr, "x"));
  table.at(idx).add(upd).block_until_ready();
  for (auto _ : st) table.at(idx).add(upd).block_until_ready();
}
BENCHMARK(BM_TsrScatterAdd)->Arg(1)->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
