// Reductions over axes, and argmax/argmin. The input is viewed as alternating
// groups of kept and reduced dims (size-1 dims dropped, neighbours of one kind
// merged). Row reductions ([kept, reduced]) use several independent accumulators
// so they vectorise; column reductions ([reduced, kept]) add whole rows into a
// block of accumulators. Other layouts walk the input once in memory order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "tsr/backends/common/reduce_ops.h"
#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/backends/cpu/vecmath.h"
#include "tsr/core/convert.h"
#include "tsr/error.h"
#include "tsr/prims/reduction.h"

namespace tsr::detail::cpu {
namespace {

using prim::ReduceKind;

constexpr int64_t kColBlock = 1024;  // accumulators per column block (8 KiB as doubles)
// Independent accumulators of a row reduction (measured: 8 suit sums, max and
// min run several times faster with 32).
template <ReduceKind K>
constexpr int kLanes = (K == ReduceKind::Max || K == ReduceKind::Min) ? 32 : 8;

// The accumulator: float for the half types, else backends/common/reduce_ops.h's
// (shared with CUDA, with the identity and combining step).
template <ReduceKind K, typename T>
auto acc_tag() {
  if constexpr (kIsHalf<T>) {
    return float{};
  } else {
    return ReduceAcc<K, T>{};
  }
}
template <ReduceKind K, typename T>
using Acc = decltype(acc_tag<K, T>());

template <ReduceKind K, typename A>
inline A identity() {
  return reduce_identity<K, A>();
}

template <ReduceKind K, typename A>
inline A combine(A acc, A y) {
  return reduce_combine<K>(acc, y);
}

// Reduces n contiguous elements. Float sums, max and min run the SIMD kernels
// (vecmath.h): the sums pairwise in the element type (as NumPy, more accurate
// than a per-lane running sum and 2x the speed of widening to double).
template <ReduceKind K, typename T, typename A>
A reduce_run(const T* x, int64_t n) {
  if constexpr (K == ReduceKind::Sum && std::is_same_v<T, float>) {
    return vecmath().sum_f32(x, n);
  } else if constexpr (K == ReduceKind::Sum && std::is_same_v<T, double>) {
    return vecmath().sum_f64(x, n);
  } else if constexpr (K == ReduceKind::Max && std::is_same_v<T, float>) {
    return vecmath().max_f32(x, n);
  } else if constexpr (K == ReduceKind::Min && std::is_same_v<T, float>) {
    return vecmath().min_f32(x, n);
  }
  constexpr int L = kLanes<K>;
  A acc[L];
  for (int j = 0; j < L; ++j) acc[j] = identity<K, A>();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] = combine<K>(acc[j], load<A>(x[i + j]));
  A r = acc[0];
  for (int j = 1; j < L; ++j) r = combine<K>(r, acc[j]);
  for (; i < n; ++i) r = combine<K>(r, load<A>(x[i]));
  return r;
}

// acc[j] = op(acc[j], x[j]) for j < m.
template <ReduceKind K, typename T, typename A>
inline void accumulate_row(A* acc, const T* x, int64_t m) {
  if constexpr (K == ReduceKind::Sum && std::is_same_v<T, float> && std::is_same_v<A, double>) {
    vecmath().accumulate_f32_f64(acc, x, m);  // AVX2 where there is: twice the width
  } else {
    for (int64_t j = 0; j < m; ++j) acc[j] = combine<K>(acc[j], load<A>(x[j]));
  }
}

// out[k] = op over r of x[r * nk + k], for an [nr, nk] block.
template <ReduceKind K, typename T, typename A>
void reduce_columns(const T* x, T* out, int64_t nr, int64_t nk) {
  A acc[kColBlock];
  for (int64_t k0 = 0; k0 < nk; k0 += kColBlock) {
    int64_t m = std::min(kColBlock, nk - k0);
    for (int64_t j = 0; j < m; ++j) acc[j] = identity<K, A>();
    for (int64_t r = 0; r < nr; ++r) accumulate_row<K>(acc, x + r * nk + k0, m);
    for (int64_t j = 0; j < m; ++j) out[k0 + j] = store<T>(acc[j]);
  }
}

// Collapsed view of the input: sizes of alternating kept/reduced groups.
struct Groups {
  std::vector<int64_t> size;
  std::vector<bool> reduced;
};

Groups collapse(const Shape& shape, const std::vector<int>& axes) {
  Groups g;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (shape[d] == 1) continue;
    bool r = std::binary_search(axes.begin(), axes.end(), d);
    if (!g.size.empty() && g.reduced.back() == r) {
      g.size.back() *= shape[d];
    } else {
      g.size.push_back(shape[d]);
      g.reduced.push_back(r);
    }
  }
  return g;
}

