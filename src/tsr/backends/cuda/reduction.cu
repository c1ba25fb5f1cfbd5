// CUDA reductions over axes: one thread block per output element, each thread
// accumulating a strided share of the reduced elements, then a tree in shared
// memory. Accumulator types follow the CPU kernel (float for the half types, double
// for float32 sums and products, a wide unsigned type for integer sums and products
// so they wrap as the stored type would); the order of a float sum differs from the
// CPU's pairwise sum, so results agree to rounding, not bit for bit.
#include "tsr/backends/common/reduce_ops.h"
#include "tsr/backends/common/scan_ops.h"
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

using prim::ReduceKind;

constexpr int kThreads = 256;

// The CPU kernel's accumulator (backends/common/reduce_ops.h), float for the half types.
template <ReduceKind K, typename S>
auto acc_tag() {
  if constexpr (!__is_same(Compute<S>, S)) {
    return float{};
  } else {
    return ReduceAcc<K, S>{};
  }
}
template <ReduceKind K, typename S>
using Acc = decltype(acc_tag<K, S>());

template <ReduceKind K, typename S, typename A>
__global__ void reduce_k(const S* x, S* out, ReduceSplit sp, int64_t nout) {
  __shared__ A part[kThreads];
  for (int64_t o = blockIdx.x; o < nout; o += gridDim.x) {
    const S* base = x + offset_in(sp.nk, sp.ksize, sp.kstride, o);
    A acc = reduce_identity<K, A>();
    for (int64_t r = threadIdx.x; r < sp.rcount; r += blockDim.x)
      acc = reduce_combine<K>(
          acc, static_cast<A>(load(base[offset_in(sp.nr, sp.rsize, sp.rstride, r)])));
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if (static_cast<int>(threadIdx.x) < w)
        part[threadIdx.x] = reduce_combine<K>(part[threadIdx.x], part[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = store<S>(part[0]);
    __syncthreads();
  }
}

template <ReduceKind K>
void reduce_kind(DType t, const void* x, void* out, const ReduceSplit& sp, int64_t nout,
                 cudaStream_t s) {
  unsigned blocks = static_cast<unsigned>(nout < 65535 ? nout : 65535);
  dispatch_real(t, "reduce", [&](auto tag) {
    using S = decltype(tag);
    using A = Acc<K, S>;
    constexpr bool kBits = K == ReduceKind::And || K == ReduceKind::Or;
    if constexpr (kBits && ops::kIsFloat<A>) {
      unsupported("reduce", t);  // the rules take and / or of bool and integers only
    } else {
      reduce_k<K, S, A>
          <<<blocks, kThreads, 0, s>>>(static_cast<const S*>(x), static_cast<S*>(out), sp, nout);
    }
  });
  check(cudaGetLastError(), "reduce", "kernel launch");
}

// argmax / argmin of one [n] line (stride ni) per thread: the first index of the
// extreme, and the first NaN counts as the extreme (as JAX and the CPU kernel).
template <bool Max, typename S, typename I>
__global__ void arg_k(const S* x, I* out, int64_t no, int64_t n, int64_t ni) {
  TSR_CUDA_FOR(t, no * ni) {
    int64_t o = t / ni, k = t - o * ni;
    const S* line = x + o * n * ni + k;
    auto best = load(line[0]);
    int64_t at = 0;
    if (best == best) {
      for (int64_t j = 1; j < n; ++j) {
        auto v = load(line[j * ni]);
        if (v != v) {
          at = j;
          break;
        }
        if (Max ? v > best : v < best) {
          best = v;
          at = j;
        }
      }
    }
    out[t] = static_cast<I>(at);
  }
}

// One cumulative line per thread, in the CPU kernel's order (so float sums agree
// bit for bit): x is [no, n, ni], each (o, k) line scanned forward or reversed.
template <prim::CumKind K, typename S>
__global__ void scan_k(const S* x, S* out, int64_t no, int64_t n, int64_t ni, bool reverse) {
  using C = Compute<S>;
  using A = typename ScanAcc<C>::type;
  TSR_CUDA_FOR(t, no * ni) {
    int64_t o = t / ni, k = t - o * ni;
    const S* xl = x + o * n * ni + k;
    S* ol = out + o * n * ni + k;
    A acc{};
    for (int64_t j = 0; j < n; ++j) {
      int64_t p = (reverse ? n - 1 - j : j) * ni;
      A y = static_cast<A>(load(xl[p]));
      acc = j == 0 ? y : scan_combine<K, C>(acc, y);
      ol[p] = store<S>(acc);
    }
  }
}

template <prim::CumKind K>
void scan_kind(DType t, const void* x, void* out, int64_t no, int64_t n, int64_t ni, bool reverse,
               cudaStream_t s) {
  Launch l = launch_1d(no * ni);
  dispatch_real(t, "cumulative", [&](auto tag) {
    using S = decltype(tag);
    if constexpr (K == prim::CumKind::LogSumExp && !ops::kIsFloat<Compute<S>>) {
      unsupported("cumlogsumexp", t);
    } else {
      scan_k<K, S><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(x), static_cast<S*>(out),
                                                  no, n, ni, reverse);
    }
  });
  check(cudaGetLastError(), "cumulative", "kernel launch");
}

}  // namespace

