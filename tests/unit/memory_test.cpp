// Host transfers and device memory: device_put from host data on several meshes
// and dtypes (against the 1-device array and each shard's expected block),
// memory_stats / reset_peak_memory_stats / clear_caches, and that a put stages no
// copy of the whole array.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <tsr/memory.h>
#include <tsr/tsr.h>

#include "support/error_of.h"
#include "tsr/runtime/allocator.h"
#include "tsr/runtime/runtime.h"

using namespace tsr;

namespace {

Device dev(int i) { return Device{Platform::CPU, i}; }

int64_t cls(int64_t bytes) {
  return static_cast<int64_t>(detail::CachingAllocator::size_class(static_cast<size_t>(bytes)));
}

int64_t total(int64_t MemoryStats::*field) {
  int64_t t = 0;
  for (const Device& d : devices()) t += memory_stats(d).*field;
  return t;
}

// A distinct, exactly representable value of T for element i.
template <typename T>
T value_at(int64_t i) {
  if constexpr (std::is_same_v<T, bool>)
    return i % 3 == 1;
  else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>)
    return T(static_cast<float>(i % 97) - 40.f);
  else if constexpr (std::is_signed_v<T>)
    return static_cast<T>(i % 101 - 50);
  else
    return static_cast<T>(i % 113);
}

template <typename T>
bool same(const T& a, const T& b) {
  return a == b;
}

// The meshes and specs of the oracle sweep: sharded, replicated and partially
// replicated layouts of a [16, 8] array.
struct Layout {
  std::vector<int> mesh;
  std::vector<std::string> names;
  PartitionSpec spec;
};

std::vector<Layout> layouts() {
  std::vector<Layout> out;
  for (int n : {1, 2, 8}) {
    out.push_back({{n}, {"x"}, P("x")});
    out.push_back({{n}, {"x"}, P()});
    out.push_back({{n}, {"x"}, P(nullptr, "x")});
  }
  out.push_back({{2, 4}, {"x", "y"}, P("x", "y")});
  out.push_back({{2, 4}, {"x", "y"}, P("y", "x")});
  out.push_back({{2, 4}, {"x", "y"}, P("x")});           // replicated over y
  out.push_back({{2, 4}, {"x", "y"}, P(nullptr, "y")});  // replicated over x
  out.push_back({{2, 4}, {"x", "y"}, P(Axes{"x", "y"})});
  out.push_back({{2, 4}, {"x", "y"}, P()});
  return out;
}

template <typename T>
void check_put(DType dt) {
  const Shape shape{16, 8};
  std::vector<T> host(128);
  for (int64_t i = 0; i < 128; ++i) host[static_cast<size_t>(i)] = value_at<T>(i);
  Array one = array(host, shape, dev(0));
  EXPECT_EQ(one.dtype(), dt);
  for (const Layout& l : layouts()) {
    Mesh mesh = make_mesh(l.mesh, l.names);
    std::string what = std::string(dtype_name(dt)) + " on " + mesh.str() + " " + l.spec.repr();
    std::vector<T> copy = host;
    Array x = device_put(copy, NamedSharding(mesh, l.spec), shape);
    // The put copied before returning: the caller's buffer is free to change.
    for (auto&& v : copy) v = value_at<T>(7);
    EXPECT_EQ(x.sharding(), NamedSharding(mesh, l.spec)) << what;  // as given (JAX)
    std::vector<T> got = x.to_vector<T>(), want = one.to_vector<T>();
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], want[i])) << what << " @" << i;
    // Each device holds exactly its block of the host data.
    for (const Shard& s : x.addressable_shards()) {
      std::vector<T> blk = s.data->to_vector<T>();
      size_t k = 0;
      for (int64_t r = s.index[0].start; r < s.index[0].stop; ++r)
        for (int64_t c = s.index[1].start; c < s.index[1].stop; ++c, ++k)
          EXPECT_TRUE(same(blk[k], host[static_cast<size_t>(r * 8 + c)]))
              << what << " device " << s.device.id << " (" << r << "," << c << ")";
      EXPECT_EQ(k, blk.size()) << what;
    }
  }
}

