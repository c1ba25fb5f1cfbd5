// Bad inputs at the library's entry points (issue 9): host data that does not
// match its shape, negative or overflowing shapes, device counts, devices and
// TSR_* environment variables are refused with typed errors, never a crash.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "support/error_of.h"

#include "tsr/comm/rendezvous.h"
#include "tsr/runtime/runtime.h"
#include "tsr/tsr.h"

using namespace tsr;

// Under AddressSanitizer, a huge malloc aborts unless the allocator may return
// null; the library turns that null into BackendError, which a test checks.
extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}

namespace {

// --- item 5: host data + shape -------------------------------------------------

TEST(BadInput, ArrayDataShorterThanShape) {
  auto m = error_of<ValueError>([] { array<float>({1, 2, 3}, {5}); });
  EXPECT_HAS(m, "[array]");
  EXPECT_HAS(m, "Got 3 elements");
  EXPECT_HAS(m, "(5,)");
  EXPECT_HAS(m, "expected 5");
}

TEST(BadInput, ArrayDataLongerThanShape) {
  auto m = error_of<ValueError>([] { array<int>({1, 2, 3, 4, 5}, {2, 2}); });
  EXPECT_HAS(m, "Got 5 elements");
  EXPECT_HAS(m, "expected 4");
  error_of<ValueError>([] { array<bool>({true}, {2}); });
  error_of<ValueError>([] { array(std::vector<double>{}, Shape{}); });  // a scalar needs 1
}

TEST(BadInput, DevicePutHostDataShorterThanShape) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  auto m = error_of<ValueError>([] { device_put(std::vector<int>{1, 2, 3}, P("x"), {2, 2}); });
  EXPECT_HAS(m, "[device_put]");
  EXPECT_HAS(m, "Got 3 elements");
  EXPECT_HAS(m, "expected 4");
}

