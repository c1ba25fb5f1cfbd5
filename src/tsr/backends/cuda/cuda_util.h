#pragma once
// Host-side helpers of the CUDA backend: error checks, discovery, launch geometry.
// Compiled by both g++ (.cpp) and nvcc (.cu); nothing here needs a GPU to compile.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tsr::detail::cuda {

/** BackendError "[op] CUDA call `what` failed: <CUDA's text> (code N). ..." unless
 *  e is cudaSuccess. */
void check(cudaError_t e, const char* op, const char* what);

/** A stream-ordered scratch buffer, freed in stream order when it goes out of scope. */
struct Scratch {
  void* p = nullptr; /**< the buffer (null until alloc) */
  cudaStream_t s;    /**< the stream it is ordered on */
  const char* op;    /**< the primitive, for an allocation error */
  /** No buffer yet. */
  explicit Scratch(cudaStream_t st, const char* op_name = "scratch") : s(st), op(op_name) {}
  /** Allocates `bytes` (nothing for 0). */
  void alloc(size_t bytes) {
    if (bytes) check(cudaMallocAsync(&p, bytes, s), op, "cudaMallocAsync");
  }
  ~Scratch() {
    if (p) (void)cudaFreeAsync(p, s);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

/** Physical GPUs this process sees: 0 without a driver or a device (never an error). */
int gpu_count();
/** Why gpu_count() is 0, for a test's skip line ("no CUDA driver: ..."), or "". */
const char* no_gpu_reason();
/** TSR_CUDA_VIRTUAL_DEVICES (1 to 64, default 1): devices each GPU presents. */
int virtual_devices_per_gpu();

/** A 1-D launch: `blocks` of `threads` covering n elements, with a grid-stride loop
 *  when n needs more blocks than `max_blocks` (resident blocks, not all of them). */
struct Launch {
  unsigned blocks = 1;  /**< grid size (at least 1, even for n == 0) */
  unsigned threads = 1; /**< block size */
};
/** The launch for n elements: `threads` per block, at most `max_blocks` blocks. */
Launch launch_1d(int64_t n, unsigned threads = 256, unsigned max_blocks = 65536);

}  // namespace tsr::detail::cuda
