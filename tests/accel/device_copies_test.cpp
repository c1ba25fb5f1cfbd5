// The runtime's device-side data movement on the fake accelerator: box copies and
// transposes built from 2-d copies (DeviceMemory) against the host versions, and the
// groups the runtime makes for accelerator devices.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "support/fake_accelerator.h"
#include "tsr/backends/kernel.h"
#include "tsr/comm/group.h"
#include "tsr/core/box_copy.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/runtime.h"
#include "tsr/tsr.h"

namespace {

const bool kFake = [] {
  setenv("TSR_TEST_FAKE_ACCELERATOR", "1", 1);
  return true;
}();

using tsr::Shape;
using tsr::detail::DeviceMemory;

// Device memory of the fake holding `host`, and back.
struct DeviceBlock {
  const DeviceMemory& mem;
  void* ptr;
  size_t bytes;
  DeviceBlock(const DeviceMemory& m, const std::vector<unsigned char>& host)
      : mem(m), ptr(m.ops->alloc(0, host.size())), bytes(host.size()) {
    mem.write(ptr, host.data(), bytes);
  }
  ~DeviceBlock() { mem.ops->free(0, ptr); }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> h(bytes);
    mem.read(h.data(), ptr, bytes);
    return h;
  }
};

std::vector<unsigned char> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(DeviceCopies, CopyBoxMatchesTheHostCopyOnManyBoxes) {
  ASSERT_TRUE(kFake);
  const DeviceMemory mem{tsr::detail::fake_accelerator_ops(), nullptr};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int rank = trial % 5;  // 0-d to 4-d
    const size_t item = size_t{1} << (trial % 4);
    Shape src(rank), dst(rank), extent(rank), so(rank), dso(rank);
    for (int d = 0; d < rank; ++d) {
      extent[d] = 1 + rng() % 4;
      // Some dims whole in both blocks (one contiguous run), some not.
      const bool whole = rng() % 3 == 0;
      src[d] = extent[d] + (whole ? 0 : rng() % 3);
      dst[d] = extent[d] + (whole ? 0 : rng() % 3);
      so[d] = rng() % (src[d] - extent[d] + 1);
      dso[d] = rng() % (dst[d] - extent[d] + 1);
    }
    const auto sh = random_bytes(static_cast<size_t>(tsr::numel(src)) * item, rng);
    auto want = random_bytes(static_cast<size_t>(tsr::numel(dst)) * item, rng);
    DeviceBlock s(mem, sh), d(mem, want);
    mem.copy_box(s.ptr, src, so, d.ptr, dst, dso, extent, item);
    tsr::detail::copy_box(sh.data(), src, so, want.data(), dst, dso, extent, item);
    ASSERT_EQ(d.read(), want) << "trial " << trial;
  }
}

TEST(DeviceCopies, SwapLeadingMatchesTheHostTranspose) {
  const DeviceMemory mem{tsr::detail::fake_accelerator_ops(), nullptr};
  std::mt19937 rng(11);
  for (int64_t a : {1, 2, 3, 8})
    for (int64_t b : {1, 2, 5})
      for (int64_t c : {1, 3, 16}) {
        const int64_t abc[3] = {a, b, c};
        const auto src = random_bytes(static_cast<size_t>(a * b * c) * 4, rng);
        std::vector<unsigned char> want(src.size());
        tsr::prim::swap_leading(src.data(), want.data(), abc, 4);
        DeviceBlock s(mem, src), d(mem, std::vector<unsigned char>(src.size()));
        mem.swap_leading(s.ptr, d.ptr, abc, 4);
        ASSERT_EQ(d.read(), want) << a << "x" << b << "x" << c;
      }
}

TEST(DeviceCopies, RuntimeGroupsMoveDeviceMemory) {
  auto& rt = tsr::detail::Runtime::get();
  const int k = tsr::detail::kAccelSlot;
  // CUDA devices exchange device memory; a group with a CPU device stages the CUDA
  // ranks through host copies around the threads group.
  EXPECT_STREQ(rt.group({k + 0, k + 1, k + 2, k + 3})->backend(), "device");
  EXPECT_STREQ(rt.group({0, k + 1})->backend(), "threads");
  EXPECT_STREQ(rt.group({0, 1})->backend(), "threads");
}

// A platform limit (here: the fake's add taking no complex, as CUDA's) refuses when the
// step is lowered, the same eagerly and under jit, before any kernel runs.
TEST(DeviceCopies, KernelCapsRefuseAtLoweringEagerAndJit) {
  using tsr::detail::KernelCaps;
  tsr::detail::set_kernel_caps("add", "fake", {.complex = false});
  tsr::Array a = tsr::complex(tsr::ones({4}), tsr::zeros({4}));
  for (int jitted = 0; jitted < 2; ++jitted) {
    try {
      if (jitted)
        (void)tsr::jit([](const tsr::Array& x) { return x + x; })(a);
      else
        (void)(a + a);
      ADD_FAILURE() << "no error (jit " << jitted << ")";
    } catch (const tsr::NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("[add] complex64 is not supported by add on fake "
                                           "devices yet."),
                std::string::npos)
          << e.what();
    }
  }
  tsr::detail::set_kernel_caps("add", "fake", KernelCaps{});
  EXPECT_EQ((a + a).shape(), (tsr::Shape{4}));
}

}  // namespace
