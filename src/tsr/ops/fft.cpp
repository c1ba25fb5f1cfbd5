// jnp.fft front-ends (jax/_src/numpy/fft.py's _fft_core): axes moved last, cropped or
// zero-padded to s, one lax.fft (or several past 3 axes), the norm factor, axes moved
// back. Error texts are jnp's.
#include "tsr/fft.h"

#include <cmath>
#include <set>

#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/fft.h"

namespace tsr::fft {
using namespace tsr::detail;

namespace {

// lax.fft's conversion: RFFT takes a real float (integers and the half types become
// float32; JAX refuses bf16 / f16 in the primitive), the others a complex value.
Array prepare(const Array& x, FftType t) {
  if (t == FftType::RFFT) {
    if (is_complex(x.dtype()))
      throw ValueError(std::string("[fft] only real valued inputs supported for rfft. Got ") +
                       x.type().str() +
                       "; expected a real array. Use fft for complex input, or take tsr::real.");
    return x.dtype() == float64 ? x : convert(x, float32);
  }
  return is_complex(x.dtype()) ? x : convert(x, complex_dtype(x.dtype()));
}

const char* full(const std::string& name) {
  static thread_local std::string s;
  s = "jax.numpy.fft." + name;
  return s.c_str();
}

Array core_nd(const Array& arr, FftType type, const Shape& s) {
  if (s.size() <= 3) return fft(arr, type, s);
  // As jnp: 3 (or 2 + 2) axes at a time.
  const int n = s.size() == 4 ? 2 : 3, k = static_cast<int>(s.size()), r = arr.ndim();
  std::vector<int> src, dst;
  for (int d = r - k; d < r - n; ++d) src.push_back(d);
  for (int d = r - k + n; d < r; ++d) dst.push_back(d);
  Shape head(s.begin(), s.end() - n), tail(s.end() - n, s.end());
  if (type == FftType::RFFT || type == FftType::FFT) {
    Array a = moveaxis(fft(arr, type, tail), src, dst);
    return moveaxis(core_nd(a, FftType::FFT, head), dst, src);
  }
  Array a = moveaxis(core_nd(moveaxis(arr, src, dst), FftType::IFFT, head), dst, src);
  return fft(a, type, tail);
}

double norm_factor(const std::string& name, const std::string& norm, const Shape& s) {
  double n = 1;
  for (int64_t v : s) n *= static_cast<double>(v);
  bool inverse = name[0] == 'i';
  if (norm == "backward" || norm.empty()) return 1.0;
  if (norm == "ortho") return inverse ? std::sqrt(n) : 1.0 / std::sqrt(n);
  if (norm == "forward") return inverse ? n : 1.0 / n;
  throw ValueError("[fft." + name + "] Invalid norm value " + norm +
                   "; should be \"backward\", \"ortho\" or \"forward\". Got norm=\"" + norm +
                   "\".");
}

Array core(const std::string& name, FftType type, const Array& a, std::optional<Shape> s,
           std::optional<std::vector<int>> axes_in, const std::string& norm) {
  norm_factor(name, norm, {});  // the norm's check, before any work
  const int r = a.ndim();
  if (s)
    for (int64_t v : *s)
      if (v <= 0)
        throw ValueError("[fft." + name + "] Shape should be positive. Got s=" + p_ints(*s) +
                         "; expected positive lengths.");
  if (s && axes_in && s->size() != axes_in->size())
    throw ValueError("[fft." + name + "] Shape and axes have different lengths. Got s=" +
                     p_ints(*s) + " and " + std::to_string(axes_in->size()) + " axes.");
  std::vector<int> axes;
  if (axes_in) {
    for (int ax : *axes_in) axes.push_back(norm_axis(ax, r, full(name)));
  } else {
    int k = s ? static_cast<int>(s->size()) : r;
    if (k > r)
      throw ValueError("[fft." + name + "] s has more entries than the input has dims. Got s=" +
                       p_ints(*s) + " for " + a.type().str() + ".");
    for (int d = r - k; d < r; ++d) axes.push_back(d);
  }
  if (std::set<int>(axes.begin(), axes.end()).size() != axes.size()) {
    std::string got;
    for (int ax : axes) got += (got.empty() ? "" : ", ") + std::to_string(ax);
    throw ValueError("[fft." + name + "] " + full(name) +
                     " does not support repeated axes. Got axes (" + got + ").");
  }
  const int k = static_cast<int>(axes.size());
  std::vector<int> last;
  for (int d = r - k; d < r; ++d) last.push_back(d);
  Array arr = prepare(a, type);
  if (axes_in) arr = moveaxis(arr, axes, last);
  Shape lengths;
  if (s) {
    Shape in_s = arr.shape();
    for (int i = 0; i < k; ++i) in_s[last[i]] = (*s)[i];
    if (type == FftType::IRFFT && k > 0) in_s.back() = in_s.back() / 2 + 1;
    Shape crop = arr.shape();
    bool cut = false, grow = false;
    for (int d = 0; d < r; ++d) {
      cut = cut || in_s[d] < crop[d];
      grow = grow || in_s[d] > crop[d];
      crop[d] = std::min(crop[d], in_s[d]);
    }
    if (cut) arr = slice(arr, Shape(r, 0), crop);
    if (grow) {
      std::vector<std::tuple<int64_t, int64_t, int64_t>> cfg;
      for (int d = 0; d < r; ++d) cfg.emplace_back(0, in_s[d] - crop[d], 0);
      arr = pad(arr, 0, cfg);
    }
    lengths = *s;
  } else {
    for (int d : last) lengths.push_back(arr.shape()[d]);
    if (type == FftType::IRFFT && k > 0)
      lengths.back() = std::max<int64_t>(0, 2 * (lengths.back() - 1));
  }
  Array out = k == 0 ? arr : core_nd(arr, type, lengths);
  double f = norm_factor(name, norm, lengths);
  if (f != 1.0) out = multiply(out, f);
  return axes_in ? moveaxis(out, last, axes) : out;
}

Array one_d(const char* name, FftType type, const Array& a, std::optional<int64_t> n, int axis,
            const std::string& norm) {
  std::optional<Shape> s;
  if (n) s = Shape{*n};
  return core(name, type, a, s, std::vector<int>{axis}, norm);
}

Array two_d(const char* name, FftType type, const Array& a, std::optional<Shape> s,
            const std::vector<int>& axes, const std::string& norm) {
  if (axes.size() != 2)
    throw ValueError(std::string("[fft.") + name + "] " + full(name) +
                     " only supports 2 axes. Got " + std::to_string(axes.size()) + " axes.");
  return core(name, type, a, std::move(s), axes, norm);
}

}  // namespace

Array fft(const Array& x, FftType type, const Shape& fft_lengths) {
  Array v = prepare(x, type);
  if (fft_lengths.empty()) return v;
  return bind1(std::make_shared<prim::Fft>(type, fft_lengths), {v});
}

Array fft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  return one_d("fft", FftType::FFT, a, n, axis, norm);
}
Array ifft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  return one_d("ifft", FftType::IFFT, a, n, axis, norm);
}
Array rfft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  return one_d("rfft", FftType::RFFT, a, n, axis, norm);
}
Array irfft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  return one_d("irfft", FftType::IRFFT, a, n, axis, norm);
}
Array hfft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  int ax = norm_axis(axis, a.ndim(), full("hfft"));
  int64_t nn = n ? *n : (a.shape()[ax] - 1) * 2;
  return multiply(one_d("hfft", FftType::IRFFT, conj(a), n, axis, norm), static_cast<double>(nn));
}
Array ihfft(const Array& a, std::optional<int64_t> n, int axis, const std::string& norm) {
  int ax = norm_axis(axis, a.ndim(), full("ihfft"));
  int64_t nn = n ? *n : a.shape()[ax];
  return multiply(conj(one_d("ihfft", FftType::RFFT, a, n, axis, norm)),
                  1.0 / static_cast<double>(nn));
}

