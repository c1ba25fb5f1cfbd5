// Collectives through the API against the raw threads Group call of the same bytes,
// in one run, on 8 simulated devices with 64 MiB of float32 per device:
//
// - BM_UnreducedToReplicated: reshard(u, P()) of an unreduced value vs all_reduce.
// - BM_DevicePutUnreducedToReplicated: the same through device_put vs all_reduce.
// - BM_SumShardedDim: sum over a dim sharded 8 ways (local block 1 x 16M) vs all_reduce.
// - BM_SumShardedDim4: the same with 4 local rows (16 MiB result) vs local sum + all_reduce
//   done by hand (the one-pass floor is not reachable there without a fused collective).
// - BM_UnreducedToSharded: reshard(u, P('x')) vs reduce_scatter.
// - BM_ShardedToReplicated: reshard(x, P()) from P('x') vs all_gather.
// - BM_ShardedToOtherDim: reshard(x, P(None, 'x')) from P('x') (the exchange) vs all_to_all.
//
// Each iteration runs the API call and the raw call (alternating which goes first), then
// 8 memcpys of 64 MiB on one thread (the reference the figures use), so noise
// hits all three alike. The iteration time is the API call's; counters give the others
// and the in-run ratios (x_raw = API / raw, x_memcpy8 = API / 8 memcpys).
//
//   build/bench/reshard_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "rank_pool.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kDevices = 8;
constexpr int64_t kFloats = int64_t{16} << 20;  // 64 MiB of float32 per device
using bench::RankPool;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Times api(), raw() and 8 memcpys of 64 MiB per iteration; reports the API's time.
void paired(benchmark::State& st, const std::function<void()>& api,
            const std::function<void()>& raw) {
  std::vector<char> src(kFloats * 4, 1), dst(kFloats * 4, 0);
  api();  // warm: plans, caches, allocator
  raw();
  double t_api = 0, t_raw = 0, t_copy = 0;
  bool api_first = true;
  auto timed = [](const std::function<void()>& f) {
    auto t0 = Clock::now();
    f();
    return seconds(t0, Clock::now());
  };
  for (auto _ : st) {
    // The call right after the memcpys pays for their dirty cache lines (measured:
    // 5-10%), so the API and the raw call take turns going first.
    double a = 0, r = 0;
    if (api_first) {
      a = timed(api);
      r = timed(raw);
    } else {
      r = timed(raw);
      a = timed(api);
    }
    api_first = !api_first;
    t_copy += timed([&] {
      for (int k = 0; k < kDevices; ++k) {
        std::memcpy(dst.data(), src.data(), src.size());
        benchmark::ClobberMemory();
      }
    });
    st.SetIterationTime(a);
    t_api += a;
    t_raw += r;
  }
  double n = static_cast<double>(st.iterations());
  st.counters["raw_ms"] = t_raw / n * 1e3;
  st.counters["memcpy8_ms"] = t_copy / n * 1e3;
  st.counters["x_raw"] = t_api / t_raw;
  st.counters["x_memcpy8"] = t_api / t_copy;
}

std::vector<std::vector<float>> buffers(int64_t count, float fill) {
  return std::vector<std::vector<float>>(kDevices, std::vector<float>(count, fill));
}

void check(benchmark::State& st, const Array& y, float want) {
  auto v = y.addressable_shards()[kDevices - 1].data->to_vector<float>();
  if (v.empty() || v.front() != want || v.back() != want)
    st.SkipWithError("the API's result is wrong");
}

void BM_UnreducedToReplicated(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array u = reshard(ones({kFloats}), P(Unreduced{{"x"}}));
  check(st, reshard(u, P()), 1.f);
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), out = buffers(kFloats, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), kFloats, DType::Float32,
                      detail::ReduceOp::Sum);
  });
  paired(
      st, [&] { reshard(u, P()).block_until_ready(); }, [&] { pool.run_once(); });
}

