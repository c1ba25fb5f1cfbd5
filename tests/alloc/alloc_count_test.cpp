// Heap allocations per cached eager op and per jit call, counted by replacing the
// global operator new in this binary (its own, so no other suite is affected).
// A count, not a time: dispatch must not regress into per-op malloc traffic.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "tsr/tsr.h"

namespace {
std::atomic<long> g_allocs{0};
}  // namespace

// GCC pairs the replaced operator new with free() below and warns; they do match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace tsr {
namespace {

constexpr int kOps = 2000;

// Allocations per call of f, after warming every cache f touches.
template <typename F>
double allocs_per_call(F&& f, Array& y) {
  for (int i = 0; i < 256; ++i) {  // the same pattern as below: queues reach their depth
    f();
    if (i % 64 == 63) y.block_until_ready();
  }
  y.block_until_ready();
  long before = g_allocs.load();
  for (int i = 0; i < kOps; ++i) {
    f();
    if (i % 64 == 63) y.block_until_ready();  // keep the queues short, as a program would
  }
  y.block_until_ready();
  return static_cast<double>(g_allocs.load() - before) / kOps;
}

class AllocCount : public ::testing::TestWithParam<int> {};

// An eager op's result: the argument list, the result list, the Array, its buffer
// list. Nothing per device (buffers and tasks come from pools).
constexpr double kEagerAllocs = 4;
// A jit call adds the argument and result trees (flatten and unflatten).
constexpr double kJitAllocs = 10;

TEST_P(AllocCount, EagerBinaryOp) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  Array x = device_put(ones({8 * GetParam()}), P("x"));
  Array y = device_put(zeros({8 * GetParam()}), P("x"));
  EXPECT_LE(allocs_per_call([&] { y = add(y, x); }, y), kEagerAllocs);
}

TEST_P(AllocCount, EagerUnaryOpReplicated) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  Array y = device_put(zeros({8}), P());
  EXPECT_LE(allocs_per_call([&] { y = tanh(y); }, y), kEagerAllocs);
}

TEST_P(AllocCount, JitCall) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  auto f = jit([](const Array& a, const Array& b) { return a * 2.0f + b; });
  Array x = device_put(ones({8 * GetParam()}), P("x"));
  Array y = device_put(zeros({8 * GetParam()}), P("x"));
  EXPECT_LE(allocs_per_call([&] { y = f(y, x); }, y), kJitAllocs);
}

INSTANTIATE_TEST_SUITE_P(Devices, AllocCount, ::testing::Values(1, 2, 8),
                         [](const auto& info) { return std::to_string(info.param) + "dev"; });

}  // namespace
}  // namespace tsr
