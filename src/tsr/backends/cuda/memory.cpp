// The CUDA platform's memory and streams for the runtime (runtime/accelerator.h).
// Plain cudaMalloc under the runtime's caching allocator: steady-state dispatch
// reuses blocks and never calls the driver.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tsr/backends/cuda/cuda_util.h"
#include "tsr/backends/cuda/launch.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
namespace cuda {
namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

void bind(int gpu) { check(cudaSetDevice(gpu), "device", "cudaSetDevice"); }

void* make_stream(int gpu) {
  bind(gpu);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "init", "cudaStreamCreate");
  return s;
}

void sync(void* s) {
  check(cudaStreamSynchronize(as_stream(s)), "device", "cudaStreamSynchronize");
}

void* alloc(int gpu, size_t n) {
  bind(gpu);
  void* p = nullptr;
  if (cudaMalloc(&p, n) != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky; the allocator retries
    return nullptr;
  }
  return p;
}

void release(int gpu, void* p) {
  bind(gpu);
  check(cudaFree(p), "allocator", "cudaFree");
}

// Host transfers of 1 MiB or more go through two pinned chunks per stream: the host
// copies chunk k between pageable memory and one pinned buffer while the DMA engine
// moves chunk k - 1 through the other (pageable cudaMemcpy stages through a driver
// buffer synchronously, without that overlap). Smaller ones go direct.
constexpr size_t kStagedFrom = size_t{1} << 20;
constexpr size_t kChunk = size_t{8} << 20;

struct Staging {
  std::mutex mu;  // one transfer at a time per stream
  void* buf[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};  // the DMA through buf[i] has finished
  explicit Staging(cudaStream_t s) {
    int dev = 0;
    check(cudaStreamGetDevice(s, &dev), "transfer", "cudaStreamGetDevice");
    bind(dev);
    for (int i = 0; i < 2; ++i) {
      check(cudaHostAlloc(&buf[i], kChunk, cudaHostAllocPortable), "transfer", "cudaHostAlloc");
      check(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming), "transfer",
            "cudaEventCreate");
      check(cudaEventRecord(done[i], s), "transfer", "cudaEventRecord");
    }
  }
};

// The stream's staging (made on first use; streams live as long as the runtime).
Staging& staging(cudaStream_t s) {
  static std::mutex mu;
  static std::map<cudaStream_t, std::unique_ptr<Staging>> all;
  std::lock_guard<std::mutex> lock(mu);
  auto& p = all[s];
  if (!p) p = std::make_unique<Staging>(s);
  return *p;
}

// A transfer under kStagedFrom bytes, straight from / to pageable memory and synced
// (the async call returns once the bytes are staged, but only the sync makes that a
// guarantee for every driver version); false for larger ones.
bool direct(void* s, void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (n >= kStagedFrom) return false;
  check(cudaMemcpyAsync(dst, src, n, kind, as_stream(s)), "transfer",
        kind == cudaMemcpyDeviceToHost ? "cudaMemcpyAsync(DeviceToHost)"
                                       : "cudaMemcpyAsync(HostToDevice)");
  sync(s);
  return true;
}

void to_host(void* s, void* dst, const void* src, size_t n) {
  if (direct(s, dst, src, n, cudaMemcpyDeviceToHost)) return;
  const cudaStream_t st = as_stream(s);
  Staging& g = staging(st);
  std::lock_guard<std::mutex> lock(g.mu);
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  // Chunk k's DMA is queued before chunk k - 1 is copied out of its pinned buffer.
  size_t prev_off = 0, prev_m = 0;
  int k = 0;
  for (size_t off = 0; off < n; off += kChunk, ++k) {
    const int i = k % 2;
    const size_t m = std::min(kChunk, n - off);
    check(cudaMemcpyAsync(g.buf[i], in + off, m, cudaMemcpyDeviceToHost, st), "transfer",
          "cudaMemcpyAsync(DeviceToHost)");
    check(cudaEventRecord(g.done[i], st), "transfer", "cudaEventRecord");
    if (k > 0) {
      check(cudaEventSynchronize(g.done[1 - i]), "transfer", "cudaEventSynchronize");
      std::memcpy(out + prev_off, g.buf[1 - i], prev_m);
    }
    prev_off = off;
    prev_m = m;
  }
  check(cudaEventSynchronize(g.done[(k - 1) % 2]), "transfer", "cudaEventSynchronize");
  std::memcpy(out + prev_off, g.buf[(k - 1) % 2], prev_m);
}

// Returns once src is copied out (into a pinned chunk): the last DMAs may still run,
// and the next transfer on the stream waits for them before reusing the chunks.
void to_device(void* s, void* dst, const void* src, size_t n) {
  if (direct(s, dst, src, n, cudaMemcpyHostToDevice)) return;
  const cudaStream_t st = as_stream(s);
  Staging& g = staging(st);
  std::lock_guard<std::mutex> lock(g.mu);
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  int k = 0;
  for (size_t off = 0; off < n; off += kChunk, ++k) {
    const int i = k % 2;
    const size_t m = std::min(kChunk, n - off);
    check(cudaEventSynchronize(g.done[i]), "transfer", "cudaEventSynchronize");
    std::memcpy(g.buf[i], in + off, m);
    check(cudaMemcpyAsync(out + off, g.buf[i], m, cudaMemcpyHostToDevice, st), "transfer",
          "cudaMemcpyAsync(HostToDevice)");
    check(cudaEventRecord(g.done[i], st), "transfer", "cudaEventRecord");
  }
}

// cudaMemcpyDefault: the pointers may be on two GPUs (unified addressing finds them).
void copy(void* s, void* dst, const void* src, size_t n) {
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, as_stream(s)), "transfer",
        "cudaMemcpyAsync(DeviceToDevice)");
}

void copy2d(void* s, void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
            size_t height) {
  check(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault, as_stream(s)),
        "transfer", "cudaMemcpy2DAsync(DeviceToDevice)");
}

void reduce(void* s, void* dst, const void* a, const void* b, int64_t n, DType dt, int op) {
  combine_launch(dst, a, b, n, dt, op, as_stream(s));
}

void fill(void* s, void* dst, int byte, size_t n) {
  check(cudaMemsetAsync(dst, byte, n, as_stream(s)), "transfer", "cudaMemsetAsync");
}

int count() { return gpu_count(); }
std::string why_none() { return no_gpu_reason(); }

}  // namespace
}  // namespace cuda

const AcceleratorOps* cuda_accelerator() {
  static const AcceleratorOps ops{"cuda",          cuda::count, cuda::why_none, cuda::make_stream,
                                  cuda::sync,      cuda::alloc, cuda::release,  cuda::to_host,
                                  cuda::to_device, cuda::copy,  cuda::fill,     cuda::bind,
                                  cuda::copy2d,    cuda::reduce};
  return &ops;
}

}  // namespace tsr::detail
