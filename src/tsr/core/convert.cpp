#include "tsr/core/convert.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tsr::detail {
namespace {

template <typename T>
using Wide =
    std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

template <typename To, typename From>
To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    auto w = static_cast<Wide<From>>(v);
    return To(cast_element<Wide<To>>(w));
  }
}

// Conversions to or from a complex type, as lax: real -> complex has imaginary part
// 0, complex -> real keeps the real part, complex -> bool is z != 0. Blocks of parts
// go through float64 (exact for every source but the 64-bit integers).
void convert_complex(const void* src, DType from, void* dst, DType to, int64_t n) {
  constexpr int64_t kB = 256;
  double re[kB], im[kB];
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst);
  for (int64_t i0 = 0; i0 < n; i0 += kB) {
    int64_t m = std::min(kB, n - i0);
    if (is_complex(from)) {
      dispatch_complex(from, [&](auto tag) {
        using Z = decltype(tag);
        const Z* z = reinterpret_cast<const Z*>(s) + i0;
        for (int64_t j = 0; j < m; ++j) re[j] = z[j].real(), im[j] = z[j].imag();
      });
    } else {
      convert(s + i0 * itemsize(from), from, re, DType::Float64, m);
      std::fill(im, im + m, 0.0);
    }
    if (is_complex(to)) {
      dispatch_complex(to, [&](auto tag) {
        using Z = decltype(tag);
        using R = typename Z::value_type;
        Z* z = reinterpret_cast<Z*>(d) + i0;
        for (int64_t j = 0; j < m; ++j) z[j] = Z(static_cast<R>(re[j]), static_cast<R>(im[j]));
      });
    } else if (to == DType::Bool) {
      bool* b = reinterpret_cast<bool*>(d) + i0;
      for (int64_t j = 0; j < m; ++j) b[j] = re[j] != 0 || im[j] != 0;
    } else {
      convert(re, DType::Float64, d + i0 * itemsize(to), to, m);
    }
  }
}

}  // namespace

void convert(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize(from));
    return;
  }
  if (is_complex(from) || is_complex(to)) return convert_complex(src, from, dst, to, n);
  dispatch_dtype(from, [&](auto f) {
    using F = decltype(f);
    dispatch_dtype(to, [&](auto t) {
      using T = decltype(t);
      const F* s = static_cast<const F*>(src);
      T* d = static_cast<T*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = cast<T>(s[i]);
    });
  });
}

}  // namespace tsr::detail
