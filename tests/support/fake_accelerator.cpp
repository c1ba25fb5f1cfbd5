#include "support/fake_accelerator.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/comm/reduce_kernels.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::testing {
namespace {

using detail::KernelArgs;

// Bit 62 set makes a user-space address non-canonical on x86-64 (and outside the
// address space elsewhere): a host load or store through it faults.
constexpr uintptr_t kTag = uintptr_t{1} << 62;
std::atomic<long long> g_bytes{0};
int g_gpus = 1;

void* tag(void* p) {
  return p ? reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) | kTag) : p;
}
// Idempotent: the CPU fused kernel calls its members' (fake) kernels on host pointers.
const void* untag(const void* p) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) & ~kTag);
}
void* untag(void* p) { return const_cast<void*>(untag(static_cast<const void*>(p))); }

// Device memory, 64-byte aligned, with its size just before it (for the byte count).
void* alloc(int, size_t n) {
  auto* base = static_cast<unsigned char*>(std::aligned_alloc(64, 64 + ((n + 63) & ~size_t{63})));
  if (!base) return nullptr;
  std::memcpy(base, &n, sizeof n);
  g_bytes += static_cast<long long>(n);
  return tag(base + 64);
}
void release(int, void* p) {
  auto* base = static_cast<unsigned char*>(untag(p)) - 64;
  size_t n = 0;
  std::memcpy(&n, base, sizeof n);
  g_bytes -= static_cast<long long>(n);
  std::free(base);
}

int stream_token = 0;
void* make_stream(int) { return &stream_token; }
void sync(void*) {}
void bind(int) {}
void to_host(void*, void* dst, const void* src, size_t n) { std::memcpy(dst, untag(src), n); }
void to_device(void*, void* dst, const void* src, size_t n) { std::memcpy(untag(dst), src, n); }
void copy(void*, void* dst, const void* src, size_t n) { std::memcpy(untag(dst), untag(src), n); }
void fill(void*, void* dst, int byte, size_t n) { std::memset(untag(dst), byte, n); }
void copy2d(void*, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
            size_t height) {
  for (size_t r = 0; r < height; ++r)
    std::memcpy(static_cast<char*>(untag(dst)) + r * dpitch,
                static_cast<const char*>(untag(src)) + r * spitch, width);
}
void reduce(void*, void* dst, const void* a, const void* b, int64_t n, DType dt, int op) {
  detail::reduce_pair(dt, static_cast<detail::ReduceOp>(op), untag(dst), untag(a), untag(b), n);
}
int count() { return g_gpus; }
std::string why_none() { return "the fake accelerator has no devices"; }

// Every fake kernel: the CPU kernel of the same primitive on the untagged blocks.
void kernel(const KernelArgs& a) {
  std::vector<const void*> in(a.in->size());
  std::vector<void*> out(a.out->size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = untag(a.in_ptr[i]);
  for (size_t i = 0; i < out.size(); ++i) out[i] = untag(a.out_ptr[i]);
  KernelArgs b = a;
  b.in_ptr = in.data();
  b.out_ptr = out.data();
  b.stream = nullptr;
  detail::find_kernel(a.prim->name(), "cpu")(b);
}

}  // namespace

const detail::AcceleratorOps kFakeOps{"fake", count,   why_none, make_stream, sync,
                                      alloc,  release, to_host,  to_device,   copy,
                                      fill,   bind,    copy2d,   reduce};

void install_fake_accelerator(int gpus) {
  const detail::AcceleratorOps& ops = *detail::fake_accelerator_ops();
  g_gpus = gpus;
  for (const std::string& name : detail::kernel_names("cpu"))
    detail::register_kernel(name.c_str(), "fake", kernel);
  detail::set_accelerator(Platform::CUDA, &ops);
}

long long fake_accelerator_bytes() { return g_bytes.load(); }

}  // namespace tsr::testing

namespace tsr::detail {
const AcceleratorOps* fake_accelerator_ops() { return &testing::kFakeOps; }
}  // namespace tsr::detail
