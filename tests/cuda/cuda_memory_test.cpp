// The CUDA platform's runtime ops (backends/cuda/memory.cpp) on a GPU: host transfers
// below and above the pinned-staging threshold, 2-d copies, the reduce kernel against
// the host groups' reduce, and the device group against the reference group. Each
// test skips with one line without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tsr/backends/cuda/cuda_util.h"
#include "tsr/comm/device/device_group.h"
#include "tsr/comm/reduce_kernels.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
namespace {

#define TSR_NEED_GPU() \
  if (cuda::gpu_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::no_gpu_reason()

std::vector<unsigned char> bytes(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(g() & 0x3f);  // small: no NaN / inf
  return v;
}

struct Gpu {
  const AcceleratorOps* ops = cuda_accelerator();
  void* stream = ops->make_stream(0);
  DeviceMemory mem{ops, stream};
};

TEST(CudaMemory, TransfersRoundTripAroundTheStagingThreshold) {
  TSR_NEED_GPU();
  Gpu g;
  for (size_t n : {size_t{1}, size_t{4096}, (size_t{1} << 20) - 1, size_t{1} << 20,
                   (size_t{8} << 20) + 3, (size_t{40} << 20) + 1}) {
    const auto h = bytes(n, static_cast<uint32_t>(n));
    void* d = g.ops->alloc(0, n);
    ASSERT_NE(d, nullptr);
    g.mem.write(d, h.data(), n);
    std::vector<unsigned char> back(n, 0xEE);
    g.mem.read(back.data(), d, n);
    EXPECT_EQ(back, h) << n << " bytes";
    g.ops->free(0, d);
  }
}

TEST(CudaMemory, Copy2dAndReduceMatchTheHost) {
  TSR_NEED_GPU();
  Gpu g;
  // 2-d: 7 rows of 24 bytes from pitch 40 to pitch 32.
  const auto src = bytes(7 * 40, 3);
  std::vector<unsigned char> want(7 * 32, 0);
  for (int r = 0; r < 7; ++r) std::memcpy(&want[r * 32], &src[r * 40], 24);
  void* ds = g.ops->alloc(0, src.size());
  void* dd = g.ops->alloc(0, want.size());
  g.mem.write(ds, src.data(), src.size());
  g.mem.fill(dd, 0, want.size());
  g.ops->copy2d(g.stream, dd, 32, ds, 40, 24, 7);
  std::vector<unsigned char> got(want.size());
  g.mem.read(got.data(), dd, got.size());
  EXPECT_EQ(got, want);
  g.ops->free(0, ds);
  g.ops->free(0, dd);
  // The reduce kernel: every real dtype and op, bit-identical to reduce_pair.
  const int64_t n = 1000;
  for (DType dt :
       {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64,
        DType::UInt32, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    const size_t b = static_cast<size_t>(n * itemsize(dt));
    auto a = bytes(b, 1), c = bytes(b, 2);
    if (dt == DType::Bool)
      for (size_t i = 0; i < b; ++i) a[i] &= 1, c[i] &= 1;
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod}) {
      std::vector<unsigned char> host(b), dev(b);
      reduce_pair(dt, op, host.data(), a.data(), c.data(), n);
      void* da = g.ops->alloc(0, b);
      void* dc = g.ops->alloc(0, b);
      g.mem.write(da, a.data(), b);
      g.mem.write(dc, c.data(), b);
      g.ops->reduce(g.stream, da, da, dc, n, dt, static_cast<int>(op));
      g.mem.read(dev.data(), da, b);
      EXPECT_EQ(dev, host) << dtype_name(dt) << " " << reduce_op_name(op);
      g.ops->free(0, da);
      g.ops->free(0, dc);
    }
  }
}

TEST(CudaMemory, DeviceGroupMatchesTheReferenceGroup) {
  TSR_NEED_GPU();
  const int n = 8;
  const int64_t count = 100003;
  std::vector<Gpu> gpus(n);
  std::vector<DeviceRank> ranks;
  for (auto& g : gpus) ranks.push_back({g.mem, 0});
  auto dev = make_device_group(ranks);
  auto ref = make_reference_group(n);
  const size_t b = static_cast<size_t>(count) * 4;
  std::vector<std::vector<unsigned char>> in(n), want(n, std::vector<unsigned char>(b)),
      got(n, std::vector<unsigned char>(b));
  for (int r = 0; r < n; ++r) in[r] = bytes(b, 10 + r);
  std::vector<std::thread> t;
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      ref->all_reduce(r, in[r].data(), want[r].data(), count, DType::Float32, ReduceOp::Sum);
    });
  for (auto& th : t) th.join();
  t.clear();
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      cuda_accelerator()->bind(0);
      const DeviceMemory& m = gpus[r].mem;
      void* d = m.ops->alloc(0, b);
      m.write(d, in[r].data(), b);
      dev->all_reduce(r, d, d, count, DType::Float32, ReduceOp::Sum);  // in place
      m.read(got[r].data(), d, b);
      m.ops->free(0, d);
    });
  for (auto& th : t) th.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(got[r], want[r]) << "rank " << r;
}

}  // namespace
}  // namespace tsr::detail
