// Built when TSR_CUDA is OFF: the NCCL backend reports that it is absent.
#include "tsr/comm/backends.h"

namespace tsr::detail {
bool nccl_is_available() { return false; }
}  // namespace tsr::detail
