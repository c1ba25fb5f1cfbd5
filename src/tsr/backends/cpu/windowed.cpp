// Windowed reductions and the pooling-gradient kernels. One index walk serves all
// three: for each output position and each window tap, the tap's operand element (or
// none, in padding or a base-dilation hole), precomputed per dimension. Half types
// accumulate in float, as the reductions do.
#include <cmath>
#include <limits>
#include <vector>

#include "tsr/backends/common/window_ops.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/windowed.h"

namespace tsr::detail::cpu {
namespace {

using prim::Window;
using prim::WindowOp;

// The accumulator and identities are shared with the CUDA kernels (window_ops.h).
template <typename T>
struct Acc {
  using type = WindowAcc<T>;
};
template <typename C>
C lowest() {
  return window_lowest<C>();
}
template <typename C>
C highest() {
  return window_highest<C>();
}

template <typename T>
typename Acc<T>::type widen(T v) {
  return static_cast<typename Acc<T>::type>(v);
}
template <typename T>
T narrow(typename Acc<T>::type v) {
  return static_cast<T>(v);
}

// The operand element under each (output position, tap) pair, dimension by dimension:
// taps[d][o * W_d + w] is the operand index along d, or -1 (padding or a hole). The
// trailing dimensions the window passes through untouched (size 1, stride 1, no
// padding or dilation: NHWC's features) form one contiguous `inner` run that every
// kernel handles with a plain loop; the walk itself covers the outer dimensions.
struct Walk {
  std::vector<int64_t> in_shape, out_shape, win;
  std::vector<std::vector<int64_t>> taps;
  int64_t out_n = 1, win_n = 1, inner = 1;
  size_t r = 0;

  Walk(const Shape& in, const Shape& out, const Window& w)
      : in_shape(in), out_shape(out), win(w.dims) {
    r = in.size();
    while (r > 0) {
      const size_t d = r - 1;
      const bool through = w.dims[d] == 1 && w.strides[d] == 1 && w.padding[d].first == 0 &&
                           w.padding[d].second == 0 && w.base_dilation[d] == 1 &&
                           w.window_dilation[d] == 1;
      if (!through) break;
      inner *= in[d];
      --r;
    }
    taps.resize(r);
    for (size_t d = 0; d < r; ++d) {
      out_n *= out[d];
      win_n *= w.dims[d];
      taps[d].resize(static_cast<size_t>(out[d] * w.dims[d]));
      for (int64_t o = 0; o < out[d]; ++o)
        for (int64_t k = 0; k < w.dims[d]; ++k) {
          taps[d][static_cast<size_t>(o * w.dims[d] + k)] =
              window_tap(o, k, w.strides[d], w.window_dilation[d], w.padding[d].first,
                         w.base_dilation[d], in[d]);
        }
    }
  }

  /** Elements of the output (outer positions x inner run). */
  int64_t out_elements() const { return out_n * inner; }