// The same through device_put (the eager path outside the lowering, detail::reshard_to).
void BM_DevicePutUnreducedToReplicated(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array u = reshard(ones({kFloats}), P(Unreduced{{"x"}}));
  NamedSharding to(mesh, P());
  check(st, device_put(u, to), 1.f);
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), out = buffers(kFloats, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), kFloats, DType::Float32,
                      detail::ReduceOp::Sum);
  });
  paired(
      st, [&] { device_put(u, to).block_until_ready(); }, [&] { pool.run_once(); });
}

void BM_SumShardedDim(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(ones({kDevices, kFloats}), P("x"));
  check(st, sum(x, 0), static_cast<float>(kDevices));
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), out = buffers(kFloats, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), kFloats, DType::Float32,
                      detail::ReduceOp::Sum);
  });
  paired(
      st, [&] { sum(x, 0).block_until_ready(); }, [&] { pool.run_once(); });
}

void BM_SumShardedDim4(benchmark::State& st) {
  constexpr int64_t kRows = 4, kCols = kFloats / kRows;
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(ones({kDevices * kRows, kCols}), P("x"));
  check(st, sum(x, 0), static_cast<float>(kDevices * kRows));
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), part = buffers(kCols, 0.f), out = buffers(kCols, 0.f);
  RankPool pool(kDevices, [&](int r) {
    // The hand-written floor: one pass over the local rows, then the all_reduce.
    float* p = part[r].data();
    const float* a = in[r].data();
    std::memcpy(p, a, kCols * 4);
    for (int64_t i = 1; i < kRows; ++i)
      for (int64_t j = 0; j < kCols; ++j) p[j] += a[i * kCols + j];
    group->all_reduce(r, p, out[r].data(), kCols, DType::Float32, detail::ReduceOp::Sum);
  });
  paired(
      st, [&] { sum(x, 0).block_until_ready(); }, [&] { pool.run_once(); });
}

void BM_UnreducedToSharded(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array u = reshard(ones({kFloats}), P(Unreduced{{"x"}}));
  check(st, reshard(u, P("x")), 1.f);
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), out = buffers(kFloats / kDevices, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->reduce_scatter(r, in[r].data(), out[r].data(), kFloats / kDevices, DType::Float32,
                          detail::ReduceOp::Sum);
  });
  paired(
      st, [&] { reshard(u, P("x")).block_until_ready(); }, [&] { pool.run_once(); });
}

void BM_ShardedToReplicated(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(ones({kFloats}), P("x"));
  check(st, reshard(x, P()), 1.f);
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats / kDevices, 1.f), out = buffers(kFloats, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->all_gather(r, in[r].data(), out[r].data(), kFloats / kDevices, DType::Float32);
  });
  paired(
      st, [&] { reshard(x, P()).block_until_ready(); }, [&] { pool.run_once(); });
}

// An exchange: P('x') -> P(None, 'x') of a [16384, 8192] array (64 MiB blocks) is an
// all-to-all; the raw all_to_all moves the same blocks without the layout change.
void BM_ShardedToOtherDim(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(ones({16384, 8192}), P("x"));
  check(st, reshard(x, P(nullptr, "x")), 1.f);
  auto group = detail::make_threads_group(kDevices);
  auto in = buffers(kFloats, 1.f), out = buffers(kFloats, 0.f);
  RankPool pool(kDevices, [&](int r) {
    group->all_to_all(r, in[r].data(), out[r].data(), kFloats / kDevices, DType::Float32);
  });
  paired(
      st, [&] { reshard(x, P(nullptr, "x")).block_until_ready(); }, [&] { pool.run_once(); });
}

#define TSR_PAIRED(fn) BENCHMARK(fn)->Unit(benchmark::kMillisecond)->UseManualTime()
TSR_PAIRED(BM_UnreducedToReplicated);
TSR_PAIRED(BM_DevicePutUnreducedToReplicated);
TSR_PAIRED(BM_SumShardedDim);
TSR_PAIRED(BM_SumShardedDim4);
TSR_PAIRED(BM_UnreducedToSharded);
TSR_PAIRED(BM_ShardedToReplicated);
TSR_PAIRED(BM_ShardedToOtherDim);

}  // namespace

BENCHMARK_MAIN();
