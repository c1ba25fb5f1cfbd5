// CUDA reduce_window and pooling-gradient kernels and their launchers (launch.h): one
// thread per window position walks its taps in the CPU kernel's order (row-major over
// the window) through the shared tap arithmetic (backends/common/window_ops.h), so
// sums, maxima and selections are the CPU's bit for bit. select_and_scatter_add adds
// each window's source value at its pick atomically (the order of those additions,
// and so their rounding, varies from run to run).
#include "tsr/backends/common/window_ops.h"
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

constexpr int K = kWindowMaxDims;

__device__ __forceinline__ void window_coords(int64_t i, const WindowPlan& p, int64_t* o) {
  for (int d = p.rank - 1; d >= 0; --d) {
    int64_t q = i / p.out_size[d];
    o[d] = i - q * p.out_size[d];
    i = q;
  }
}

// op: prim::WindowOp's value (Sum, Max, Min). NaN propagates in max / min, as lax's.
template <typename T>
__global__ void reduce_window_k(int op, const T* x, T* out, WindowPlan p, int64_t n) {
  using C = WindowAcc<T>;
  TSR_CUDA_FOR(i, n) {
    int64_t o[K];
    window_coords(i, p, o);
    C acc = op == 0 ? C(0) : (op == 1 ? window_lowest<C>() : window_highest<C>());
    for (int64_t t = 0; t < p.win_n; ++t) {
      int64_t j = window_input(p, o, t);
      if (j < 0) continue;
      const C v = static_cast<C>(load(x[j]));
      if (op == 0)
        acc = static_cast<C>(acc + v);
      else if (op == 1)
        acc = (v > acc || v != v) ? v : acc;
      else
        acc = (v < acc || v != v) ? v : acc;
    }
    out[i] = store<T>(acc);
  }
}

// The operand element window position o selects (-1: none).
template <typename T>
__device__ int64_t select_pick(bool is_max, const T* x, const WindowPlan& p, const int64_t* o) {
  using C = WindowAcc<T>;
  C best = is_max ? window_lowest<C>() : window_highest<C>();
  int64_t pick = -1;
  for (int64_t t = 0; t < p.win_n; ++t) {
    int64_t j = window_input(p, o, t);
    if (j >= 0 && select_step(is_max, best, static_cast<C>(load(x[j])))) pick = j;
  }
  return pick;
}

template <typename S, typename T>
__global__ void select_gather_k(bool is_max, const S* tangent, const T* x, S* out, WindowPlan p,
                                int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t o[K];
    window_coords(i, p, o);
    int64_t j = select_pick(is_max, x, p, o);
    out[i] = j < 0 ? store<S>(0.0f) : tangent[j];
  }
}

template <typename S, typename T>
__global__ void select_scatter_k(bool is_max, const S* src, const T* x, Compute<S>* acc,
                                 WindowPlan p, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t o[K];
    window_coords(i, p, o);
    int64_t j = select_pick(is_max, x, p, o);
    if (j >= 0) atomicAdd(acc + j, load(src[i]));
  }
}

template <typename S>
__global__ void narrow_k(const float* acc, S* out, int64_t n) {
  TSR_CUDA_FOR(i, n) { out[i] = store<S>(acc[i]); }
}

// Calls f(S{}) with the float type of the added values (float for any other dtype, as
// the CPU kernel).
template <typename F>
void by_float(DType t, F&& f) {
  switch (t) {
    case DType::Float16:
      return f(float16_t{});
    case DType::BFloat16:
      return f(bfloat16_t{});
    case DType::Float64:
      return f(double{});
    default:
      return f(float{});
  }
}

}  // namespace

void reduce_window_launch(int op, DType t, const void* x, void* out, const WindowPlan& p, int64_t n,
                          cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "reduce_window", [&](auto tag) {
    using T = decltype(tag);
    reduce_window_k<T>
        <<<l.blocks, l.threads, 0, s>>>(op, static_cast<const T*>(x), static_cast<T*>(out), p, n);
  });
  check(cudaGetLastError(), "reduce_window", "kernel launch");
}

void select_and_gather_add_launch(bool is_max, DType st, DType t, const void* tangent,
                                  const void* x, void* out, const WindowPlan& p, int64_t n,
                                  cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_float(st, [&](auto stag) {
    using S = decltype(stag);
    dispatch_real(t, "select_and_gather_add", [&](auto tag) {
      using T = decltype(tag);
      select_gather_k<S, T><<<l.blocks, l.threads, 0, s>>>(is_max, static_cast<const S*>(tangent),
                                                           static_cast<const T*>(x),
                                                           static_cast<S*>(out), p, n);
    });
  });
  check(cudaGetLastError(), "select_and_gather_add", "kernel launch");
}

void select_and_scatter_add_launch(bool is_max, DType st, DType t, const void* src, const void* x,
                                   void* out, const WindowPlan& p, int64_t nsrc, int64_t nout,
                                   cudaStream_t s) {
  if (nout == 0) return;
  by_float(st, [&](auto stag) {
    using S = decltype(stag);
    using C = Compute<S>;
    constexpr bool kNarrow = !__is_same(S, C);  // the half types add in float
    Scratch wide(s, "select_and_scatter_add");
    if constexpr (kNarrow) wide.alloc(static_cast<size_t>(nout) * sizeof(float));
    C* acc = kNarrow ? static_cast<C*>(wide.p) : static_cast<C*>(out);
    check(cudaMemsetAsync(acc, 0, static_cast<size_t>(nout) * sizeof(C), s),
          "select_and_scatter_add", "cudaMemsetAsync");
    if (nsrc > 0) {
      Launch l = launch_1d(nsrc);
      dispatch_real(t, "select_and_scatter_add", [&](auto tag) {
        using T = decltype(tag);
        select_scatter_k<S, T><<<l.blocks, l.threads, 0, s>>>(
            is_max, static_cast<const S*>(src), static_cast<const T*>(x), acc, p, nsrc);
      });
    }
    if constexpr (kNarrow) {
      Launch l = launch_1d(nout);
      narrow_k<S><<<l.blocks, l.threads, 0, s>>>(static_cast<const float*>(wide.p),
                                                 static_cast<S*>(out), nout);
    }
  });
  check(cudaGetLastError(), "select_and_scatter_add", "kernel launch");
}

}  // namespace tsr::detail::cuda
