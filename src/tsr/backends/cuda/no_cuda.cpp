// Built when TSR_WITH_CUDA is OFF: there are no CUDA devices.
#include "tsr/comm/backends.h"

namespace tsr::detail {
bool cuda_is_available() { return false; }
}  // namespace tsr::detail
