#pragma once
/** jnp.fft and lax.fft: discrete Fourier transforms of complex and real arrays
 *  (docs/design/0023-complex-and-fft.md). Transforms run on KISS FFT (any length); a
 *  sharded transformed dimension is moved onto a batch dimension by an all-to-all for
 *  the kernel and back, instead of being gathered. */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"

namespace tsr::fft {

/** lax.FftType. */
enum class FftType : uint8_t {
  FFT,   /**< forward complex-to-complex */
  IFFT,  /**< inverse complex-to-complex (scaled by 1/N) */
  RFFT,  /**< forward real-to-complex: the last dim n becomes n / 2 + 1 */
  IRFFT, /**< inverse complex-to-real */
};

/** lax.fft(x, fft_type, fft_lengths): the transform over the trailing len(fft_lengths)
 *  (1 to 3) dims. x is converted first as lax does (RFFT: to float, else to complex);
 *  empty lengths return x. */
Array fft(const Array& x, FftType type, const Shape& fft_lengths);

/** jnp.fft.fft: the 1-D transform along `axis`, cropped or zero-padded to n; norm is
 *  "backward" (default), "ortho" or "forward". */
Array fft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
          const std::string& norm = "backward");
/** jnp.fft.ifft: the inverse of fft. */
Array ifft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
           const std::string& norm = "backward");
/** jnp.fft.rfft: the transform of a real array; the axis keeps n / 2 + 1 bins. */
Array rfft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
           const std::string& norm = "backward");
/** jnp.fft.irfft: the real inverse of rfft; n defaults to 2 (m - 1). */
Array irfft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
            const std::string& norm = "backward");
/** jnp.fft.hfft: the transform of a Hermitian-symmetric signal (a real result). */
Array hfft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
           const std::string& norm = "backward");
/** jnp.fft.ihfft: the inverse of hfft. */
Array ihfft(const Array& a, std::optional<int64_t> n = {}, int axis = -1,
            const std::string& norm = "backward");

/** jnp.fft.fft2: fftn over `axes` (default the last two). */
Array fft2(const Array& a, std::optional<Shape> s = {}, std::vector<int> axes = {-2, -1},
           const std::string& norm = "backward");
/** jnp.fft.ifft2. */
Array ifft2(const Array& a, std::optional<Shape> s = {}, std::vector<int> axes = {-2, -1},
            const std::string& norm = "backward");
/** jnp.fft.rfft2. */
Array rfft2(const Array& a, std::optional<Shape> s = {}, std::vector<int> axes = {-2, -1},
            const std::string& norm = "backward");
/** jnp.fft.irfft2. */
Array irfft2(const Array& a, std::optional<Shape> s = {}, std::vector<int> axes = {-2, -1},
             const std::string& norm = "backward");

/** jnp.fft.fftn: the transform over `axes` (default: all, or the last len(s)), each
 *  cropped or padded to s; more than 3 axes run as several transforms. */
Array fftn(const Array& a, std::optional<Shape> s = {}, std::optional<std::vector<int>> axes = {},
           const std::string& norm = "backward");
/** jnp.fft.ifftn. */
Array ifftn(const Array& a, std::optional<Shape> s = {}, std::optional<std::vector<int>> axes = {},
            const std::string& norm = "backward");
/** jnp.fft.rfftn: rfft over the last axis, fft over the others. */
Array rfftn(const Array& a, std::optional<Shape> s = {}, std::optional<std::vector<int>> axes = {},
            const std::string& norm = "backward");
/** jnp.fft.irfftn: the real inverse of rfftn. */
Array irfftn(const Array& a, std::optional<Shape> s = {}, std::optional<std::vector<int>> axes = {},
             const std::string& norm = "backward");

/** jnp.fft.fftfreq: the sample frequencies [0, 1, ..., -1] / (d n). */
Array fftfreq(int64_t n, double d = 1.0, DType dtype = float32);
/** jnp.fft.rfftfreq: the non-negative frequencies [0, ..., n / 2] / (d n). */
Array rfftfreq(int64_t n, double d = 1.0, DType dtype = float32);
/** jnp.fft.fftshift: the zero frequency moved to the centre (default: every axis). */
Array fftshift(const Array& x, std::optional<std::vector<int>> axes = {});
/** jnp.fft.ifftshift: the inverse of fftshift. */
Array ifftshift(const Array& x, std::optional<std::vector<int>> axes = {});

}  // namespace tsr::fft