  // f(out_offset, in_offset) for every tap of every outer output position that falls on
  // an operand element (padding and holes are skipped), taps in row-major window order;
  // offsets are element offsets of the inner runs.
  // Over the outer output positions [begin, end) only (a thread's share).
  template <typename F>
  void each(F&& f, int64_t begin = 0, int64_t end = -1) const {
    if (end < 0) end = out_n;
    if (begin >= end) return;  // nothing to do (an empty output has a size-0 dim)
    std::vector<int64_t> o(r, 0), k(r, 0), stride(r, 1);
    for (size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * in_shape[d];
    for (int64_t rem = begin, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      o[static_cast<size_t>(d)] = rem % out_shape[static_cast<size_t>(d)];
      rem /= out_shape[static_cast<size_t>(d)];
    }
    for (int64_t of = begin; of < end; ++of) {
      std::fill(k.begin(), k.end(), 0);
      for (int64_t t = 0; t < win_n; ++t) {
        int64_t in_flat = 0;
        for (size_t d = 0; d < r && in_flat >= 0; ++d) {
          int64_t i = taps[d][static_cast<size_t>(o[d] * win[d] + k[d])];
          in_flat = i < 0 ? -1 : in_flat + i * stride[d];
        }
        if (in_flat >= 0) f(of * inner, in_flat * inner);
        for (size_t d = r; d-- > 0;) {
          if (++k[d] < win[d]) break;
          k[d] = 0;
        }
      }
      for (size_t d = r; d-- > 0;) {
        if (++o[d] < out_shape[d]) break;
        o[d] = 0;
      }
    }
  }
};

template <typename T>
void reduce_window_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::ReduceWindow&>(*a.prim);
  using C = typename Acc<T>::type;
  const T* x = a.i<T>(0);
  T* out = a.o<T>(0);
  Walk walk((*a.in)[0].shape, (*a.out)[0].shape, p.window());
  const WindowOp op = p.op();
  const int64_t n = walk.inner;
  const C init = op == WindowOp::Sum ? C(0) : op == WindowOp::Max ? lowest<C>() : highest<C>();
  // Accumulate in the output itself when it has the accumulation type.
  std::vector<C> acc;
  C* ac;
  if constexpr (std::is_same_v<C, T>) {
    ac = out;
  } else {
    acc.resize(static_cast<size_t>(walk.out_elements()));
    ac = acc.data();
  }
  // The outer output positions split over the kernel's threads; one loop per monoid
  // over the inner run, so that each vectorises.
  parallel_ranges(walk.out_n, kernel_threads(a.busy_devices),
                  std::max<int64_t>(1, kParallelMin / std::max<int64_t>(1, n * walk.win_n)), 1,
                  [&](int64_t b, int64_t e) {
                    std::fill(ac + b * n, ac + e * n, init);
                    if (op == WindowOp::Sum) {
                      walk.each(
                          [&](int64_t o, int64_t i) {
                            for (int64_t j = 0; j < n; ++j)
                              ac[o + j] = static_cast<C>(ac[o + j] + widen(x[i + j]));
                          },
                          b, e);
                    } else if (op == WindowOp::Max) {
                      walk.each(
                          [&](int64_t o, int64_t i) {
                            for (int64_t j = 0; j < n; ++j) {
                              const C v = widen(x[i + j]);
                              // NaN propagates, as lax.max (v != v is NaN).
                              ac[o + j] = (v > ac[o + j] || v != v) ? v : ac[o + j];
                            }
                          },
                          b, e);
                    } else {
                      walk.each(
                          [&](int64_t o, int64_t i) {
                            for (int64_t j = 0; j < n; ++j) {
                              const C v = widen(x[i + j]);
                              ac[o + j] = (v < ac[o + j] || v != v) ? v : ac[o + j];
                            }
                          },
                          b, e);
                    }
                    if constexpr (!std::is_same_v<C, T>)
                      for (int64_t o = b * n; o < e * n; ++o) out[o] = narrow<T>(ac[o]);
                  });
}

// The operand element each window selects, per element of the output (-1: padding).
// JAX's pairwise reduction: the pick starts at the identity (-inf for max) with no
// element, and a tap replaces it when !(pick >= tap) (<= for min): ties keep the
// earlier tap, padding never replaces, and an all -inf window selects nothing (a zero
// tangent), as JAX's CPU lowering does.
template <typename T>
std::vector<int64_t> selected(const Walk& walk, const T* x, WindowOp op, int threads) {
  using C = typename Acc<T>::type;
  const C identity = op == WindowOp::Max ? lowest<C>() : highest<C>();
  const int64_t n = walk.inner;
  std::vector<int64_t> pick(static_cast<size_t>(walk.out_elements()), -1);
  std::vector<C> best(static_cast<size_t>(walk.out_elements()), identity);
  parallel_ranges(walk.out_n, threads,
                  std::max<int64_t>(1, kParallelMin / std::max<int64_t>(1, n * walk.win_n)), 1,
                  [&](int64_t b, int64_t e) {
                    walk.each(
                        [&](int64_t o, int64_t i) {
                          for (int64_t j = 0; j < n; ++j) {
                            const C v = widen(x[i + j]);
                            C& bv = best[static_cast<size_t>(o + j)];
                            if (select_step(op == WindowOp::Max, bv, v))
                              pick[static_cast<size_t>(o + j)] = i + j;
                          }
                        },
                        b, e);
                  });
  return pick;
}

template <typename S, typename T>
void gather_add_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SelectAndGatherAdd&>(*a.prim);
  Walk walk((*a.in)[1].shape, (*a.out)[0].shape, p.window());
  std::vector<int64_t> pick = selected(walk, a.i<T>(1), p.select(), kernel_threads(a.busy_devices));
  const S* t = a.i<S>(0);
  S* out = a.o<S>(0);
  for (int64_t o = 0; o < walk.out_elements(); ++o) {
    int64_t i = pick[static_cast<size_t>(o)];
    out[o] = i < 0 ? S(0.0f) : t[i];
  }
}

template <typename S, typename T>
void scatter_add_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SelectAndScatterAdd&>(*a.prim);
  Walk walk((*a.in)[1].shape, (*a.in)[0].shape, p.window());
  std::vector<int64_t> pick = selected(walk, a.i<T>(1), p.select(), kernel_threads(a.busy_devices));
  using C = typename Acc<S>::type;
  const S* src = a.i<S>(0);
  int64_t n = 1;
  for (int64_t d : (*a.in)[1].shape) n *= d;
  std::vector<C> acc(static_cast<size_t>(n), C(0));
  for (int64_t o = 0; o < walk.out_elements(); ++o) {
    int64_t i = pick[static_cast<size_t>(o)];
    if (i >= 0) acc[static_cast<size_t>(i)] += widen(src[o]);
  }
  S* out = a.o<S>(0);
  for (int64_t i = 0; i < n; ++i) out[i] = narrow<S>(acc[static_cast<size_t>(i)]);
}

// The float dtype of the added values (S) and any dtype of the selecting operand (T).
template <typename S>
void with_operand(const KernelArgs& a, bool gather) {
  dispatch_dtype((*a.in)[1].dtype, [&](auto t) {
    using T = decltype(t);
    if (gather)
      gather_add_t<S, T>(a);
    else
      scatter_add_t<S, T>(a);
  });
}

void select_kernel(const KernelArgs& a, bool gather) {
  switch ((*a.in)[0].dtype) {
    case DType::Float16:
      return with_operand<float16_t>(a, gather);
    case DType::BFloat16:
      return with_operand<bfloat16_t>(a, gather);
    case DType::Float64:
      return with_operand<double>(a, gather);
    default:
      return with_operand<float>(a, gather);
  }
}

}  // namespace

void reduce_window(const KernelArgs& a) {
  dispatch_dtype((*a.in)[0].dtype, [&](auto t) { reduce_window_t<decltype(t)>(a); });
}
void select_and_gather_add(const KernelArgs& a) { select_kernel(a, true); }
void select_and_scatter_add(const KernelArgs& a) { select_kernel(a, false); }

}  // namespace tsr::detail::cpu