TEST(BadInput, MatchingHostDataStillWorks) {
  EXPECT_EQ(array<float>({1, 2, 3, 4}, {2, 2}).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(scalar(7).item<int>(), 7);
  EXPECT_EQ(array(std::vector<float>{}, {0, 3}).shape(), (Shape{0, 3}));
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  EXPECT_EQ(device_put(std::vector<int>{1, 2, 3, 4}, P("x"), {2, 2}).to_vector<int>(),
            (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(device_put(std::vector<int>{1, 2}, P("x")).shape(), (Shape{2}));
}

// --- item 6: element counts and byte sizes that overflow int64 ------------------

TEST(BadInput, ElementCountOverflowIsValueError) {
  auto m = error_of<ValueError>([] { iota({int64_t{1} << 40, int64_t{1} << 40}); });
  EXPECT_HAS(m, "[iota]");
  EXPECT_HAS(m, "overflow");
  EXPECT_HAS(m, "(1099511627776, 1099511627776)");
  error_of<ValueError>([] { zeros({int64_t{1} << 32, int64_t{1} << 32}); });
  error_of<ValueError>([] { random::normal(random::key(0), {int64_t{1} << 40, 1 << 30}); });
}

TEST(BadInput, ByteSizeOverflowIsValueError) {
  // INT64_MAX elements fit an int64, their bytes (4 each) do not.
  auto m = error_of<ValueError>([] { full({INT64_MAX}, 1.0); });
  EXPECT_HAS(m, "[full]");
  EXPECT_HAS(m, "bytes");
  error_of<ValueError>([] { zeros({INT64_MAX / 2}, float64); });
  error_of<ValueError>([] { arange(0.0, 1e30, 1.0); });  // 1e30 elements: no int64 length
  error_of<ValueError>([] { arange(0.0, std::nan(""), 1.0); });
}

TEST(BadInput, OverflowingShapeRefusedByOpsAndUnderJit) {
  // 2^32 * 2^32 wraps to 0 elements, the size of an empty array.
  const int64_t big = int64_t{1} << 32;
  error_of<ValueError>([&] { reshape(zeros({0}), {big, big}); });
  error_of<ValueError>([&] { broadcast_to(ones({1, 1}), {big, big}); });
  error_of<ValueError>([&] { tile(ones({2}), {big, big}); });
  auto f = jit([&](const Array& x) { return broadcast_to(x, {big, big}); });
  error_of<ValueError>([&] { f(ones({1})); });
}

TEST(BadInput, AllocationFailureStaysBackendError) {
  // 2^50 floats (4 PiB) is a valid type but no host can hold it.
  error_of<BackendError>([] { zeros({int64_t{1} << 50}).block_until_ready(); });
}

// --- item 7: negative sizes --------------------------------------------------------

TEST(BadInput, NegativeSizesRefusedByCreationOps) {
  auto m = error_of<ValueError>([] { broadcast_to(ones({1}), {-3}); });
  EXPECT_HAS(m, "[broadcast_to]");
  EXPECT_HAS(m, "(-3,)");
  EXPECT_HAS(m, ">= 0");
  error_of<ValueError>([] { broadcast_in_dim(ones({1}), {-3}, {0}); });
  error_of<ValueError>([] { zeros({2, -1}); });
  error_of<ValueError>([] { full({-5}, 2.0); });
  error_of<ValueError>([] { iota({-1}); });
  error_of<ValueError>([] { broadcasted_iota(int32, {3, -2}, 0); });
  error_of<ValueError>([] { eye(-2); });
  error_of<ValueError>([] { array<float>({}, {-1, 0}); });
}

TEST(BadInput, NegativeSizesRefusedByReshape) {
  // (-2, -3) multiplies to 6, the size of the input: still not a shape.
  auto m = error_of<ValueError>([] { reshape(iota({6}), {-2, -3}); });
  EXPECT_HAS(m, "[reshape]");
  error_of<ValueError>([] { reshape(iota({6}), {-2, 3}); });
  error_of<ValueError>([] { reshape(iota({6}), {-1, -1}); });
  EXPECT_EQ(reshape(iota({6}), {2, -1}).shape(), (Shape{2, 3}));  // one -1 is inference
}

TEST(BadInput, NegativeSizesRefusedByRandomAndSlicing) {
  Array k = random::key(0);
  error_of<ValueError>([&] { random::normal(k, {-2}); });
  error_of<ValueError>([&] { random::uniform(k, {4, -1}); });
  error_of<ValueError>([&] { random::bits(k, {-1}); });
  error_of<ValueError>([&] { random::randint(k, {-1}, 0, 10); });
  error_of<ValueError>([&] { random::bernoulli(k, 0.5, {-1}); });
  error_of<ValueError>([&] { random::categorical(k, zeros({3}), -1, Shape{-2}); });
  error_of<ValueError>([&] { dynamic_slice(iota({8}), {0}, {-1}); });
}

TEST(BadInput, NegativeSizesRefusedUnderJit) {
  auto f = jit([](const Array& x) { return broadcast_to(x, {-3}); });
  error_of<ValueError>([&] { f(ones({1})); });
  auto g = jit([](const Array& x) { return add(x, zeros({-1})); });
  error_of<ValueError>([&] { g(ones({1})); });
}

// --- item 9: device counts -----------------------------------------------------------

TEST(BadInput, InitDeviceCountIsCapped) {
  auto m = error_of<ValueError>([] { init({.num_cpu_devices = 100000}); });
  EXPECT_HAS(m, "[init]");
  EXPECT_HAS(m, "100000");
  EXPECT_HAS(m, "4096");
}

TEST(BadInputDeathTest, ThreadStartFailureIsBackendError) {
  // In a child whose address space has room for only a few thread stacks,
  // starting 4096 workers fails inside std::thread (std::system_error). The child is
  // a fresh exec of this binary ("threadsafe"): a plain fork of a process whose
  // worker threads may hold a lock (the sanitizer allocator's) can hang the child.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        rlimit lim{};
        getrlimit(RLIMIT_AS, &lim);
        long pages = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
          if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
          std::fclose(f);
        }
        lim.rlim_cur = static_cast<rlim_t>(pages) * 4096 + (rlim_t{64} << 20);
        setrlimit(RLIMIT_AS, &lim);
        try {
          detail::start_streams(4096);
        } catch (const BackendError& e) {
          std::string m = e.what();
          bool ok = m.find("[init]") != std::string::npos && m.find("4096") != std::string::npos;
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(ok ? 0 : 2);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "wrong type: %s\n", e.what());
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "could not start the worker threads of 4096");
}

// --- item 11: environment variables ------------------------------------------------

// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(BadInput, CommTimeoutEnvIsParsed) {
  {
    ScopedEnv e("TSR_COMM_TIMEOUT_MS", "abc");
    auto m = error_of<ValueError>([] { detail::resolve_timeout_ms(0); });
    EXPECT_HAS(m, "TSR_COMM_TIMEOUT_MS");
    EXPECT_HAS(m, "Got 'abc'");
    EXPECT_HAS(m, "expected an integer in [1, ");
  }
  for (const char* bad : {"0", "-5", "12ms", "", " 5", "99999999999999999999999"}) {
    ScopedEnv e("TSR_COMM_TIMEOUT_MS", bad);
    error_of<ValueError>([] { detail::resolve_timeout_ms(0); });
  }
  {
    ScopedEnv e("TSR_COMM_TIMEOUT_MS", "2500");
    EXPECT_EQ(detail::resolve_timeout_ms(0), 2500);
    EXPECT_EQ(detail::resolve_timeout_ms(7), 7);  // an explicit timeout wins
  }
  ScopedEnv e("TSR_COMM_TIMEOUT_MS", nullptr);
  EXPECT_EQ(detail::resolve_timeout_ms(0), 120000);
}

