// lax.fft on the CPU: KISS FFT's C++ template (Debian libkissfft-dev, kissfft.hh;
// mixed radix, any length) for complex64 and complex128. A multi-dimensional transform
// is one pass of 1-D transforms per axis; the lines of a pass are split between the
// kernel's threads. RFFT keeps n / 2 + 1 bins (KISS's packed real transform for an even
// n, a complex transform of the line for an odd one);
// IRFFT rebuilds the Hermitian line and keeps the real part (numpy's c2r ignores the
// imaginary parts of the DC and Nyquist bins the same way).
#include <kissfft/kissfft.hh>

#include <complex>
#include <map>
#include <memory>
#include <vector>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/fft.h"

namespace tsr::detail::cpu {
namespace {

using fft::FftType;

// Plans (twiddles and factors) are cached per thread, length and direction: a plan's
// const transform() still writes a scratch buffer for radices above 5, so threads
// cannot share one.
template <typename R>
const kissfft<R>& plan(int64_t n, bool inverse) {
  thread_local std::map<std::pair<int64_t, bool>, std::unique_ptr<kissfft<R>>> plans;
  auto& p = plans[{n, inverse}];
  if (!p) p = std::make_unique<kissfft<R>>(static_cast<size_t>(n), inverse);
  return *p;
}

// The lines along `axis` of a row-major array of `shape`: count, length, stride, and
// where line l starts.
struct Lines {
  int64_t count = 0, len = 1, stride = 1;
  explicit Lines(const Shape& shape, int axis) {
    len = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
    count = len == 0 ? 0 : numel(shape) / len;
  }
  int64_t start(int64_t l) const { return (l / stride) * len * stride + l % stride; }
};

// dst's lines along `axis` = the 1-D transforms of src's (src may be dst).
template <typename Z>
void pass(const Z* src, Z* dst, const Shape& shape, int axis, bool inverse, int threads) {
  using R = typename Z::value_type;
  Lines ln(shape, axis);
  if (ln.count == 0) return;
  if (ln.len == 1) {  // a length-1 transform is the identity
    if (src != dst) std::copy(src, src + numel(shape), dst);
    return;
  }
  parallel_ranges(ln.count, threads, 4, 1, [&](int64_t b, int64_t e) {
    const kissfft<R>& p = plan<R>(ln.len, inverse);
    std::vector<Z> tmp(static_cast<size_t>(ln.len));
    for (int64_t l = b; l < e; ++l) {
      const int64_t s0 = ln.start(l);
      if (ln.stride == 1 && src != dst) {
        p.transform(src + s0, dst + s0);
        continue;
      }
      p.transform(src + s0, tmp.data(), 0, 1, static_cast<size_t>(ln.stride));
      for (int64_t j = 0; j < ln.len; ++j) dst[s0 + j * ln.stride] = tmp[j];
    }
  });
}

template <typename Z>
void scale(Z* x, int64_t n, double s) {
  using R = typename Z::value_type;
  for (int64_t i = 0; i < n; ++i) x[i] *= static_cast<R>(s);
}

template <typename Z>
void run(const KernelArgs& a, FftType type, const Shape& lengths) {
  using R = typename Z::value_type;
  const Shape& is = (*a.in)[0].shape;
  const Shape& os = (*a.out)[0].shape;
  const int r = static_cast<int>(is.size()), k = static_cast<int>(lengths.size());
  const int threads = kernel_threads(a.busy_devices);
  int64_t total = 1;
  for (int64_t n : lengths) total *= n;
  if (numel(os) == 0) return;
  if (type == FftType::FFT || type == FftType::IFFT) {
    const bool inv = type == FftType::IFFT;
    const Z* src = a.i<Z>(0);
    Z* out = a.o<Z>(0);
    for (int d = r - 1; d >= r - k; --d, src = out) pass(src, out, is, d, inv, threads);
    if (inv) scale(out, numel(os), 1.0 / static_cast<double>(total));
    return;
  }
  if (type == FftType::RFFT) {
    // The last axis. An even n runs as KISS's real transform: the n reals as n / 2
    // complex values through a half-length FFT and a post-pass (about half the work),
    // DC and Nyquist packed in bin 0. An odd n transforms each line as complex.
    const R* x = a.i<R>(0);
    Z* out = a.o<Z>(0);
    const int64_t n = is.back(), m = os.back(), lines = numel(is) / std::max<int64_t>(n, 1);
    const bool half = n % 2 == 0 && n >= 4;
    if (n > 0) {
      parallel_ranges(lines, threads, 4, 1, [&](int64_t b, int64_t e) {
        const kissfft<R>& p = plan<R>(half ? n / 2 : std::max<int64_t>(n, 2), false);
        std::vector<Z> line(static_cast<size_t>(n)), spec(static_cast<size_t>(n));
        for (int64_t l = b; l < e; ++l) {
          Z* o = out + l * m;
          if (half) {
            p.transform_real(x + l * n, spec.data());
            o[0] = Z(spec[0].real(), R(0));
            std::copy(spec.begin() + 1, spec.begin() + n / 2, o + 1);
            o[n / 2] = Z(spec[0].imag(), R(0));
            continue;
          }
          for (int64_t j = 0; j < n; ++j) line[j] = Z(x[l * n + j], R(0));
          if (n == 1) {
            spec[0] = line[0];
          } else {
            p.transform(line.data(), spec.data());
          }
          std::copy(spec.begin(), spec.begin() + m, o);
        }
      });
    }
    for (int d = r - 2; d >= r - k; --d) pass(out, out, os, d, false, threads);
    return;
  }
  // IRFFT: the inner axes inverse-transformed on a copy, then each last-axis line
  // extended to its Hermitian spectrum, inverse-transformed, and its real part kept.
  const int64_t m = is.back(), n = os.back(), lines = numel(is) / std::max<int64_t>(m, 1);
  std::vector<Z> work(a.i<Z>(0), a.i<Z>(0) + numel(is));
  for (int d = r - 2; d >= r - k; --d) pass(work.data(), work.data(), is, d, true, threads);
  R* out = a.o<R>(0);
  if (n == 0) return;
  const double s = 1.0 / static_cast<double>(total);
  parallel_ranges(lines, threads, 4, 1, [&](int64_t b, int64_t e) {
    const kissfft<R>& p = plan<R>(std::max<int64_t>(n, 2), true);  // n = 1: unused
    std::vector<Z> spec(static_cast<size_t>(n)), line(static_cast<size_t>(n));
    for (int64_t l = b; l < e; ++l) {
      const Z* h = work.data() + l * m;
      for (int64_t j = 0; j < n; ++j) spec[j] = j < m ? h[j] : std::conj(h[n - j]);
      if (n == 1) {
        line[0] = spec[0];
      } else {
        p.transform(spec.data(), line.data());
      }
      for (int64_t j = 0; j < n; ++j) out[l * n + j] = static_cast<R>(line[j].real() * s);
    }
  });
}

}  // namespace

void fft(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Fft&>(*a.prim);
  const DType c = p.type() == FftType::RFFT ? (*a.out)[0].dtype : (*a.in)[0].dtype;
  dispatch_complex(c, [&](auto tag) { run<decltype(tag)>(a, p.type(), p.lengths()); });
}

}  // namespace tsr::detail::cpu