// Any layout: accumulate into an output-sized buffer in one pass over the input.
template <ReduceKind K, typename T, typename A>
void reduce_general(const T* x, T* out, const Groups& g, int64_t nout) {
  int ng = static_cast<int>(g.size.size());
  std::vector<A> acc(nout, identity<K, A>());
  std::vector<int64_t> ostride(ng, 0);  // output stride of each kept group
  for (int64_t s = 1, d = ng - 1; d >= 0; --d) {
    if (g.reduced[d]) continue;
    ostride[d] = s;
    s *= g.size[d];
  }
  int64_t run = g.size[ng - 1];
  bool run_reduced = g.reduced[ng - 1];
  std::vector<int64_t> ctr(ng - 1, 0);
  int64_t off = 0;
  for (const T* p = x;; p += run) {
    if (run_reduced) {
      acc[off] = combine<K>(acc[off], reduce_run<K, T, A>(p, run));
    } else {
      accumulate_row<K>(acc.data() + off, p, run);
    }
    int d = ng - 2;
    for (; d >= 0; --d) {
      off += ostride[d];
      if (++ctr[d] < g.size[d]) break;
      off -= ostride[d] * g.size[d];
      ctr[d] = 0;
    }
    if (d < 0) break;
  }
  for (int64_t i = 0; i < nout; ++i) out[i] = store<T>(acc[i]);
}

template <ReduceKind K, typename T>
void reduce_typed(const KernelArgs& a, const std::vector<int>& axes) {
  using A = Acc<K, T>;
  const T* x = a.i<T>(0);
  T* out = a.o<T>(0);
  const Shape& shape = (*a.in)[0].shape;
  int64_t nin = numel(shape), nout = numel((*a.out)[0].shape);
  if (nout == 0) return;
  if (nin == 0) {
    std::fill(out, out + nout, store<T>(identity<K, A>()));
    return;
  }
  if (nin == nout) {  // every reduced dim has size 1
    if (static_cast<const void*>(x) != out) std::memcpy(out, x, sizeof(T) * nin);
    return;
  }
  Groups g = collapse(shape, axes);
  const auto& s = g.size;
  const auto& r = g.reduced;
  size_t ng = s.size();
  if (ng == 1) {  // [R]
    out[0] = store<T>(reduce_run<K, T, A>(x, s[0]));
  } else if (ng == 2 && !r[0]) {  // [K, R]: row reductions
    for (int64_t o = 0; o < s[0]; ++o) out[o] = store<T>(reduce_run<K, T, A>(x + o * s[1], s[1]));
  } else if (ng == 2) {  // [R, K]: column reduction
    reduce_columns<K, T, A>(x, out, s[0], s[1]);
  } else if (ng == 3 && !r[0]) {  // [K, R, K]
    for (int64_t o = 0; o < s[0]; ++o)
      reduce_columns<K, T, A>(x + o * s[1] * s[2], out + o * s[2], s[1], s[2]);
  } else {
    reduce_general<K, T, A>(x, out, g, nout);
  }
}

template <ReduceKind K>
void reduce_kind(const KernelArgs& a, const std::vector<int>& axes) {
  DType dt = (*a.in)[0].dtype;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool bitwise = K == ReduceKind::And || K == ReduceKind::Or;
    if constexpr (std::is_same_v<T, bool>) {
      // Bool: sum/or/max are "any", prod/and/min are "all" (ordered bytes 0/1).
      constexpr bool any = K == ReduceKind::Sum || K == ReduceKind::Or || K == ReduceKind::Max;
      reduce_typed<any ? ReduceKind::Max : ReduceKind::Min, bool>(a, axes);
    } else if constexpr (bitwise && !std::is_integral_v<T>) {
      unsupported_dtype(prim::reduce_name(K), dt, "bool or an integer dtype");
    } else {
      reduce_typed<K, T>(a, axes);
    }
  });
}

// ---- argmax / argmin --------------------------------------------------------

// Index of the first element of row[0..n) equal to `target` (NaN: the first NaN).
// Checked a chunk at a time so the test vectorises; the scan stops at the match.
template <typename T, typename Key>
int64_t find_first(const T* row, int64_t n, Key target) {
  constexpr int64_t kChunk = 64;
  bool nan = target != target;
  auto match = [&](Key v) { return nan ? v != v : v == target; };
  for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
    int64_t m = std::min(kChunk, n - k0);
    int any = 0;
    for (int64_t j = 0; j < m; ++j) any |= match(load<Key>(row[k0 + j]));
    if (any)
      for (int64_t j = 0; j < m; ++j)
        if (match(load<Key>(row[k0 + j]))) return k0 + j;
  }
  return 0;
}

