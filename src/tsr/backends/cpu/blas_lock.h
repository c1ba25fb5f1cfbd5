#pragma once
// OpenBLAS (GEMM and LAPACK) thread sharing between simulated devices.
#include <mutex>
#include <shared_mutex>

extern "C" void openblas_set_num_threads(int num_threads);

namespace tsr::detail::cpu {

/** OpenBLAS threads for one call while `busy_devices` devices run the step at once. */
int blas_threads(int busy_devices);

/** Held around an OpenBLAS call on `n` threads. OpenBLAS's thread count is global and
 *  its thread server is not safe for concurrent multi-threaded calls: a multi-threaded
 *  call runs alone (exclusive lock), single-threaded ones run side by side (shared
 *  lock) while the global count is 1. Devices' tasks and the caller (inline dispatch)
 *  may both take it. */
class BlasLock {
 public:
  /** Takes the lock for a call on `n` threads (setting OpenBLAS's count). */
  explicit BlasLock(int n);

 private:
  std::shared_lock<std::shared_mutex> shared_;
  std::unique_lock<std::shared_mutex> exclusive_;
};

}  // namespace tsr::detail::cpu