// Resets VmHWM (the resident-set high-water mark) to the current RSS; returns that
// RSS in KiB, or -1 where the kernel does not offer it.
int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  size_t n = std::string(key).size();
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::atoll(line.c_str() + n);
  return -1;
}
int64_t reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.close();
  if (!f) return -1;
  return status_kib("VmRSS:");
}

}  // namespace

TEST(DevicePutHost, EveryDtypeOnEveryLayoutMatchesOneDevice) {
  check_put<bool>(bool_);
  check_put<int8_t>(int8);
  check_put<int16_t>(int16);
  check_put<int32_t>(int32);
  check_put<int64_t>(int64);
  check_put<uint8_t>(uint8);
  check_put<uint16_t>(uint16);
  check_put<uint32_t>(uint32);
  check_put<uint64_t>(uint64);
  check_put<float16_t>(float16);
  check_put<bfloat16_t>(bfloat16);
  check_put<float>(float32);
  check_put<double>(float64);
}

TEST(DevicePutHost, UnreducedPutHoldsTheValueOnce) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  std::vector<float> host{1, 2, 3, 4, 5, 6, 7, 8};
  Array x = device_put(host, NamedSharding(mesh, P("x", Unreduced{{"y"}})));
  EXPECT_EQ(x.to_vector<float>(), host);
  // Only coordinate 0 along y holds the data; the others hold the sum's identity.
  std::vector<Shard> shards = x.addressable_shards();
  for (int i = 0; i < static_cast<int>(shards.size()); ++i) {
    const Shard& s = shards[static_cast<size_t>(i)];
    std::vector<float> blk = s.data->to_vector<float>();
    bool first = mesh.coords(i)[1] == 0;
    for (size_t k = 0; k < blk.size(); ++k)
      EXPECT_EQ(blk[k], first ? host[s.index[0].start + k] : 0.f) << s.device.id;
  }
}

TEST(DevicePutHost, ToVectorConvertsShardsInPlace) {
  // Reading into another dtype converts each shard on its way into the result.
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  std::vector<float> host(16 * 8);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 20.f;
  for (const PartitionSpec& spec : {P("x", "y"), P(nullptr, "y"), P(), P("y", "x")}) {
    Array x = device_put(host, NamedSharding(mesh, spec), {16, 8});
    std::vector<double> d = x.to_vector<double>();
    std::vector<int32_t> n = x.to_vector<int32_t>();
    for (size_t i = 0; i < host.size(); ++i) {
      EXPECT_EQ(d[i], static_cast<double>(host[i])) << spec.repr() << " @" << i;
      EXPECT_EQ(n[i], static_cast<int32_t>(host[i])) << spec.repr() << " @" << i;
    }
    Array h = x.astype(bfloat16);
    std::vector<float> back = h.to_vector<float>();
    for (size_t i = 0; i < host.size(); ++i)
      EXPECT_EQ(back[i], static_cast<float>(bfloat16_t(host[i]))) << spec.repr() << " @" << i;
  }
}

