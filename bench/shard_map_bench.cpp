// shard_map and its collectives against the bare comm Group, in one run:
//
// - BM_ShardMapPsum / BM_GroupAllReduce: psum of a 64 MiB float32 block per device
//   inside jit(shard_map) on 8 devices, against the threads Group's all_reduce of the
//   same bytes on 8 persistent rank threads. Goal: <= 1.1x (shard_map adds no copies:
//   the body's input is the argument's buffer and psum reduces into the output).
// - BM_RingMatmul / BM_GatherMatmul: C = A @ B for 4096x4096 float32 with A and B
//   row-sharded over 8 devices: a collective matmul (each step multiplies the B
//   block it holds and passes it on with ppermute) against all_gather of B then one
//   local matmul. Reported, no goal: on 2 cores there is no compute/communication
//   overlap to win, and the ring makes 8 smaller GEMMs.
// - BM_PmapStep / BM_ShardMapStep / BM_JitShardMapStep / BM_JitStep: the per-call cost
//   of a trivial body on 8 devices (pmap retraces f every call; shard_map eager traces
//   the body each call; jit caches).
//
//   build/bench/shard_map_bench --benchmark_repetitions=5 --benchmark_min_time=0.5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "rank_pool.h"

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kDevices = 8;
constexpr int64_t kFloats = int64_t{16} << 20;  // 64 MiB of float32 per device

void BM_ShardMapPsum(benchmark::State& st) {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(ones({kDevices * kFloats}), P("x"));
  auto f = jit(shard_map([](const Array& b) { return psum(b, "x"); },
                         {.in_specs = P("x"), .out_specs = P()}));
  f(x).block_until_ready();
  for (auto _ : st) f(x).block_until_ready();
  st.SetBytesProcessed(st.iterations() * kFloats * 4);
}
BENCHMARK(BM_ShardMapPsum)->Unit(benchmark::kMillisecond)->UseRealTime();

using bench::RankPool;

void BM_GroupAllReduce(benchmark::State& st) {
  auto group = detail::make_threads_group(kDevices);
  std::vector<std::vector<float>> in(kDevices, std::vector<float>(kFloats, 1.0f));
  std::vector<std::vector<float>> out(kDevices, std::vector<float>(kFloats, 0.0f));
  RankPool pool(kDevices, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), kFloats, DType::Float32,
                      detail::ReduceOp::Sum);
  });
  for (auto _ : st) pool.run_once();
  st.SetBytesProcessed(st.iterations() * kFloats * 4);
}
BENCHMARK(BM_GroupAllReduce)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kN = 4096, kBlock = kN / kDevices;

struct Operands {
  Mesh mesh = make_mesh({kDevices}, {"x"});
  Array a, b;
  Operands() {
    MeshScope scope(mesh);
    Array k = random::key(0);
    a = device_put(random::normal(random::fold_in(k, 1), {kN, kN}), P("x"));
    b = device_put(random::normal(random::fold_in(k, 2), {kN, kN}), P("x"));
  }
};

// Device k holds B block (k + s) mod 8 at step s: it multiplies the matching columns
// of its A rows, then passes the block to device k - 1.
Array ring_body(const Array& a, const Array& b0) {
  Array k = axis_index("x");
  std::vector<std::pair<int, int>> to_prev;
  for (int i = 0; i < kDevices; ++i) to_prev.emplace_back(i, (i + kDevices - 1) % kDevices);
  Array b = b0;
  Array acc;
  for (int s = 0; s < kDevices; ++s) {
    Array j = remainder(k + s, kDevices) * static_cast<int32_t>(kBlock);
    Array part = matmul(dynamic_slice(a, {0, j}, {kBlock, kBlock}), b);
    acc = s == 0 ? part : acc + part;
    if (s + 1 < kDevices) b = ppermute(b, "x", to_prev);
  }
  return acc;
}

void BM_RingMatmul(benchmark::State& st) {
  Operands o;
  MeshScope scope(o.mesh);
  auto f = jit(shard_map(ring_body, {.in_specs = P("x"), .out_specs = P("x")}));
  Array c = f(o.a, o.b);
  Array want = matmul(o.a, reshard(o.b, P()));
  if (!allclose(c, want, 1e-3, 1e-2).item<bool>())
    st.SkipWithError("the ring's product differs from matmul");
  for (auto _ : st) f(o.a, o.b).block_until_ready();
}
BENCHMARK(BM_RingMatmul)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GatherMatmul(benchmark::State& st) {
  Operands o;
  MeshScope scope(o.mesh);
  auto f = jit(shard_map(
      [](const Array& a, const Array& b) { return matmul(a, all_gather(b, "x", {.tiled = true})); },
      {.in_specs = P("x"), .out_specs = P("x")}));
  f(o.a, o.b).block_until_ready();
  for (auto _ : st) f(o.a, o.b).block_until_ready();
}
BENCHMARK(BM_GatherMatmul)->Unit(benchmark::kMillisecond)->UseRealTime();

// Step overhead with a trivial body (x * 2 on 8 floats per device), 8 devices: pmap,
// eager shard_map, jit(shard_map) and jit of the same global op. The inputs already
// live on the devices with the layout each call wants (no moves in the loop).
constexpr int64_t kSmall = 8;

void BM_PmapStep(benchmark::State& st) {
  auto f = pmap([](const Array& r) { return r * 2.f; }, {.axis_name = "i"});
  Array x = f(ones({kDevices, kSmall}));
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_PmapStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ShardMapStep(benchmark::State& st) {
  MeshScope scope(make_mesh({kDevices}, {"i"}));
  Array x = device_put(ones({kDevices, kSmall}), P("i"));
  auto f =
      shard_map([](const Array& b) { return b * 2.f; }, {.in_specs = P("i"), .out_specs = P("i")});
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_ShardMapStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_JitShardMapStep(benchmark::State& st) {
  MeshScope scope(make_mesh({kDevices}, {"i"}));
  Array x = device_put(ones({kDevices, kSmall}), P("i"));
  auto f = jit(
      shard_map([](const Array& b) { return b * 2.f; }, {.in_specs = P("i"), .out_specs = P("i")}));
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_JitShardMapStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_JitStep(benchmark::State& st) {
  MeshScope scope(make_mesh({kDevices}, {"i"}));
  Array x = device_put(ones({kDevices, kSmall}), P("i"));
  auto f = jit([](const Array& a) { return a * 2.f; });
  for (auto _ : st) f(x).block_until_ready();
}
BENCHMARK(BM_JitStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
