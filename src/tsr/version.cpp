#include "tsr/version.h"

namespace tsr {

const char* version() { return TSR_VERSION_STRING; }

}  // namespace tsr
