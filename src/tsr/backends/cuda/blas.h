#pragma once
// The cuBLAS handle and status check that the cuBLAS-backed kernels share (dot.cpp,
// linalg.cpp); host side only.
#include <cublas_v2.h>

#include "tsr/backends/cuda/cuda_util.h"

namespace tsr::detail::cuda {

/** BackendError "[prim] cuBLAS call `what` failed: ..." unless st is success. */
void check_blas(cublasStatus_t st, const char* prim, const char* what);
/** The cuBLAS handle of the current GPU and stream s (made on first use, bound to s):
 *  handles are not to be shared across streams that run at once. */
cublasHandle_t blas_handle(cudaStream_t s);

}  // namespace tsr::detail::cuda
