// CUDA fft passes and their launchers (launch.h): each output bin is a direct sum over
// its line (a DFT, not a fast transform: correct for every length, O(n^2) per line),
// accumulated in double with twiddles exp(-+2 pi i (j t mod n) / n) from the reduced
// integer phase, so the result is at least as accurate as the CPU's KISS FFT. Complex
// values are (real, imaginary) pairs of R.
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// dst's lines along one axis (count lines of len, element stride `stride`) = the
// transforms of src's, times scale.
template <typename R>
__global__ void dft_k(const R* src, R* dst, int64_t count, int64_t len, int64_t stride,
                      bool inverse, double scale) {
  TSR_CUDA_FOR(i, count * len) {
    const int64_t l = i / len, j = i - l * len;
    const int64_t s0 = (l / stride) * len * stride + l % stride;
    double re = 0, im = 0;
    int64_t ph = 0;  // j t mod len
    for (int64_t t = 0; t < len; ++t) {
      double sn, cs;
      sincospi(2.0 * static_cast<double>(ph) / static_cast<double>(len), &sn, &cs);
      if (!inverse) sn = -sn;
      const R* z = src + 2 * (s0 + t * stride);
      const double zr = z[0], zi = z[1];
      re += zr * cs - zi * sn;
      im += zr * sn + zi * cs;
      ph += j;
      if (ph >= len) ph -= len;
    }
    R* o = dst + 2 * (s0 + j * stride);
    o[0] = static_cast<R>(re * scale);
    o[1] = static_cast<R>(im * scale);
  }
}

// RFFT's last axis: the first m bins of each real line of n.
template <typename R>
__global__ void rdft_k(const R* x, R* out, int64_t lines, int64_t n, int64_t m) {
  TSR_CUDA_FOR(i, lines * m) {
    const int64_t l = i / m, j = i - l * m;
    double re = 0, im = 0;
    int64_t ph = 0;
    for (int64_t t = 0; t < n; ++t) {
      double sn, cs;
      sincospi(2.0 * static_cast<double>(ph) / static_cast<double>(n), &sn, &cs);
      const double v = x[l * n + t];
      re += v * cs;
      im -= v * sn;
      ph += j;
      if (ph >= n) ph -= n;
    }
    out[2 * i] = static_cast<R>(re);
    out[2 * i + 1] = static_cast<R>(im);
  }
}

// IRFFT's last axis: each line of m bins extended to its Hermitian spectrum of n, the
// real part of its inverse transform, times scale.
template <typename R>
__global__ void irdft_k(const R* h, R* out, int64_t lines, int64_t m, int64_t n, double scale) {
  TSR_CUDA_FOR(i, lines * n) {
    const int64_t l = i / n, t = i - l * n;
    double re = 0;
    int64_t ph = 0;  // j t mod n
    for (int64_t j = 0; j < n; ++j) {
      double sn, cs;
      sincospi(2.0 * static_cast<double>(ph) / static_cast<double>(n), &sn, &cs);
      const R* z = h + 2 * (l * m + (j < m ? j : n - j));
      const double zr = z[0], zi = j < m ? z[1] : -z[1];
      re += zr * cs - zi * sn;
      ph += t;
      if (ph >= n) ph -= n;
    }
    out[i] = static_cast<R>(re * scale);
  }
}

}  // namespace

void fft_pass_launch(DType c, const void* src, void* dst, int64_t count, int64_t len,
                     int64_t stride, bool inverse, double scale, cudaStream_t s) {
  if (count * len == 0) return;
  Launch l = launch_1d(count * len);
  if (c == DType::Complex128)
    dft_k<double><<<l.blocks, l.threads, 0, s>>>(static_cast<const double*>(src),
                                                 static_cast<double*>(dst), count, len, stride,
                                                 inverse, scale);
  else
    dft_k<float><<<l.blocks, l.threads, 0, s>>>(static_cast<const float*>(src),
                                                static_cast<float*>(dst), count, len, stride,
                                                inverse, scale);
  check(cudaGetLastError(), "fft", "kernel launch");
}

void rfft_last_launch(DType c, const void* x, void* out, int64_t lines, int64_t n, int64_t m,
                      cudaStream_t s) {
  if (lines * m == 0) return;
  Launch l = launch_1d(lines * m);
  if (c == DType::Complex128)
    rdft_k<double><<<l.blocks, l.threads, 0, s>>>(static_cast<const double*>(x),
                                                  static_cast<double*>(out), lines, n, m);
  else
    rdft_k<float><<<l.blocks, l.threads, 0, s>>>(static_cast<const float*>(x),
                                                 static_cast<float*>(out), lines, n, m);
  check(cudaGetLastError(), "fft", "kernel launch");
}

void irfft_last_launch(DType c, const void* h, void* out, int64_t lines, int64_t m, int64_t n,
                       double scale, cudaStream_t s) {
  if (lines * n == 0) return;
  Launch l = launch_1d(lines * n);
  if (c == DType::Complex128)
    irdft_k<double><<<l.blocks, l.threads, 0, s>>>(static_cast<const double*>(h),
                                                   static_cast<double*>(out), lines, m, n, scale);
  else
    irdft_k<float><<<l.blocks, l.threads, 0, s>>>(static_cast<const float*>(h),
                                                  static_cast<float*>(out), lines, m, n, scale);
  check(cudaGetLastError(), "fft", "kernel launch");
}

}  // namespace tsr::detail::cuda