Array fft2(const Array& a, std::optional<Shape> s, std::vector<int> axes, const std::string& norm) {
  return two_d("fft2", FftType::FFT, a, std::move(s), axes, norm);
}
Array ifft2(const Array& a, std::optional<Shape> s, std::vector<int> axes,
            const std::string& norm) {
  return two_d("ifft2", FftType::IFFT, a, std::move(s), axes, norm);
}
Array rfft2(const Array& a, std::optional<Shape> s, std::vector<int> axes,
            const std::string& norm) {
  return two_d("rfft2", FftType::RFFT, a, std::move(s), axes, norm);
}
Array irfft2(const Array& a, std::optional<Shape> s, std::vector<int> axes,
             const std::string& norm) {
  return two_d("irfft2", FftType::IRFFT, a, std::move(s), axes, norm);
}

Array fftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes,
           const std::string& norm) {
  return core("fftn", FftType::FFT, a, std::move(s), std::move(axes), norm);
}
Array ifftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes,
            const std::string& norm) {
  return core("ifftn", FftType::IFFT, a, std::move(s), std::move(axes), norm);
}
Array rfftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes,
            const std::string& norm) {
  return core("rfftn", FftType::RFFT, a, std::move(s), std::move(axes), norm);
}
Array irfftn(const Array& a, std::optional<Shape> s, std::optional<std::vector<int>> axes,
             const std::string& norm) {
  return core("irfftn", FftType::IRFFT, a, std::move(s), std::move(axes), norm);
}

Array fftfreq(int64_t n, double d, DType dtype) {
  DType w = dtype == float64 ? float64 : float32;
  Array i = arange(0, static_cast<double>(n), 1, w);
  // ((i + n // 2) % n - n // 2) / (d n)
  Array k = subtract(remainder(add(i, static_cast<double>(n / 2)), static_cast<double>(n)),
                     static_cast<double>(n / 2));
  return astype(divide(k, d * static_cast<double>(n)), dtype);
}

Array rfftfreq(int64_t n, double d, DType dtype) {
  DType w = dtype == float64 ? float64 : float32;
  Array k = arange(0, static_cast<double>(n / 2 + 1), 1, w);
  return astype(divide(k, d * static_cast<double>(n)), dtype);
}

namespace {
Array shift(const Array& x, const std::optional<std::vector<int>>& axes_in, bool inverse) {
  std::vector<int> axes;
  if (axes_in) {
    for (int ax : *axes_in)
      axes.push_back(norm_axis(ax, x.ndim(), inverse ? "ifftshift" : "fftshift"));
  } else {
    for (int d = 0; d < x.ndim(); ++d) axes.push_back(d);
  }
  std::vector<int64_t> shifts;
  for (int ax : axes) shifts.push_back((inverse ? -1 : 1) * (x.shape()[ax] / 2));
  return axes.empty() ? x : roll(x, shifts, axes);
}
}  // namespace

Array fftshift(const Array& x, std::optional<std::vector<int>> axes) {
  return shift(x, axes, false);
}
Array ifftshift(const Array& x, std::optional<std::vector<int>> axes) {
  return shift(x, axes, true);
}

}  // namespace tsr::fft
