#pragma once
// Element conversion between any two dtypes (host-side reads and casts), and the
// one-element rule the CPU kernels share with it.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tsr/dtype.h"

namespace tsr::detail {

/** One element from From to To (bool or a built-in arithmetic type, never a half
 *  type). Defined for every value, as XLA's CPU backend: float to integer truncates
 *  toward zero and saturates at To's range (so -1.5 -> 0 for unsigned), NaN gives 0;
 *  to bool is v != 0; integer to integer wraps modulo 2^bits. */
template <typename To, typename From>
inline To cast_element(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // hi = 2^bits(To) (or 2^(bits-1) signed) and lo = To's min are powers of two
    // (or 0), exact in From; the comparisons are false for NaN.
    constexpr From hi = From(2) * From(std::numeric_limits<To>::max() / 2 + 1);
    constexpr From lo = From(std::numeric_limits<To>::min());
    if (!(v == v)) return To(0);
    if (v >= hi) return std::numeric_limits<To>::max();
    if (v <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

/** dst[i] = src[i] converted by cast_element; half types go through float. */
void convert(const void* src, DType from, void* dst, DType to, int64_t n);

}  // namespace tsr::detail
