#pragma once
// One step of each cumulative scan, for the CPU and CUDA kernels (the lines are
// scanned in the same order on both, so sums agree bit for bit and max / min exactly).
// T is the stored type (bool, an integer, float or double; the half types scan in
// float), A the accumulator.
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/prims/op_codes.h"

namespace tsr::detail {

/** The accumulator of a scan over T: integers wrap as the stored type would, in an
 *  unsigned type at least 32 bits wide; the rest accumulate in T. */
template <typename T>
struct ScanAcc {
  using type = T;
};
#define TSR_SCAN_ACC(T, A) \
  template <>              \
  struct ScanAcc<T> {      \
    using type = A;        \
  };
TSR_SCAN_ACC(int8_t, uint32_t)
TSR_SCAN_ACC(int16_t, uint32_t)
TSR_SCAN_ACC(int32_t, uint32_t)
TSR_SCAN_ACC(int64_t, uint64_t)
TSR_SCAN_ACC(uint8_t, uint32_t)
TSR_SCAN_ACC(uint16_t, uint32_t)
TSR_SCAN_ACC(uint32_t, uint32_t)
TSR_SCAN_ACC(uint64_t, uint64_t)
#undef TSR_SCAN_ACC

/** acc op y. Max / min compare in the stored type T (signed integers as signed) and
 *  propagate NaN (as lax.max); logsumexp is log(exp(acc) + exp(y)), computed stably. */
template <prim::CumKind K, typename T, typename A>
TSR_HD A scan_combine(A acc, A y) {
  if constexpr (K == prim::CumKind::Sum) {
    return static_cast<A>(acc + y);
  } else if constexpr (K == prim::CumKind::Prod) {
    return static_cast<A>(acc * y);
  } else if constexpr (K == prim::CumKind::Max || K == prim::CumKind::Min) {
    constexpr bool kExact = ops::Traits<T>::kInt || ops::Traits<T>::kBool;
    if constexpr (kExact) {
      T a = static_cast<T>(acc), b = static_cast<T>(y);
      return (K == prim::CumKind::Max ? (b > a) : (b < a)) ? y : acc;
    } else {
      bool take = K == prim::CumKind::Max ? (y > acc) : (y < acc);
      return (take || y != y) ? y : acc;
    }
  } else if constexpr (ops::kIsFloat<A>) {
    if (acc != acc || y != y) return ops::qnan<A>();
    A m = acc > y ? acc : y, lo = acc > y ? y : acc;
    if (!ops::is_finite(m)) return m;  // an infinity (NaN was handled above)
    return m + ops::log1p(ops::exp(lo - m));
  } else {
    return acc;
  }
}

}  // namespace tsr::detail