TEST(DevicePutHost, ShardedPutStagesNoWholeArrayCopy) {
  // 64 MiB sharded 8 ways: the devices' buffers hold the shards and nothing else,
  // and the process's peak resident memory grows by the shards, not by a staging
  // copy of the whole array as well.
  constexpr int64_t kBytes = int64_t{64} << 20;
  Mesh mesh = make_mesh({8}, {"x"});
  std::vector<float> host(kBytes / 4, 1.5f);
  clear_caches();
  for (const Device& d : devices()) reset_peak_memory_stats(d);
  int64_t in_use0 = total(&MemoryStats::bytes_in_use);
  int64_t base_kib = reset_peak_rss();
  Array x = device_put(host, NamedSharding(mesh, P("x"))).block_until_ready();
  int64_t hwm_kib = status_kib("VmHWM:");
  synchronize();
  EXPECT_EQ(total(&MemoryStats::bytes_in_use) - in_use0, 8 * cls(kBytes / 8));
  int64_t peak = 0;
  for (const Device& d : devices()) peak += memory_stats(d).peak_bytes_in_use;
  EXPECT_LE(peak - in_use0, 8 * cls(kBytes / 8));
  if (base_kib < 0 || hwm_kib < 0) GTEST_SKIP() << "no /proc/self/clear_refs or VmHWM here";
  // The shards (64 MiB) plus slack for allocator and sanitizer bookkeeping; a staging
  // copy would add another 64 MiB.
  EXPECT_LT((hwm_kib - base_kib) * 1024, kBytes + kBytes / 2)
      << "peak RSS grew by " << (hwm_kib - base_kib) / 1024 << " MiB";
  EXPECT_EQ(x.to_vector<float>()[kBytes / 4 - 1], 1.5f);
}

TEST(DevicePutHost, ReplicatedPutCopiesOncePerDevice) {
  constexpr int64_t kBytes = int64_t{4} << 20;
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  std::vector<float> host(kBytes / 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000);
  synchronize();
  int64_t in_use0 = total(&MemoryStats::bytes_in_use);
  Array r = device_put(host, NamedSharding(mesh, P()));
  EXPECT_EQ(total(&MemoryStats::bytes_in_use) - in_use0, 8 * cls(kBytes));
  Array half = device_put(host, NamedSharding(mesh, P("x")));  // replicated over y
  EXPECT_EQ(total(&MemoryStats::bytes_in_use) - in_use0, 8 * cls(kBytes) + 8 * cls(kBytes / 2));
  for (const Shard& s : r.addressable_shards()) EXPECT_EQ(s.data->to_vector<float>(), host);
  EXPECT_EQ(half.to_vector<float>(), host);
}

TEST(MemoryStats, FollowArraysAndPeak) {
  clear_caches();
  const Device d0 = dev(0);
  MemoryStats s0 = memory_stats(d0);
  EXPECT_EQ(s0.bytes_cached, 0);
  EXPECT_GT(s0.cache_limit, 0);  // 256 MiB unless TSR_ALLOCATOR_CACHE_BYTES says otherwise
  reset_peak_memory_stats(d0);
  EXPECT_EQ(memory_stats(d0).peak_bytes_in_use, s0.bytes_in_use);
  const int64_t kBytes = int64_t{1} << 20;
  {
    Array x = zeros({kBytes / 4}, float32, d0);
    MemoryStats s1 = memory_stats(d0);
    EXPECT_EQ(s1.bytes_in_use - s0.bytes_in_use, cls(kBytes));
    EXPECT_GE(s1.peak_bytes_in_use, s1.bytes_in_use);
    EXPECT_GE(s1.num_allocs, s0.num_allocs + 1);
    EXPECT_GE(s1.largest_alloc_size, cls(kBytes));
    x.block_until_ready();
  }
  synchronize();
  MemoryStats s2 = memory_stats(d0);
  EXPECT_EQ(s2.bytes_in_use, s0.bytes_in_use);
  EXPECT_GE(s2.peak_bytes_in_use, s0.bytes_in_use + cls(kBytes));
  if (s0.cache_limit >= cls(kBytes)) {
    EXPECT_EQ(s2.bytes_cached, cls(kBytes));
  }
  // A new peak starts from what is live now.
  reset_peak_memory_stats(d0);
  EXPECT_EQ(memory_stats(d0).peak_bytes_in_use, s2.bytes_in_use);
}

