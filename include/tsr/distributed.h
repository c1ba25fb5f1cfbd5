#pragma once
/** Many processes (multi-controller SPMD, as jax.distributed): every process runs the
 *  same program over a global device list; each holds only its own devices' shards.
 *  Launch with `mpirun -np N prog` and call tsr::distributed::initialize() first. */
#include <cstdint>
#include <vector>

#include "tsr/device.h"

namespace tsr::distributed {

/** Options for initialize(); 0 / -1 mean "from the launcher's environment". */
struct Options {
  /** Number of processes; 0: MPI_COMM_WORLD's size. */
  int num_processes = 0;
  /** This process's index; -1: its MPI_COMM_WORLD rank. */
  int process_id = -1;
  /** Devices of this process; 0: TSR_NUM_CPU_DEVICES, else 8. Equal on every process. */
  int local_device_count = 0;
  /** Seconds a cross-process operation waits for its peers before a CommError; 0:
   *  TSR_COMM_TIMEOUT, else 60. */
  double timeout_s = 0;
};

/** Joins the processes of an `mpirun` launch (MPI) and starts this process's devices.
 *  Must come before any other Tessera call (RuntimeError otherwise), once (RuntimeError
 *  on a second call until shutdown()); ValueError for counts that disagree with MPI's
 *  or between processes; BackendError when this build has no MPI. */
void initialize(const Options& options = {});
/** Leaves the process group (a barrier, then MPI_Finalize). Does nothing when
 *  initialize() was not called. */
void shutdown();
/** True between initialize() and shutdown(). */
bool is_initialized();

}  // namespace tsr::distributed

namespace tsr {

/** This process's index (0 without distributed::initialize). */
int process_index();
/** Number of processes (1 without distributed::initialize). */
int process_count();
/** [0, process_count()). */
std::vector<int> process_indices();
/** The devices of process `process` (this process by default), in id order; ValueError
 *  for an unknown index. */
std::vector<Device> local_devices(int process = -1);
/** Number of devices of this process. */
int local_device_count();

}  // namespace tsr
