// The CUDA platform's memory and streams for the runtime (runtime/accelerator.h).
// Plain cudaMalloc under the runtime's caching allocator: steady-state dispatch
// reuses blocks and never calls the driver.
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

void to_host(void* s, void* dst, const void* src, size_t n) {
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, as_stream(s)), "transfer",
        "cudaMemcpyAsync(DeviceToHost)");
  sync(s);
}

// Pageable host memory: the call returns once the bytes are staged, but only the
// sync makes that a guarantee for every driver version.
void to_device(void* s, void* dst, const void* src, size_t n) {
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, as_stream(s)), "transfer",
        "cudaMemcpyAsync(HostToDevice)");
  sync(s);
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
