// The runtime's accelerator path on the fake accelerator (tests/support): CUDA devices
// whose memory the host cannot read, with the CPU kernels behind them. Every result is
// compared with the same program on CPU devices, so a host access that bypasses the
// device memory calls crashes, and a wrong copy or staging step mismatches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include <tsr/tsr.h>

#include "support/error_of.h"
#include "support/fake_accelerator.h"

namespace {

// Before the test environment starts the runtime (static initialisation precedes main).
const bool kFake = [] {
  setenv("TSR_TEST_FAKE_ACCELERATOR", "1", 1);
  return true;
}();

using tsr::Array;
using tsr::Device;
using tsr::Mesh;
using tsr::NamedSharding;
using tsr::P;
using tsr::Platform;

Mesh cuda_mesh(std::vector<int> sizes, std::vector<std::string> names) {
  return tsr::make_mesh(sizes, names, {}, tsr::devices(Platform::CUDA));
}
Mesh cpu_mesh(std::vector<int> sizes, std::vector<std::string> names) {
  return tsr::make_mesh(sizes, names, {}, tsr::devices(Platform::CPU));
}

std::vector<float> iota_values(int n, float scale = 0.25f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 37) - 3.0f;
  return v;
}

TEST(FakeAccelerator, DevicesAreCudaDevicesByDefault) {
  ASSERT_TRUE(kFake);
  EXPECT_EQ(tsr::default_platform(), Platform::CUDA);
  auto cuda = tsr::devices(Platform::CUDA);
  ASSERT_EQ(cuda.size(), 8u);  // one fake GPU as 8 virtual devices
  EXPECT_EQ(cuda[3].str(), "CudaDevice(id=3)");
  EXPECT_EQ(tsr::devices().size(), 8u);
  EXPECT_EQ(tsr::devices()[0].platform, Platform::CUDA);
  EXPECT_EQ(tsr::devices(Platform::CPU).size(), 8u);
  EXPECT_EQ(tsr::local_devices()[0].platform, Platform::CUDA);
}

TEST(FakeAccelerator, PutAndReadBackEveryLayout) {
  Mesh m = cuda_mesh({2, 4}, {"x", "y"});
  std::vector<float> v = iota_values(8 * 12);
  for (auto spec : {P(), P("x"), P("y"), P("x", "y"), P("y", "x"), P(nullptr, "x")}) {
    Array a = tsr::from_host(v.data(), tsr::DType::Float32, {8, 12}, NamedSharding(m, spec));
    EXPECT_EQ(a.to_vector<float>(), v) << spec.repr();
    EXPECT_EQ(a.sharding().concrete_mesh()->devices()[0].platform, Platform::CUDA);
  }
}

// The same program on a CPU mesh and on a CUDA mesh of one shape.
template <class F>
void expect_same_on_both(const F& f, std::vector<int> sizes, std::vector<std::string> names,
                         const std::vector<tsr::PartitionSpec>& specs, const char* what) {
  std::vector<Array> on_cpu, on_cuda;
  int k = 0;
  for (const auto& spec : specs) {
    std::vector<float> v = iota_values(8 * 12, 0.125f * static_cast<float>(++k));
    on_cpu.push_back(tsr::from_host(v.data(), tsr::DType::Float32, {8, 12},
                                    NamedSharding(cpu_mesh(sizes, names), spec)));
    on_cuda.push_back(tsr::from_host(v.data(), tsr::DType::Float32, {8, 12},
                                     NamedSharding(cuda_mesh(sizes, names), spec)));
  }
  Array want = f(on_cpu), got = f(on_cuda);
  EXPECT_EQ(got.sharding().concrete_mesh()->devices()[0].platform, Platform::CUDA) << what;
  EXPECT_EQ(want.shape(), got.shape()) << what;
  EXPECT_EQ(want.to_vector<float>(), got.to_vector<float>()) << what;
}

TEST(FakeAccelerator, JitMatchesTheCpuMesh) {
  auto f = tsr::jit([](const Array& x, const Array& y) {
    Array z = tsr::tanh(x) * y + 1.0;
    return tsr::sum(z * z, {1}) + tsr::max(tsr::cumsum(x, 0), {1});
  });
  auto g = tsr::jit([](const Array& x, const Array& y) {
    return tsr::matmul(tsr::exp(x * 0.1), tsr::transpose(y, {1, 0}));
  });
  for (auto specs : {std::vector<tsr::PartitionSpec>{P(nullptr, "y"), P(nullptr, "y")},
                     std::vector<tsr::PartitionSpec>{P(nullptr, "x"), P(nullptr, "x")}})
    expect_same_on_both([&](const std::vector<Array>& a) { return f(a[0], a[1]); }, {2, 4},
                        {"x", "y"}, specs, "elementwise and reductions on (2,4)");
  expect_same_on_both([&](const std::vector<Array>& a) { return g(a[0], a[1]); }, {8}, {"x"},
                      {P("x"), P()}, "matmul on (8)");
  expect_same_on_both([&](const std::vector<Array>& a) { return g(a[0], a[1]); }, {1}, {"x"},
                      {P(), P()}, "matmul on (1)");
}

