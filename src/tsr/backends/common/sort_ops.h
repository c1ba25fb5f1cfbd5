#pragma once
// The order sort, top_k and searchsorted use, for the CPU and CUDA kernels: JAX's sort
// comparator on one key (NaN after every number, -0.0 equal to 0.0), the same order
// as unsigned integers (what a radix sort sorts), top_k's "larger first, equal by
// lower index", and searchsorted's binary search. K is the compared type: bool, an
// integer, float or double (the half types compare as float).
#include "tsr/backends/common/scalar_ops.h"

namespace tsr::detail {

/** a < b in the total order: NaN last, -0.0 equal to 0.0 (as the comparisons). */
template <typename K>
TSR_HD bool sort_less(K a, K b) {
  if constexpr (ops::kIsFloat<K>) {
    return a == a && (b != b || a < b);
  } else {
    return a < b;
  }
}

/** The bits of double d (memcpy on the host, the intrinsic on a GPU). */
TSR_HD uint64_t sort_f64_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  return std::bit_cast<uint64_t>(d);
#endif
}

/** An unsigned key whose order is sort_less's: sort_less(a, b) exactly when
 *  sort_key_bits(a) < sort_key_bits(b), and equal keys for equal elements (every NaN
 *  one key, -0.0 and 0.0 one key). */
template <typename K>
TSR_HD uint64_t sort_key_bits(K v) {
  constexpr uint64_t kSign = uint64_t{1} << 63;
  if constexpr (ops::kIsFloat<K>) {
    double d = static_cast<double>(v);  // exact for float
    if (d != d) return ~uint64_t{0};
    if (d == 0) d = 0;  // -0.0 is 0.0
    uint64_t b = sort_f64_bits(d);
    return (b & kSign) ? ~b : (b | kSign);
  } else if constexpr (ops::Traits<K>::kInt && ops::Traits<K>::kSigned) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ kSign;
  } else {
    return static_cast<uint64_t>(v);
  }
}

/** top_k's order: element (vi, i) comes before (vj, j) when it is larger (NaN largest),
 *  or equal with the lower index. */
template <typename K>
TSR_HD bool top_k_before(K vi, int64_t i, K vj, int64_t j) {
  if (sort_less(vj, vi)) return true;
  if (sort_less(vi, vj)) return false;
  return i < j;
}

/** searchsorted: the first position p in [0, n) of the sorted keys at(0..n) where x
 *  belongs: the first key > x (right) or >= x (left), in sort_less's order; n when
 *  none is. */
template <typename K, typename At>
TSR_HD int64_t sorted_position(const At& at, int64_t n, K x, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    K s = at(mid);
    bool after = right ? sort_less(x, s) : !sort_less(s, x);
    if (after)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace tsr::detail
