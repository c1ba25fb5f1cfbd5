// Host transfers: device_put of a host vector onto 8 simulated devices (sharded and
// replicated) and to_vector back, against plain memcpys of the same bytes in the same
// run.
//
//   build/bench/device_put_bench --benchmark_repetitions=5 --benchmark_min_time=0.01
//       --benchmark_report_aggregates_only=true
//
// TSR_BENCH_PUT_MIB sets the array size (default 1024 MiB of float32). Each case
// reports `peak_MiB`: the high-water resident set (VmHWM, reset through
// /proc/self/clear_refs) above what the process held before the case built its host
// vector, i.e. host data + device buffers + any staging copy.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tsr/runtime/runtime.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

int64_t put_bytes() {
  const char* s = std::getenv("TSR_BENCH_PUT_MIB");
  int64_t mib = s ? std::atoll(s) : 1024;
  return (mib > 0 ? mib : 1024) << 20;
}

int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::atoll(line.c_str() + n);
  return 0;
}

// Drops every device's cached blocks (so a case starts from the same state whatever
// ran before it) and resets VmHWM to the current RSS; returns that RSS in KiB.
int64_t start_peak() {
  synchronize();
  auto& rt = detail::Runtime::get();
  for (int d = 0; d < rt.num_devices(); ++d) rt.allocator(d).clear_cache();
  std::ofstream("/proc/self/clear_refs") << "5";
  return status_kib("VmRSS:");
}

void report_peak(benchmark::State& st, int64_t base_kib) {
  st.counters["peak_MiB"] = static_cast<double>(status_kib("VmHWM:") - base_kib) / 1024.0;
}

std::vector<float> host_data(int64_t bytes) {
  std::vector<float> v(static_cast<size_t>(bytes / 4));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i & 1023);
  return v;
}

// `copies` memcpys of the host bytes into buffers allocated (and freed) each
// iteration: what a put into memory the allocator does not hold costs, page faults
// included.
void BM_MemcpyFresh(benchmark::State& st) {
  int copies = static_cast<int>(st.range(0));
  int64_t bytes = put_bytes();
  int64_t base = start_peak();
  auto src = host_data(bytes);
  for (auto _ : st) {
    std::vector<void*> dst(copies);
    for (auto& d : dst) {
      d = std::aligned_alloc(64, static_cast<size_t>(bytes));
      std::memcpy(d, src.data(), static_cast<size_t>(bytes));
      benchmark::DoNotOptimize(d);
    }
    for (void* d : dst) std::free(d);
  }
  st.SetBytesProcessed(st.iterations() * bytes * copies);
  report_peak(st, base);
}
BENCHMARK(BM_MemcpyFresh)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same memcpys into buffers allocated once: the bandwidth floor.
void BM_MemcpyWarm(benchmark::State& st) {
  int copies = static_cast<int>(st.range(0));
  int64_t bytes = put_bytes();
  int64_t base = start_peak();
  auto src = host_data(bytes);
  std::vector<std::vector<char>> dst(copies);
  for (auto& d : dst) d.resize(static_cast<size_t>(bytes));
  for (auto _ : st)
    for (auto& d : dst) {
      std::memcpy(d.data(), src.data(), static_cast<size_t>(bytes));
      benchmark::DoNotOptimize(d.data());
    }
  st.SetBytesProcessed(st.iterations() * bytes * copies);
  report_peak(st, base);
}
BENCHMARK(BM_MemcpyWarm)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// device_put of the host vector on 8 devices: range(0) = 1 sharded along x, 0
// replicated. A warm-up put first, so the allocator cache is in its steady state.
void BM_DevicePut(benchmark::State& st) {
  bool sharded = st.range(0) != 0;
  int64_t bytes = put_bytes();
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  PartitionSpec spec = sharded ? P("x") : P();
  int64_t base = start_peak();
  auto src = host_data(bytes);
  device_put(src, spec).block_until_ready();
  for (auto _ : st) device_put(src, spec).block_until_ready();
  st.SetBytesProcessed(st.iterations() * bytes * (sharded ? 1 : 8));
  report_peak(st, base);
}
BENCHMARK(BM_DevicePut)
    ->ArgName("sharded")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// to_vector of an array sharded 8 ways: range(0) = 0 as float32 (its dtype), 1 as
// float64 (a conversion on the way out).
void BM_ToVector(benchmark::State& st) {
  bool convert = st.range(0) != 0;
  int64_t bytes = put_bytes();
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  int64_t base = start_peak();
  Array x = device_put(host_data(bytes), P("x")).block_until_ready();
  for (auto _ : st) {
    if (convert)
      benchmark::DoNotOptimize(x.to_vector<double>().data());
    else
      benchmark::DoNotOptimize(x.to_vector<float>().data());
  }
  st.SetBytesProcessed(st.iterations() * bytes);
  report_peak(st, base);
}
BENCHMARK(BM_ToVector)
    ->ArgName("to_f64")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A small put (8 floats per device, sharded over 8): the fixed cost of the call.
void BM_DevicePutSmall(benchmark::State& st) {
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  std::vector<float> src(64, 1.f);
  for (auto _ : st) device_put(src, P("x")).block_until_ready();
}
BENCHMARK(BM_DevicePutSmall)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
