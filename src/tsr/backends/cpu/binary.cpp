// Binary elementwise kernels with broadcasting. The output is walked as a few
// collapsed dims: an odometer over the outer ones and one inner run in which each
// operand either advances (stride 1) or stays (a broadcast scalar), so equal
// shapes, scalar-array and row/column broadcasts all end in a vectorisable loop.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/backends/common/elementwise_apply.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/backends/cpu/vecmath.h"
#include "tsr/core/small_vec.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"

namespace tsr::detail::cpu {
namespace {

using prim::BinaryOp;

template <typename T>
inline constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kCx =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

constexpr int64_t kBlock = 512;  // float scratch for the half types

constexpr bool is_cmp(BinaryOp op) { return is_compare_op(op); }
constexpr bool is_logical(BinaryOp op) { return is_logical_op(op); }

// Which stored types an op accepts (half types compute as float; the rest is shared
// with the CUDA kernels).
template <BinaryOp Op, typename T>
constexpr bool binary_supported() {
  if constexpr (kIsHalf<T>) {
    return binary_supported<Op, float>();
  } else if constexpr (kCx<T>) {
    return Op == BinaryOp::Add || Op == BinaryOp::Sub || Op == BinaryOp::Mul ||
           Op == BinaryOp::Div || Op == BinaryOp::Pow || Op == BinaryOp::Max ||
           Op == BinaryOp::Min || Op == BinaryOp::Eq || Op == BinaryOp::Ne;
  } else {
    return binary_accepts<Op, T>();
  }
}

template <BinaryOp Op, typename T>
using BinOut = std::conditional_t<is_cmp(Op), bool, T>;

// op(x, y) for any stored type but the half types.
template <BinaryOp Op, typename T>
inline BinOut<Op, T> binary_op(T x, T y) {
  using B = BinaryOp;
  if constexpr (Op == B::Eq) return x == y;
  if constexpr (Op == B::Ne) return x != y;
  if constexpr (Op == B::Lt) return x < y;
  if constexpr (Op == B::Le) return x <= y;
  if constexpr (Op == B::Gt) return x > y;
  if constexpr (Op == B::Ge) return x >= y;
  if constexpr (is_cmp(Op)) {
    return false;  // unreachable; keeps every path returning
  } else if constexpr (kCx<T>) {
    using R = typename T::value_type;
    if constexpr (Op == B::Add) return x + y;
    if constexpr (Op == B::Sub) return x - y;
    if constexpr (Op == B::Mul) return x * y;
    if constexpr (Op == B::Div) return x / y;
    if constexpr (Op == B::Pow) {
      // As XLA: 0 ** 0 = 1, 0 ** y = 0 for a positive real y, NaN for other y.
      if (x == T(0)) {
        if (y == T(0)) return T(1);
        if (y.imag() == R(0) && y.real() > R(0)) return T(0);
        R nan = std::numeric_limits<R>::quiet_NaN();
        return T(nan, nan);
      }
      return std::pow(x, y);
    }
    // Lexicographic order (real part, then imaginary), as lax.max / lax.min; an
    // unordered (NaN) comparison gives y, as XLA.
    bool gt = x.real() > y.real() || (x.real() == y.real() && x.imag() > y.imag());
    bool lt = x.real() < y.real() || (x.real() == y.real() && x.imag() < y.imag());
    if constexpr (Op == B::Max) return gt ? x : y;
    if constexpr (Op == B::Min) return lt ? x : y;
    return x;
  } else {
    // bool, the integers and the floats: the scalar code every platform shares.
    return binary_apply<Op>(x, y);
  }
}

// out[0..n) = op(a, b) where an operand advances (AV/BV true) or is one value.
// Scalars are loaded before the loop so that the loop vectorises.
template <BinaryOp Op, typename T, bool AV, bool BV>
void binary_inner(const T* a, const T* b, BinOut<Op, T>* out, int64_t n) {
  constexpr bool kVecMath = (Op == BinaryOp::Pow || Op == BinaryOp::Atan2) &&
                            (std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (kVecMath) {
    // pow and atan2 through the SIMD kernels of the instruction set in use, if any.
    const VecMath& vm = vecmath();
    if constexpr (std::is_same_v<T, float>) {
      if (auto k = Op == BinaryOp::Pow ? vm.pow_f32 : vm.atan2_f32) return k(a, AV, b, BV, out, n);
    } else {
      if (auto k = Op == BinaryOp::Pow ? vm.pow_f64 : vm.atan2_f64) return k(a, AV, b, BV, out, n);
    }
  }
  if constexpr (AV && BV) {
    for (int64_t i = 0; i < n; ++i) out[i] = binary_op<Op>(a[i], b[i]);
  } else if constexpr (AV) {
    const T y = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = binary_op<Op>(a[i], y);
  } else if constexpr (BV) {
    const T x = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = binary_op<Op>(x, b[i]);
  } else {
    const auto v = binary_op<Op>(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

// The half types: widen blocks to float, run the float loop, round back.
template <BinaryOp Op, typename H, bool AV, bool BV>
void binary_inner_half(const H* a, const H* b, BinOut<Op, H>* out, int64_t n) {
  alignas(64) float fa[kBlock], fb[kBlock], fo[kBlock];
  if (!AV) to_float(a, fa, 1);
  if (!BV) to_float(b, fb, 1);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    int64_t m = std::min(kBlock, n - i0);
    if (AV) to_float(a + i0, fa, m);
    if (BV) to_float(b + i0, fb, m);
    if constexpr (is_cmp(Op)) {
      binary_inner<Op, float, AV, BV>(fa, fb, out + i0, m);
    } else {
      binary_inner<Op, float, AV, BV>(fa, fb, fo, m);
      from_float(fo, out + i0, m);
    }
  }
}

// The output as collapsed dims: `outer` sizes with each operand's element
// strides (0 = broadcast), then one inner run of `inner` elements.
struct Plan {
  SmallVec<int64_t, 8> outer, sa, sb;  // inline: a kernel call allocates nothing
  int64_t inner = 1;
  bool av = true, bv = true;  // operand advances along the inner run
};

Plan make_plan(const Shape& as, const Shape& bs, const Shape& os) {
  int r = static_cast<int>(os.size());
  if ((as == os || as.empty()) && (bs == os || bs.empty())) {
    // Equal shapes (or a scalar operand): one run, no per-dim plan.
    Plan p;
    p.inner = numel(os);
    p.av = !as.empty() || os.empty();
    p.bv = !bs.empty() || os.empty();
    return p;
  }
  auto strides = [](const Shape& sh) {
    SmallVec<int64_t, 8> st;
    st.resize(sh.size());
    for (int64_t d = static_cast<int64_t>(sh.size()) - 1, acc = 1; d >= 0; --d) {
      st[static_cast<size_t>(d)] = acc;
      acc *= sh[static_cast<size_t>(d)];
    }
    return st;
  };
  SmallVec<int64_t, 8> fa = strides(as), fb = strides(bs), size;
  SmallVec<std::array<bool, 2>, 8> bcast;
  Plan p;
  for (int d = 0; d < r; ++d) {
    if (os[d] == 1) continue;
    bool ab = as.empty() || as[d] == 1, bb = bs.empty() || bs[d] == 1;
    int64_t sa = ab ? 0 : fa[d], sb = bb ? 0 : fb[d];
    if (!size.empty() && bcast.back() == std::array<bool, 2>{ab, bb}) {
      // Same broadcast pattern as the dim before: one dim, strided as the inner one.
      size.back() *= os[d];
      p.sa.back() = sa;
      p.sb.back() = sb;
    } else {
      size.push_back(os[d]);
      bcast.push_back({ab, bb});
      p.sa.push_back(sa);
      p.sb.push_back(sb);
    }
  }
  if (!size.empty()) {
    p.inner = size.back();
    p.av = !bcast.back()[0];
    p.bv = !bcast.back()[1];
    size.resize(size.size() - 1);
    p.sa.resize(p.sa.size() - 1);
    p.sb.resize(p.sb.size() - 1);
  }
  p.outer = std::move(size);
  return p;
}

template <BinaryOp Op, typename T>
void binary_run(const KernelArgs& a) {
  if constexpr (!binary_supported<Op, T>()) {
    unsupported_dtype(prim::binary_name(Op), dtype_v<T>,
                      Op == BinaryOp::Atan2 ? "a floating-point dtype"
                      : is_logical(Op)      ? "bool or an integer dtype"
                                            : "a numeric dtype");
  } else {
    using Out = BinOut<Op, T>;
    using Inner = void (*)(const T*, const T*, Out*, int64_t);
    const Shape& os = (*a.out)[0].shape;
    if (numel(os) == 0) return;
    Plan p = make_plan((*a.in)[0].shape, (*a.in)[1].shape, os);
    Inner inner;
    if constexpr (kIsHalf<T>) {
      constexpr Inner k[2][2] = {
          {binary_inner_half<Op, T, false, false>, binary_inner_half<Op, T, false, true>},
          {binary_inner_half<Op, T, true, false>, binary_inner_half<Op, T, true, true>}};
      inner = k[p.av][p.bv];
    } else {
      constexpr Inner k[2][2] = {
          {binary_inner<Op, T, false, false>, binary_inner<Op, T, false, true>},
          {binary_inner<Op, T, true, false>, binary_inner<Op, T, true, true>}};
      inner = k[p.av][p.bv];
    }
    const T* x = a.i<T>(0);
    const T* y = a.i<T>(1);
    Out* out = a.o<Out>(0);
    int nd = static_cast<int>(p.outer.size());
    if (nd == 0) {
      // One run (equal shapes, or an array with a scalar): split it between threads.
      parallel_ranges(p.inner, kernel_threads(a.busy_devices), kParallelMin, 16,
                      [&](int64_t b, int64_t e) {
                        inner(x + (p.av ? b : 0), y + (p.bv ? b : 0), out + b, e - b);
                      });
      return;
    }
    SmallVec<int64_t, 8> ctr;
    ctr.resize(static_cast<size_t>(nd));
    int64_t oa = 0, ob = 0;
    for (int64_t oo = 0;; oo += p.inner) {
      inner(x + oa, y + ob, out + oo, p.inner);
      int d = nd - 1;
      for (; d >= 0; --d) {
        oa += p.sa[d];
        ob += p.sb[d];
        if (++ctr[d] < p.outer[d]) break;
        oa -= p.sa[d] * p.outer[d];
        ob -= p.sb[d] * p.outer[d];
        ctr[d] = 0;
      }
      if (d < 0) return;
    }
  }
}

using Kernel = void (*)(const KernelArgs&);

// One table row per dtype: op index -> binary_run<op, T>.
template <typename T, size_t... I>
constexpr std::array<Kernel, sizeof...(I)> binary_table(std::index_sequence<I...>) {
  return {&binary_run<static_cast<BinaryOp>(I), T>...};
}

}  // namespace

void binary(const KernelArgs& a) {
  auto op = static_cast<const prim::Binary&>(*a.prim).op();
  if (is_complex((*a.in)[0].dtype)) {
    dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
      using T = decltype(tag);
      static constexpr auto table =
          binary_table<T>(std::make_index_sequence<prim::kNumBinaryOps>{});
      table[static_cast<size_t>(op)](a);
    });
    return;
  }
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    static constexpr auto table = binary_table<T>(std::make_index_sequence<prim::kNumBinaryOps>{});
    table[static_cast<size_t>(op)](a);
  });
}

}  // namespace tsr::detail::cpu