TEST(MemoryStats, ClearCachesEmptiesEveryCacheAndLaterWorkRuns) {
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  auto f = jit([](Array a) { return a * 2.f + 1.f; });
  Array x = device_put(arange(64.f), P("x"));
  for (int i = 0; i < 3; ++i) (sin(x) + x).block_until_ready();  // temporaries, cached on drop
  EXPECT_EQ(f(x).to_vector<float>()[5], 11.f);
  EXPECT_EQ(f.trace_count(), 1);
  synchronize();
  EXPECT_GT(total(&MemoryStats::bytes_cached), 0);
  int64_t in_use = total(&MemoryStats::bytes_in_use);
  clear_caches();
  EXPECT_EQ(total(&MemoryStats::bytes_cached), 0);
  for (const Device& d : devices()) EXPECT_EQ(memory_stats(d).bytes_cached, 0) << d;
  EXPECT_LE(total(&MemoryStats::bytes_in_use), in_use);  // live arrays stay
  // The jit traces again; eager ops lower again; values are unchanged.
  EXPECT_EQ(f(x).to_vector<float>()[5], 11.f);
  EXPECT_EQ(f.trace_count(), 2);
  EXPECT_EQ((x + x).to_vector<float>()[63], 126.f);
  EXPECT_EQ(x.to_vector<float>()[7], 7.f);
}

TEST(MemoryStats, ClearCachesWhileWorkIsInFlight) {
  Mesh mesh = make_mesh({8}, {"x"});
  // Ops queued (not waited for) between clears still run on their executables.
  Array y = device_put(arange(0, 1 << 16, 1, float32), NamedSharding(mesh, P("x")));
  for (int i = 0; i < 50; ++i) {
    y = y * 1.0001f + 1.f;
    if (i % 10 == 0) clear_caches();
  }
  std::vector<float> got = y.to_vector<float>();
  Array z = device_put(arange(0, 1 << 16, 1, float32), dev(0));
  for (int i = 0; i < 50; ++i) z = z * 1.0001f + 1.f;
  EXPECT_EQ(got, z.to_vector<float>());
}

TEST(MemoryStats, UnknownDeviceIsAValueError) {
  std::string m = error_of<ValueError>([] { memory_stats(dev(device_count())); });
  EXPECT_HAS(m, "[memory_stats] unknown device. Got CpuDevice(id=8)");
  EXPECT_HAS(m, "Use tsr::devices(tsr::Platform::CPU) to list them.");
  m = error_of<ValueError>([] { memory_stats(Device{Platform::CUDA, 0}); });
  EXPECT_HAS(m, "[memory_stats] unknown device");
  m = error_of<ValueError>([] { reset_peak_memory_stats(dev(-1)); });
  EXPECT_HAS(m, "[reset_peak_memory_stats] unknown device. Got CpuDevice(id=-1)");
}

TEST(MemoryStats, HugepagesFlagIsParsedAndAdvisedBlocksWork) {
  const char* old = std::getenv("TSR_ALLOCATOR_HUGEPAGES");
  std::string saved = old ? old : "";
  setenv("TSR_ALLOCATOR_HUGEPAGES", "on", 1);
  std::string m = error_of<ValueError>([] { detail::allocator_hugepages(); });
  EXPECT_HAS(m, "TSR_ALLOCATOR_HUGEPAGES");
  EXPECT_HAS(m, "expected an integer in [0, 1]");
  setenv("TSR_ALLOCATOR_HUGEPAGES", "1", 1);
  EXPECT_TRUE(detail::allocator_hugepages());
  if (old)
    setenv("TSR_ALLOCATOR_HUGEPAGES", saved.c_str(), 1);
  else
    unsetenv("TSR_ALLOCATOR_HUGEPAGES");
  // An advised block (large, and with the advice's rounding at both ends) is ordinary
  // memory to its user.
  detail::CachingAllocator a(0);
  a.set_hugepages(true);
  for (size_t n : {detail::CachingAllocator::kHugeMin, size_t{5} << 20, size_t{1} << 20}) {
    auto* p = static_cast<unsigned char*>(a.allocate(n));
    std::memset(p, 0x5A, n);
    EXPECT_EQ(p[0], 0x5A);
    EXPECT_EQ(p[n - 1], 0x5A);
    a.release(p, n);
  }
  EXPECT_EQ(a.stats().live, 0u);
  EXPECT_EQ(a.stats().cached, 0u);
}