// Columns of [no, n, ni] (n >= 1): a block of running extremes and their
// indices, updated row by row. Idx has the key's width where it can, so that
// the update loop vectorises.
template <bool Max, typename T, typename Idx, typename I>
void arg_columns(const T* x, I* out, int64_t no, int64_t n, int64_t ni) {
  using Key = std::conditional_t<kIsHalf<T>, float, T>;
  Key best[kColBlock];
  Idx idx[kColBlock];
  for (int64_t o = 0; o < no; ++o) {
    for (int64_t i0 = 0; i0 < ni; i0 += kColBlock) {
      int64_t m = std::min(kColBlock, ni - i0);
      const T* base = x + o * n * ni + i0;
      for (int64_t j = 0; j < m; ++j) best[j] = load<Key>(base[j]), idx[j] = 0;
      for (int64_t k = 1; k < n; ++k) {
        const T* row = base + k * ni;
        for (int64_t j = 0; j < m; ++j) {
          Key v = load<Key>(row[j]), b = best[j];
          // Replace unless best is already NaN; a NaN v replaces.
          bool upd = (b == b) & ((Max ? v > b : v < b) | (v != v));
          best[j] = upd ? v : b;
          idx[j] = upd ? static_cast<Idx>(k) : idx[j];
        }
      }
      for (int64_t j = 0; j < m; ++j) out[o * ni + i0 + j] = static_cast<I>(idx[j]);
    }
  }
}

// First index of the extreme along the middle dim of [no, n, ni] (n >= 1); the
// first NaN counts as the extreme (as JAX). Half types compare as float (exact).
template <bool Max, typename T, typename I>
void arg_typed(const T* x, I* out, int64_t no, int64_t n, int64_t ni) {
  using Key = std::conditional_t<kIsHalf<T>, float, T>;
  constexpr ReduceKind kKind = Max ? ReduceKind::Max : ReduceKind::Min;
  if (ni == 1) {
    // Two vectorised passes: the extreme (NaN-propagating), then where it is.
    for (int64_t o = 0; o < no; ++o) {
      const T* row = x + o * n;
      out[o] = static_cast<I>(find_first(row, n, reduce_run<kKind, T, Key>(row, n)));
    }
  } else if (sizeof(Key) < 8 && n <= std::numeric_limits<int32_t>::max()) {
    arg_columns<Max, T, int32_t>(x, out, no, n, ni);
  } else {
    arg_columns<Max, T, int64_t>(x, out, no, n, ni);
  }
}

}  // namespace

void reduce(const KernelArgs& a) {
  if (is_complex((*a.in)[0].dtype)) return reduce_complex(a);
  const auto& p = static_cast<const prim::Reduce&>(*a.prim);
  switch (p.kind()) {
    case ReduceKind::Sum:
      return reduce_kind<ReduceKind::Sum>(a, p.axes());
    case ReduceKind::Prod:
      return reduce_kind<ReduceKind::Prod>(a, p.axes());
    case ReduceKind::Max:
      return reduce_kind<ReduceKind::Max>(a, p.axes());
    case ReduceKind::Min:
      return reduce_kind<ReduceKind::Min>(a, p.axes());
    case ReduceKind::And:
      return reduce_kind<ReduceKind::And>(a, p.axes());
    case ReduceKind::Or:
      return reduce_kind<ReduceKind::Or>(a, p.axes());
  }
}

void arg_reduce(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ArgReduce&>(*a.prim);
  AxisLines l = axis_lines((*a.in)[0].shape, p.axis());
  int64_t no = l.outer, n = l.n, ni = l.inner;
  if (no * ni == 0) return;
  if (n == 0) {  // no candidates (jnp.argmax raises); write index 0
    std::memset(a.out_ptr[0], 0, no * ni * itemsize((*a.out)[0].dtype));
    return;
  }
  DType it = (*a.out)[0].dtype;
  if (!is_integer(it)) unsupported_dtype(p.name(), it, "an integer index dtype (int32)");
  // The loops write int32 or int64 (other index dtypes go through an int64 block and
  // a conversion): instantiating them for every index dtype doubled this file's
  // compile time.
  const bool direct = it == DType::Int32 || it == DType::Int64;
  std::vector<int64_t> wide(direct ? 0 : static_cast<size_t>(no * ni));
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto* out) {
      if (p.is_max()) {
        arg_typed<true>(a.i<T>(0), out, no, n, ni);
      } else {
        arg_typed<false>(a.i<T>(0), out, no, n, ni);
      }
    };
    if (it == DType::Int32) {
      run(a.o<int32_t>(0));
    } else {
      run(direct ? a.o<int64_t>(0) : wide.data());
    }
  });
  if (!direct) convert(wide.data(), DType::Int64, a.out_ptr[0], it, no * ni);
}

}  // namespace tsr::detail::cpu