void scan_launch(int kind, DType t, const void* x, void* out, int64_t no, int64_t n, int64_t ni,
                 bool reverse, cudaStream_t s) {
  if (no * n * ni == 0) return;
  switch (static_cast<prim::CumKind>(kind)) {
    case prim::CumKind::Sum:
      return scan_kind<prim::CumKind::Sum>(t, x, out, no, n, ni, reverse, s);
    case prim::CumKind::Prod:
      return scan_kind<prim::CumKind::Prod>(t, x, out, no, n, ni, reverse, s);
    case prim::CumKind::Max:
      return scan_kind<prim::CumKind::Max>(t, x, out, no, n, ni, reverse, s);
    case prim::CumKind::Min:
      return scan_kind<prim::CumKind::Min>(t, x, out, no, n, ni, reverse, s);
    case prim::CumKind::LogSumExp:
      return scan_kind<prim::CumKind::LogSumExp>(t, x, out, no, n, ni, reverse, s);
  }
}

void arg_reduce_launch(bool is_max, DType t, DType index_t, const void* x, void* out, int64_t no,
                       int64_t n, int64_t ni, cudaStream_t s) {
  if (no * ni == 0) return;
  Launch l = launch_1d(no * ni);
  dispatch_real(t, "argmax", [&](auto tag) {
    using S = decltype(tag);
    dispatch_real(index_t, "argmax", [&](auto itag) {
      using I = decltype(itag);
      if constexpr (ops::Traits<Compute<I>>::kInt && __is_same(Compute<I>, I)) {
        if (is_max)
          arg_k<true, S, I><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(x),
                                                           static_cast<I*>(out), no, n, ni);
        else
          arg_k<false, S, I><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(x),
                                                            static_cast<I*>(out), no, n, ni);
      } else {
        unsupported("argmax", index_t);
      }
    });
  });
  check(cudaGetLastError(), "argmax", "kernel launch");
}

void reduce_launch(int kind, DType t, const void* x, void* out, const ReduceSplit& sp, int64_t nout,
                   cudaStream_t s) {
  if (nout == 0) return;
  switch (static_cast<ReduceKind>(kind)) {
    case ReduceKind::Sum:
      return reduce_kind<ReduceKind::Sum>(t, x, out, sp, nout, s);
    case ReduceKind::Prod:
      return reduce_kind<ReduceKind::Prod>(t, x, out, sp, nout, s);
    case ReduceKind::Max:
      return reduce_kind<ReduceKind::Max>(t, x, out, sp, nout, s);
    case ReduceKind::Min:
      return reduce_kind<ReduceKind::Min>(t, x, out, sp, nout, s);
    case ReduceKind::And:
      return reduce_kind<ReduceKind::And>(t, x, out, sp, nout, s);
    case ReduceKind::Or:
      return reduce_kind<ReduceKind::Or>(t, x, out, sp, nout, s);
  }
}

}  // namespace tsr::detail::cuda
