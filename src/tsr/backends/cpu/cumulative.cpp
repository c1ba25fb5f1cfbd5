// Cumulative scans along one axis. The input is viewed as [outer, n, inner]; each
// of the outer*inner lines is scanned in place order (or reversed). Half types
// accumulate in float; integers wrap as the stored type would (unsigned math).
#include <cmath>
#include <limits>
#include <type_traits>

#include "tsr/backends/common/scan_ops.h"
#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/cumulative.h"

namespace tsr::detail::cpu {
namespace {

using prim::CumKind;

// The accumulator: float for the half types, else backends/common/scan_ops.h's.
template <typename T>
auto acc_tag() {
  if constexpr (kIsHalf<T>) {
    return float{};
  } else {
    return typename ScanAcc<T>::type{};
  }
}
template <typename T>
using Acc = decltype(acc_tag<T>());

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
        acc = j == 0 ? y : scan_combine<K, std::conditional_t<kIsHalf<T>, float, T>>(acc, y);
        ol[p] = store<T>(acc);
      }
    }
}

template <CumKind K>
void scan_kind(const KernelArgs& a, int axis, bool reverse) {
  AxisLines l = axis_lines((*a.in)[0].shape, axis);
  int64_t no = l.outer, n = l.n, ni = l.inner;
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
