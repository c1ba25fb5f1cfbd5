// The CUDA kernel table's fft: the CPU kernel's passes (the last axis first, then the
// inner ones; RFFT's real axis first, IRFFT's last) as direct DFTs (fft.cu), alternating
// between the output and a scratch buffer so that the last pass writes the output.
#include <algorithm>

#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/prims/fft.h"

namespace tsr::detail::cuda {
namespace {

// The lines of `shape` along `axis`: how many, their length and element stride.
struct Lines {
  int64_t count = 0, len = 1, stride = 1;
  Lines(const Shape& shape, int axis) {
    len = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
    count = len == 0 ? 0 : numel(shape) / len;
  }
};

}  // namespace

void fft(const KernelArgs& a) {
  using tsr::fft::FftType;
  const auto& p = static_cast<const prim::Fft&>(*a.prim);
  const FftType type = p.type();
  const Shape& is = (*a.in)[0].shape;
  const Shape& os = (*a.out)[0].shape;
  const int r = static_cast<int>(is.size()), k = static_cast<int>(p.lengths().size());
  const DType c = type == FftType::RFFT ? (*a.out)[0].dtype : (*a.in)[0].dtype;
  if (numel(os) == 0) return;
  double total = 1;
  for (int64_t n : p.lengths()) total *= static_cast<double>(n);
  cudaStream_t s = stream_of(a);
  const size_t zsz = itemsize(c);
  if (type == FftType::FFT || type == FftType::IFFT) {
    const bool inv = type == FftType::IFFT;
    Scratch tmp(s, "fft");
    tmp.alloc(static_cast<size_t>(numel(os)) * zsz);
    const void* src = a.in_ptr[0];
    for (int i = 0; i < k; ++i) {  // pass i on axis r - 1 - i; the last one into the output
      void* dst = (k - 1 - i) % 2 == 0 ? a.out_ptr[0] : tmp.p;
      Lines ln(is, r - 1 - i);
      fft_pass_launch(c, src, dst, ln.count, ln.len, ln.stride, inv,
                      inv && i == k - 1 ? 1.0 / total : 1.0, s);
      src = dst;
    }
    return;
  }
  if (type == FftType::RFFT) {
    const int64_t n = is.back(), m = os.back(), lines = numel(is) / std::max<int64_t>(n, 1);
    Scratch tmp(s, "fft");
    tmp.alloc(static_cast<size_t>(numel(os)) * zsz);
    void* first = (k - 1) % 2 == 0 ? a.out_ptr[0] : tmp.p;
    rfft_last_launch(c, a.in_ptr[0], first, lines, n, m, s);
    const void* src = first;
    for (int i = 1; i < k; ++i) {
      void* dst = (k - 1 - i) % 2 == 0 ? a.out_ptr[0] : tmp.p;
      Lines ln(os, r - 1 - i);
      fft_pass_launch(c, src, dst, ln.count, ln.len, ln.stride, false, 1.0, s);
      src = dst;
    }
    return;
  }
  // IRFFT: the inner axes inverse-transformed between two scratch buffers, then the last.
  const int64_t m = is.back(), n = os.back(), lines = numel(is) / std::max<int64_t>(m, 1);
  Scratch b0(s, "fft"), b1(s, "fft");
  b0.alloc(static_cast<size_t>(numel(is)) * zsz);
  b1.alloc(static_cast<size_t>(numel(is)) * zsz);
  const void* src = a.in_ptr[0];
  for (int i = 1; i < k; ++i) {
    void* dst = i % 2 ? b0.p : b1.p;
    Lines ln(is, r - 1 - i);
    fft_pass_launch(c, src, dst, ln.count, ln.len, ln.stride, true, 1.0, s);
    src = dst;
  }
  irfft_last_launch(c, src, a.out_ptr[0], lines, m, n, 1.0 / total, s);
}

}  // namespace tsr::detail::cuda
