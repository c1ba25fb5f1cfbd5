// Built with TSR_CUDA: NCCL is linked (from the toolkit's tree). The collectives
// between GPUs go through it once CUDA devices join the runtime (design 0025 §5).
#include <nccl.h>

#include "tsr/comm/backends.h"

namespace tsr::detail {
bool nccl_is_available() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess && v > 0;
}
}  // namespace tsr::detail
