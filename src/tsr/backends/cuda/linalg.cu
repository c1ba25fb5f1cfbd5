// CUDA cholesky and its launcher (launch.h): one block per matrix, LAPACK's unblocked
// potf2 order, the CPU kernel's small_cholesky (each column's pivot in one thread, the
// entries below it across the block): bit-identical to the CPU up to its 16 x 16
// cutoff, LAPACK's blocked rounding beyond. A matrix that is not positive definite
// gives NaN in the lower triangle, as the CPU kernel.
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// Row-major lower factor of x (matrix blockIdx.x) into out; the upper triangle zero.
template <typename T>
__global__ void cholesky_k(const T* x, T* out, int64_t n) {
  __shared__ int failed;
  __shared__ T pivot;
  const int64_t nn = n * n;
  const T* a = x + static_cast<int64_t>(blockIdx.x) * nn;
  T* l = out + static_cast<int64_t>(blockIdx.x) * nn;
  if (threadIdx.x == 0) failed = 0;
  for (int64_t i = threadIdx.x; i < nn; i += blockDim.x) l[i] = a[i];
  __syncthreads();
  for (int64_t j = 0; j < n; ++j) {
    if (threadIdx.x == 0) {
      T d = l[j * n + j];
      for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
      if (!(d > T(0))) {  // also NaN, as potrf
        failed = 1;
      } else {
        d = sqrt(d);
        l[j * n + j] = d;
        pivot = d;
      }
    }
    __syncthreads();
    if (failed) break;  // the same answer in every thread
    for (int64_t i = j + 1 + threadIdx.x; i < n; i += blockDim.x) {
      T v = l[i * n + j];
      for (int64_t k = 0; k < j; ++k) v -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = v / pivot;
    }
    __syncthreads();
  }
  for (int64_t q = threadIdx.x; q < nn; q += blockDim.x) {
    int64_t i = q / n, j = q - i * n;
    if (j > i)
      l[q] = T(0);
    else if (failed)
      l[q] = ops::qnan<T>();
  }
}

}  // namespace

void cholesky_launch(DType t, const void* x, void* out, int64_t batch, int64_t n, cudaStream_t s) {
  if (batch == 0 || n == 0) return;
  unsigned threads = n >= 256 ? 256u : (n > 32 ? static_cast<unsigned>((n + 31) / 32 * 32) : 32u);
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {  // a grid takes at most 65535 matrices
    unsigned nb = static_cast<unsigned>(batch - b0 < 65535 ? batch - b0 : 65535);
    if (t == DType::Float64)
      cholesky_k<double><<<nb, threads, 0, s>>>(static_cast<const double*>(x) + b0 * n * n,
                                                static_cast<double*>(out) + b0 * n * n, n);
    else if (t == DType::Float32)
      cholesky_k<float><<<nb, threads, 0, s>>>(static_cast<const float*>(x) + b0 * n * n,
                                               static_cast<float*>(out) + b0 * n * n, n);
    else
      unsupported("cholesky", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "cholesky", "kernel launch");
}

}  // namespace tsr::detail::cuda
