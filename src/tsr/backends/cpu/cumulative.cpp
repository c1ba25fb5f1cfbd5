// Cumulative scans along one axis. The input is viewed as [outer, n, inner]; each
// of the outer*inner lines is scanned in place order (or reversed). Half types
// accumulate in float; integers wrap as the stored type would (unsigned math).
#include <cmath>
#include <limits>
#include <type_traits>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/cumulative.h"

namespace tsr::detail::cpu {
namespace {

using prim::CumKind;

template <typename T>
auto acc_tag() {
  if constexpr (kIsHalf<T>) {
    return float{};
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return std::make_unsigned_t<std::conditional_t<(sizeof(T) < 4), int32_t, T>>{};
  } else {
    return T{};
  }
}
template <typename T>
using Acc = decltype(acc_tag<T>());

// Max/min compare in the signed stored type; NaN propagates (as lax.max).
template <CumKind K, typename T, typename A>
inline A combine(A acc, A y) {
  if constexpr (K == CumKind::Sum) {
    return static_cast<A>(acc + y);
  } else if constexpr (K == CumKind::Prod) {
    return static_cast<A>(acc * y);
  } else if constexpr (K == CumKind::Max || K == CumKind::Min) {
    using C = std::conditional_t<std::is_integral_v<T>, T, A>;
    C a = static_cast<C>(acc), b = static_cast<C>(y);
    bool take = K == CumKind::Max ? (b > a) : (b < a);
    if constexpr (!std::is_integral_v<C>) take = take || (b != b);
    return take ? y : acc;
  } else {  // log(exp(acc) + exp(y)), stably
    if constexpr (std::is_floating_point_v<A>) {
      if (acc != acc || y != y) return std::numeric_limits<A>::quiet_NaN();
      A m = acc > y ? acc : y, lo = acc > y ? y : acc;
      if (std::isinf(m)) return m;
      return m + std::log1p(std::exp(lo - m));
    } else {
      return acc;
    }
  }
}

template <CumKind K, typename T>
void scan(const T* x, T* out, int64_t no, int64_t n, int64_t ni, bool reverse) {
  using A = Acc<T>;
  for (int64_t o = 0; o < no; ++o)
    for (int64_t i = 0; i < ni; ++i) {
      const T* xl = x + o * n * ni + i;
      T* ol = out + o * n * ni + i;
      A acc{};
      for (int64_t j = 0; j < n; ++j) {
        int64_t p = (reverse ? n - 1 - j : j) * ni;
        A y = load<A>(xl[p]);
        acc = j == 0 ? y : combine<K, T>(acc, y);
        ol[p] = store<T>(acc);
      }
    }
}

template <CumKind K>
void scan_kind(const KernelArgs& a, int axis, bool reverse) {
  const Shape& s = (*a.in)[0].shape;
  int64_t no = 1, ni = 1;
  for (int d = 0; d < axis; ++d) no *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) ni *= s[d];
  int64_t n = s[axis];
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (K == CumKind::LogSumExp && !(kIsHalf<T> || std::is_floating_point_v<T>)) {
      unsupported_dtype("cumlogsumexp", (*a.in)[0].dtype, "a float dtype");
    } else {
      scan<K, T>(a.i<T>(0), a.o<T>(0), no, n, ni, reverse);
    }
  });
}

}  // namespace

void cumulative(const KernelArgs& a) {
  if (is_complex((*a.in)[0].dtype)) return cumulative_complex(a);
  const auto& p = static_cast<const prim::Cumulative&>(*a.prim);
  switch (p.kind()) {
    case CumKind::Sum:
      return scan_kind<CumKind::Sum>(a, p.axis(), p.reverse());
    case CumKind::Prod:
      return scan_kind<CumKind::Prod>(a, p.axis(), p.reverse());
    case CumKind::Max:
      return scan_kind<CumKind::Max>(a, p.axis(), p.reverse());
    case CumKind::Min:
      return scan_kind<CumKind::Min>(a, p.axis(), p.reverse());
    case CumKind::LogSumExp:
      return scan_kind<CumKind::LogSumExp>(a, p.axis(), p.reverse());
  }
}

}  // namespace tsr::detail::cpu
