#pragma once
// Which optional backends this build has; each is a real file or a no_*.cpp stub.
namespace tsr::detail {
/** True when the library was built with the MPI backend. */
bool mpi_is_available();
/** True when the library was built with the NCCL backend. */
bool nccl_is_available();
/** True when the library was built with CUDA kernels. */
bool cuda_is_available();
}  // namespace tsr::detail