TEST(BadInput, AllocatorEnvIsParsed) {
  {
    ScopedEnv e("TSR_ALLOCATOR_CACHE_BYTES", "abc");
    auto m = error_of<ValueError>([] { detail::allocator_cache_limit(); });
    EXPECT_HAS(m, "TSR_ALLOCATOR_CACHE_BYTES");
    EXPECT_HAS(m, "Got 'abc'");
  }
  {
    ScopedEnv e("TSR_ALLOCATOR_CACHE_BYTES", "1024");
    EXPECT_EQ(detail::allocator_cache_limit(), 1024u);
  }
  {
    ScopedEnv e("TSR_ALLOCATOR_POISON", "yes");
    auto m = error_of<ValueError>([] { detail::allocator_poison(); });
    EXPECT_HAS(m, "TSR_ALLOCATOR_POISON");
    EXPECT_HAS(m, "expected an integer in [0, 1]");
  }
  {
    ScopedEnv e("TSR_ALLOCATOR_POISON", "1");
    EXPECT_TRUE(detail::allocator_poison());
  }
  {
    ScopedEnv e("TSR_NUM_CPU_DEVICES", "lots");
    auto m = error_of<ValueError>([] { init(); });  // parsed on every init call
    EXPECT_HAS(m, "TSR_NUM_CPU_DEVICES");
    EXPECT_HAS(m, "Got 'lots'; expected an integer in [1, 4096]");
  }
}

// --- TSR_ALLOCATOR_POISON: kernels write every output element -----------------------

