#include "tsr/core/convert.h"

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

}  // namespace

void convert(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize(from));
    return;
  }
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
