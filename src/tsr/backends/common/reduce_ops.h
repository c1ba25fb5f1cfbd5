#pragma once
// The accumulator, identity and combining step of each reduction, for the CPU and
// CUDA kernels. T is the stored type (bool, an integer, float or double; the half
// types reduce in float).
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/prims/op_codes.h"

namespace tsr::detail {

/** The accumulator of reduction K over T: bytes for bool (min / max of 0 / 1; storing
 *  any nonzero byte gives true), double for float32 sums and products, a wide unsigned
 *  type for integer sums and products (wraps as the stored type would), else T. */
template <prim::ReduceKind K, typename T>
TSR_HD auto reduce_acc_tag() {
  constexpr bool kSumProd = K == prim::ReduceKind::Sum || K == prim::ReduceKind::Prod;
  if constexpr (ops::Traits<T>::kBool) {
    return uint8_t{};
  } else if constexpr (!kSumProd) {
    return T{};
  } else if constexpr (ops::Traits<T>::kInt) {
    if constexpr (sizeof(T) < 8) {
      return uint32_t{};
    } else {
      return uint64_t{};
    }
  } else if constexpr (sizeof(T) == 4) {
    return double{};  // float32: accurate at no cost in a memory-bound loop
  } else {
    return T{};
  }
}
/** The accumulator type. */
template <prim::ReduceKind K, typename T>
using ReduceAcc = decltype(reduce_acc_tag<K, T>());

/** K's identity in A (max: -inf or the lowest value; min: +inf or the highest). */
template <prim::ReduceKind K, typename A>
TSR_HD A reduce_identity() {
  using R = prim::ReduceKind;
  if constexpr (K == R::Sum || K == R::Or) {
    return A(0);
  } else if constexpr (K == R::Prod) {
    return A(1);
  } else if constexpr (K == R::And) {
    return static_cast<A>(~A(0));
  } else if constexpr (K == R::Max) {
    if constexpr (ops::kIsFloat<A>) {
      return -ops::inf<A>();
    } else {
      return ops::Traits<A>::kMin;
    }
  } else if constexpr (ops::kIsFloat<A>) {
    return ops::inf<A>();
  } else {
    return ops::Traits<A>::kMax;
  }
}

/** acc op y. Max and min propagate NaN: a NaN y replaces acc, and a NaN acc stays (no
 *  comparison with it is true). `|` rather than `||` keeps it branch-free. */
template <prim::ReduceKind K, typename A>
TSR_HD A reduce_combine(A acc, A y) {
  using R = prim::ReduceKind;
  if constexpr (K == R::Sum) return static_cast<A>(acc + y);
  if constexpr (K == R::Prod) return static_cast<A>(acc * y);
  if constexpr (K == R::Max) return ((y > acc) | (y != y)) ? y : acc;
  if constexpr (K == R::Min) return ((y < acc) | (y != y)) ? y : acc;
  if constexpr (K == R::And) return static_cast<A>(acc & y);
  if constexpr (K == R::Or) return static_cast<A>(acc | y);
  return acc;
}

}  // namespace tsr::detail
