// Built when TSR_WITH_MPI is OFF: the cross-process backend reports that it is absent.
#include "tsr/comm/backends.h"
#include "tsr/comm/process.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {
[[noreturn]] void absent(const char* op) {
  throw BackendError(std::string("[") + op +
                     "] this build of Tessera has no MPI backend. Got TSR_WITH_MPI=OFF; "
                     "expected a build with MPI for many processes. Install libopenmpi-dev "
                     "(scripts/setup.sh) and configure with -DTSR_WITH_MPI=ON.");
}
}  // namespace

bool mpi_is_available() { return false; }
ProcessWorld process_backend_start(int64_t) { absent("distributed.initialize"); }
void process_backend_stop() {}
void process_backend_abort(const std::string&) noexcept {}
std::shared_ptr<GroupImpl> make_process_group(const std::vector<int>&, int, int) {
  absent("collective");
}
std::vector<std::string> process_allgather(const std::vector<int>&, const std::string&,
                                           const char* op) {
  absent(op);
}

}  // namespace tsr::detail
