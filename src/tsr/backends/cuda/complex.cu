// CUDA kernels of lax's complex-part primitives and their launchers (launch.h): real,
// imag and conj read one part (or flip the imaginary sign); complex(x, y) broadcasts
// its parts as a binary op's operands. A complex element is two reals, real first, so
// the kernels work on the real type R (float or double) in pairs.
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// kind 0: out[i] = re, 1: out[i] = im, 2: (re, -im) (conj: a sign flip, as std::conj).
template <typename R>
__global__ void complex_part_k(int kind, const R* z, R* out, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    if (kind == 2) {
      out[2 * i] = z[2 * i];
      out[2 * i + 1] = -z[2 * i + 1];
    } else {
      out[i] = z[2 * i + kind];
    }
  }
}

template <typename R>
__global__ void make_complex_k(const R* x, const R* y, R* out, Strides st, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    out[2 * i] = x[offset_of(st, 0, i)];
    out[2 * i + 1] = y[offset_of(st, 1, i)];
  }
}

}  // namespace

void complex_part_launch(int kind, DType zt, const void* z, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  if (zt == DType::Complex128)
    complex_part_k<double><<<l.blocks, l.threads, 0, s>>>(kind, static_cast<const double*>(z),
                                                          static_cast<double*>(out), n);
  else if (zt == DType::Complex64)
    complex_part_k<float><<<l.blocks, l.threads, 0, s>>>(kind, static_cast<const float*>(z),
                                                         static_cast<float*>(out), n);
  else
    unsupported("real / imag / conj", zt);
  check(cudaGetLastError(), "complex part", "kernel launch");
}

void make_complex_launch(DType zt, const void* x, const void* y, void* out, const Strides& st,
                         int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  if (zt == DType::Complex128)
    make_complex_k<double><<<l.blocks, l.threads, 0, s>>>(static_cast<const double*>(x),
                                                          static_cast<const double*>(y),
                                                          static_cast<double*>(out), st, n);
  else if (zt == DType::Complex64)
    make_complex_k<float><<<l.blocks, l.threads, 0, s>>>(static_cast<const float*>(x),
                                                         static_cast<const float*>(y),
                                                         static_cast<float*>(out), st, n);
  else
    unsupported("complex", zt);
  check(cudaGetLastError(), "complex", "kernel launch");
}

}  // namespace tsr::detail::cuda