// Results of a few ops whose kernels write outputs piecewise (blocks, padding,
// partial sums, gathered rows), sharded over a mesh, eager and under jit.
std::vector<std::vector<float>> piecewise_results(const std::vector<int>& mesh_shape) {
  std::vector<std::string> names = {"x", "y"};
  names.resize(mesh_shape.size());
  Mesh mesh = make_mesh(mesh_shape, names);
  MeshScope scope(mesh);
  PartitionSpec rows = P(names[0], nullptr);
  PartitionSpec cols = mesh_shape.size() > 1 ? P(nullptr, names[1]) : P(nullptr, names[0]);
  Array a = device_put(add(iota({8, 8}), 1.0), rows);
  Array b = device_put(multiply(iota({8, 8}), 0.5), cols);
  Array idx = array<int>({7, 0, 3, 3, 5, 1, 6, 2});
  auto ops = [&](const Array& x, const Array& y, const Array& i) {
    std::vector<Array> r;
    r.push_back(dot_general(x, y, {{1}, {0}}, {.out_sharding = rows}));
    r.push_back(dot_general(y, x, {{0}, {0}}, {.out_sharding = P()}));
    r.push_back(sum(x, 0));
    r.push_back(max(y, 1));
    r.push_back(sum(x));
    r.push_back(take(x, i, 0, {.out_sharding = P(), .mode = IndexMode::Clip}));
    r.push_back(take(y, i, 1, {.out_sharding = P(), .mode = IndexMode::Clip}));
    r.push_back(pad(x, 9.0, {{1, 0, 1}, {-1, 3, 0}}));
    r.push_back(pad(y, -1.0, {{0, 0, 2}, {2, -1, 1}}));
    r.push_back(concatenate({x, x, x}, 1));
    r.push_back(concatenate({y, y}, 0));
    r.push_back(cumsum(x, 1));
    return r;
  };
  std::vector<std::vector<float>> out;
  for (const auto& r : ops(a, b, idx)) out.push_back(r.to_vector<float>());
  auto f = jit([&](const Array& x, const Array& y, const Array& i) { return ops(x, y, i); });
  for (const auto& r : f(a, b, idx)) out.push_back(r.to_vector<float>());
  return out;
}

TEST(BadInput, AllocatorPoisonFillsFreshBuffers) {
  auto& rt = detail::Runtime::get();
  rt.set_allocator_poison(true);
  auto buf = rt.alloc(0, 100);
  rt.set_allocator_poison(false);
  const auto* bytes = static_cast<const unsigned char*>(buf->ptr);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(bytes[i], 0xFF) << i;
}

TEST(BadInput, KernelsWriteEveryOutputElementUnderPoison) {
  const std::vector<std::vector<int>> meshes = {{1}, {2}, {4}, {2, 2}, {8}};
  std::vector<std::vector<std::vector<float>>> clean;
  for (const auto& m : meshes) clean.push_back(piecewise_results(m));
  auto& rt = detail::Runtime::get();
  rt.set_allocator_poison(true);
  std::vector<std::vector<std::vector<float>>> poisoned;
  for (const auto& m : meshes) poisoned.push_back(piecewise_results(m));
  rt.set_allocator_poison(false);
  for (size_t m = 0; m < meshes.size(); ++m) {
    ASSERT_EQ(poisoned[m].size(), clean[0].size());
    for (size_t r = 0; r < clean[0].size(); ++r) {
      // NaN (a poisoned float) never compares equal, so an unwritten element fails.
      EXPECT_EQ(poisoned[m][r], clean[0][r]) << "mesh " << m << " result " << r;
      EXPECT_EQ(clean[m][r], clean[0][r]) << "mesh " << m << " result " << r;
    }
  }
}

// --- item 11: devices -------------------------------------------------------------------

TEST(BadInput, UnknownDeviceKindRefused) {
  auto m = error_of<ValueError>([] { device_put(ones({2}), Device{Platform::CUDA, 0}); });
  EXPECT_HAS(m, "[device_put]");
  EXPECT_HAS(m, "CudaDevice(id=0)");
  error_of<ValueError>([] { zeros({2}, float32, Device{Platform::CUDA, 0}); });
  error_of<ValueError>([] { device_put(ones({2}), Device{Platform::CPU, 8}); });
  error_of<ValueError>([] { device_mesh(Device{Platform::CUDA, 0}); });
  error_of<ValueError>([] {
    Mesh({Device{Platform::CPU, 0}, Device{Platform::CUDA, 1}}, {2}, {"x"});
  });
  error_of<ValueError>([] { make_mesh({2}, {"x"}, {}, {Device{Platform::CUDA, 0}, Device{}}); });
}

}  // namespace