TEST(FakeAccelerator, ReshardsAndCollectivesMatchTheCpuMesh) {
  for (auto to : {P(), P("y", "x"), P(nullptr, "y"), P("x")})
    expect_same_on_both(
        [&](const std::vector<Array>& a) {
          return tsr::reshard(a[0], NamedSharding(*a[0].sharding().concrete_mesh(), to));
        },
        {2, 4}, {"x", "y"}, {P("x", "y")}, to.repr().c_str());
  auto body = [](const Array& b) {
    return tsr::all_gather(tsr::psum(b, "x") * 0.5, "y",
                           {.axis = 1, .tiled = true, .invariant = true});
  };
  expect_same_on_both(
      [&](const std::vector<Array>& a) {
        return tsr::shard_map(body, {.mesh = *a[0].sharding().concrete_mesh(),
                                     .in_specs = P("x", "y"),
                                     .out_specs = P()})(a[0]);
      },
      {2, 4}, {"x", "y"}, {P("x", "y")}, "shard_map psum + all_gather");
}

TEST(FakeAccelerator, LoopsReadTheirPredicateBack) {
  auto f = tsr::jit([](const Array& x) {
    Array n = tsr::while_loop([](const Array& c) { return tsr::sum(c) < 500.0; },
                              [](const Array& c) { return c * 1.5 + 1.0; }, x);
    return tsr::fori_loop(
        0, 3, [](const Array&, const Array& c) { return tsr::sin(c); }, n);
  });
  expect_same_on_both([&](const std::vector<Array>& a) { return f(a[0]); }, {2, 4}, {"x", "y"},
                      {P("x")}, "while_loop + fori_loop");
}

TEST(FakeAccelerator, GradientsMatchTheCpuMesh) {
  auto loss = [](const Array& w, const Array& x) {
    return tsr::sum(tsr::square(tsr::tanh(tsr::matmul(x, tsr::transpose(w, {1, 0})))));
  };
  expect_same_on_both([&](const std::vector<Array>& a) { return tsr::grad(loss)(a[0], a[1]); },
                      {2, 4}, {"x", "y"}, {P("y"), P("x")}, "grad");
}

TEST(FakeAccelerator, DevicePutMovesBetweenPlatforms) {
  std::vector<float> v = iota_values(8 * 12);
  Array on_cpu = tsr::from_host(v.data(), tsr::DType::Float32, {8, 12},
                                NamedSharding(cpu_mesh({8}, {"x"}), P("x")));
  Array up = tsr::device_put(on_cpu, NamedSharding(cuda_mesh({2, 4}, {"a", "b"}), P("b", "a")));
  EXPECT_EQ(up.sharding().concrete_mesh()->devices()[0].platform, Platform::CUDA);
  EXPECT_EQ(up.to_vector<float>(), v);
  Array down = tsr::device_put(up * 2.0, tsr::devices(Platform::CPU)[5]);
  EXPECT_EQ(down.sharding().concrete_mesh()->devices()[0], (Device{Platform::CPU, 5}));
  std::vector<float> twice = v;
  for (float& x : twice) x *= 2.0f;
  EXPECT_EQ(down.to_vector<float>(), twice);
}

TEST(FakeAccelerator, MixedPlatformsAreTypedErrors) {
  Array a = tsr::device_put(tsr::iota({4}), tsr::devices(Platform::CPU)[0]);
  // Not device 0: a value on the default device alone moves freely (JAX's uncommitted).
  Array b = tsr::device_put(tsr::iota({4}), tsr::devices(Platform::CUDA)[1]);
  std::string e = error_of<tsr::ValueError>(
      [&] { (void)tsr::jit([](const Array& x, const Array& y) { return x + y; })(b, a); });
  EXPECT_HAS(e,
             "[jit] the inputs are on different platforms. Got input 1 on CpuDevice(id=0) (cpu)");
  EXPECT_HAS(e, "CudaDevice(id=1) (cuda)");
  e = error_of<tsr::ValueError>([&] { (void)(b + a); });
  EXPECT_HAS(e, "different platforms");
  std::vector<Device> mixed = {tsr::devices(Platform::CUDA)[1], tsr::devices(Platform::CPU)[1]};
  e = error_of<tsr::ValueError>([&] { Mesh m(mixed, {2}, {"x"}); });
  EXPECT_HAS(e,
             "[Mesh] the devices are on different platforms. Got CudaDevice(id=1) and "
             "CpuDevice(id=1)");
  e = error_of<tsr::ValueError>([&] { (void)tsr::memory_stats(Device{Platform::CUDA, 8}); });
  EXPECT_HAS(e,
             "unknown device. Got CudaDevice(id=8); expected a CUDA device with an id in [0, 8)");
}

TEST(FakeAccelerator, MemoryIsTheDevicesAndIsGivenBack) {
  tsr::clear_caches();
  const long long before = tsr::testing::fake_accelerator_bytes();
  {
    Array a = tsr::device_put(tsr::ones({256, 256}), tsr::devices(Platform::CUDA)[2]);
    a.block_until_ready();
    EXPECT_GE(tsr::memory_stats(tsr::devices(Platform::CUDA)[2]).bytes_in_use, 256 * 256 * 4);
    EXPECT_GE(tsr::testing::fake_accelerator_bytes() - before, 256 * 256 * 4);
  }
  tsr::clear_caches();
  EXPECT_EQ(tsr::memory_stats(tsr::devices(Platform::CUDA)[2]).bytes_in_use, 0);
  EXPECT_LE(tsr::testing::fake_accelerator_bytes(), before);
}

}  // namespace
