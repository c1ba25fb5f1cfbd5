#pragma once
// What each ReduceOp means for one pair of elements (reduce_kernels.h has the rules);
// host and device code share it, so a GPU all_reduce rounds as the host groups do.
#include <cstdint>
#include <type_traits>

#include "tsr/core/hd.h"

namespace tsr::detail {

/** The reduction a reducing collective applies. */
enum class ReduceOp : uint8_t { Sum, Max, Min, Prod };

/** op(a, b) for a non-half arithmetic type or bool (rules: reduce_kernels.h). */
template <ReduceOp Op, typename T>
TSR_HD T combine(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (Op == ReduceOp::Sum || Op == ReduceOp::Max) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    // Unsigned arithmetic of at least int width: wraps instead of overflowing.
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    if constexpr (Op == ReduceOp::Sum) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    if constexpr (Op == ReduceOp::Prod)
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    if constexpr (Op == ReduceOp::Max) return a < b ? b : a;
    if constexpr (Op == ReduceOp::Min) return b < a ? b : a;
  } else {
    if constexpr (Op == ReduceOp::Sum) return a + b;
    if constexpr (Op == ReduceOp::Prod) return a * b;
    if constexpr (Op == ReduceOp::Max) return (a > b || a != a) ? a : b;
    if constexpr (Op == ReduceOp::Min) return (a < b || a != a) ? a : b;
  }
}

}  // namespace tsr::detail
