// Built when TSR_CUDA is OFF (or no nvcc is found): there are no CUDA devices.
#include "tsr/backends/kernel.h"
#include "tsr/comm/backends.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
bool cuda_is_available() { return false; }
void register_cuda_kernels() {}
const AcceleratorOps* cuda_accelerator() { return nullptr; }
}  // namespace tsr::detail
