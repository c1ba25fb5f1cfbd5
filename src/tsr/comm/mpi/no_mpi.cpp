// Built when TSR_WITH_MPI is OFF: the MPI backend reports that it is absent.
#include "tsr/comm/backends.h"

namespace tsr::detail {
bool mpi_is_available() { return false; }
}  // namespace tsr::detail
