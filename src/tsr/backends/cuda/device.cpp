// CUDA discovery and errors. Without a driver (the build machines) every query
// answers "no GPU" instead of failing, so the library and its tests run there.
#include <algorithm>
#include <string>

#include "tsr/backends/cuda/cuda_util.h"
#include "tsr/comm/backends.h"
#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
bool cuda_is_available() { return true; }
}  // namespace tsr::detail

namespace tsr::detail::cuda {

void check(cudaError_t e, const char* op, const char* what) {
  if (e == cudaSuccess) return;
  throw BackendError(std::string("[") + op + "] CUDA call " + what + " failed: " +
                     cudaGetErrorString(e) + " (code " + std::to_string(static_cast<int>(e)) +
                     "). Got that error from the CUDA runtime; expected success. Check the GPU "
                     "with nvidia-smi, or run on the CPU platform.");
}

namespace {
struct Discovery {
  int count = 0;
  std::string why;
};
const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery r;
    cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      r.count = 0;
      r.why = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
      (void)cudaGetLastError();  // clear the sticky error so later calls are clean
    } else if (r.count == 0) {
      r.why = "no CUDA device";
    }
    return r;
  }();
  return d;
}
}  // namespace

int gpu_count() { return discovery().count; }
const char* no_gpu_reason() { return discovery().why.c_str(); }

int virtual_devices_per_gpu() { return accelerator_virtual_devices(); }

Launch launch_1d(int64_t n, unsigned threads, unsigned max_blocks) {
  Launch l;
  l.threads = std::max(1u, threads);
  int64_t need = (std::max<int64_t>(n, 1) + l.threads - 1) / l.threads;
  l.blocks = static_cast<unsigned>(std::min<int64_t>(need, std::max(1u, max_blocks)));
  return l;
}

}  // namespace tsr::detail::cuda
