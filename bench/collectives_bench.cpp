// Collectives of the threads group on simulated CPU devices, against a plain memcpy
// of the same bytes measured in the same run. Ranks are persistent worker threads:
// the benchmark thread starts an iteration by signalling them and waits for all, so
// the figures include the wake-up cost a device stream would pay.
//
//   build/bench/collectives_bench --benchmark_repetitions=5 --benchmark_min_time=0.2
//       --benchmark_report_aggregates_only=true
//
// Size is the payload per rank: all_reduce reduces `size` bytes of float32 on every
// rank; all_gather produces `size` bytes on every rank (size / ranks from each).
#include <benchmark/benchmark.h>

#include "rank_pool.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tsr/comm/group.h"

namespace {

using tsr::DType;
using tsr::detail::GroupImpl;
using tsr::detail::ReduceOp;

using bench::RankPool;

// n buffers of `bytes`, touched so page faults stay out of the timing.
std::vector<std::vector<char>> buffers(int n, int64_t bytes, char fill) {
  return std::vector<std::vector<char>>(n, std::vector<char>(bytes, fill));
}

void BM_AllReduceSumF32(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int n = static_cast<int>(state.range(1));
  auto group = tsr::detail::make_threads_group(n);
  auto in = buffers(n, bytes, 1), out = buffers(n, bytes, 0);
  RankPool pool(n, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), bytes / 4, DType::Float32, ReduceOp::Sum);
  });
  for (auto _ : state) pool.run_once();
  state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_AllGather(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int n = static_cast<int>(state.range(1));
  const int64_t piece = bytes / n / 4 * 4;
  auto group = tsr::detail::make_threads_group(n);
  auto in = buffers(n, piece, 1), out = buffers(n, piece * n, 0);
  RankPool pool(n, [&](int r) {
    group->all_gather(r, in[r].data(), out[r].data(), piece / 4, DType::Float32);
  });
  for (auto _ : state) pool.run_once();
  state.SetBytesProcessed(state.iterations() * piece * n);
}

// The fixed cost: waking the ranks and one rendezvous, without data.
void BM_Barrier(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto group = tsr::detail::make_threads_group(n);
  RankPool pool(n, [&](int r) { group->barrier(r); });
  for (auto _ : state) pool.run_once();
}

// The harness alone: waking the ranks and waiting for them.
void BM_WakeRanks(benchmark::State& state) {
  RankPool pool(static_cast<int>(state.range(0)), [](int) {});
  for (auto _ : state) pool.run_once();
}

void BM_Memcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void sizes_and_ranks(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{4} << 10, int64_t{1} << 20, int64_t{64} << 20}) {
    for (int n : {2, 4, 8}) b->Args({bytes, n});
  }
  b->ArgNames({"bytes", "ranks"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Memcpy)
    ->Arg(4 << 10)
    ->Arg(1 << 20)
    ->Arg(64 << 20)
    ->ArgName("bytes")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WakeRanks)
    ->DenseRange(2, 8, 2)
    ->ArgName("ranks")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Barrier)
    ->DenseRange(2, 8, 2)
    ->ArgName("ranks")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllReduceSumF32)->Apply(sizes_and_ranks);
BENCHMARK(BM_AllGather)->Apply(sizes_and_ranks);

}  // namespace

BENCHMARK_MAIN();
