#pragma once
// What core needs from the cross-process backend (comm/mpi/, or its no_mpi.cpp stub
// that raises): start and stop, the groups whose devices span processes, and small
// control exchanges on the calling thread (fingerprints, multihost utilities).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tsr/comm/group.h"

namespace tsr::detail {

/** Who this process is, as the launcher says. */
struct ProcessWorld {
  int index = 0; /**< MPI_COMM_WORLD rank */
  int count = 1; /**< MPI_COMM_WORLD size */
};

/** Starts MPI (MPI_THREAD_MULTIPLE, errors returned); BackendError without MPI. */
ProcessWorld process_backend_start(int64_t timeout_ms);
/** A barrier over every process, then MPI_Finalize; skips the barrier once a peer
 *  was lost. */
void process_backend_stop();
/** The group whose rank r is device device_ids[r]; device d lives on process
 *  d / devices_per_process. Only this process's ranks call it. */
std::shared_ptr<GroupImpl> make_process_group(const std::vector<int>& device_ids,
                                              int devices_per_process, int this_process);
/** Every process of `processes` (sorted, this one among them) passes its bytes; each
 *  gets all of them, in that order. On the calling thread, in program order; `op`
 *  names the caller in a CommError (timeout, lost peer). */
std::vector<std::string> process_allgather(const std::vector<int>& processes,
                                           const std::string& bytes, const char* op);
/** Tells every other process that this one is failing (best effort, never throws),
 *  so that they raise CommError naming it instead of waiting for the timeout. */
void process_backend_abort(const std::string& why) noexcept;

}  // namespace tsr::detail
