// CUDA gather and scatter kernels and their launchers (launch.h). The slice and window
// starts come from the CPU kernels' code (backends/common/gather_scatter_plan.h).
// gather: one thread per output element. scatter: one thread per update element;
// replace (Set) is deterministic (the last scatter position in the CPU's row-major
// order wins, chosen by an atomicMax on the position), the combiners are atomic
// (atomicAdd, atomicMin / Max, or a compare-and-swap loop), except float and complex
// multiplication and complex min / max, which walk the scatter positions in the
// CPU's order in one block (bit-identical results).
#include <cstring>
#include <type_traits>

#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

constexpr int K = kIndexingMaxDims;

// Row-major coordinates of flat index i over `rank` dims of `size`.
__device__ __forceinline__ void coords(int64_t i, int rank, const int64_t* size, int64_t* c) {
  for (int d = rank - 1; d >= 0; --d) {
    int64_t q = i / size[d];
    c[d] = i - q * size[d];
    i = q;
  }
}

template <typename U>
__global__ void gather_k(const U* src, const void* ind, U* out, GatherPlan p, U fill, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t c[K], bl[K];
    coords(i, p.out_rank, p.out_size, c);
    for (int k = 0; k < p.nb; ++k) bl[k] = c[p.batch_out_dim[k]];
    int64_t off = gather_slice_offset(p, bl, ind);
    if (off < 0) {
      out[i] = fill;
      continue;
    }
    for (int w = 0; w < p.nw; ++w) off += c[p.window_out_dim[w]] * p.window_stride[w];
    out[i] = src[off];
  }
}

// Update element i's output offset (-1: dropped, or in another block) and its scatter
// position, row-major over the scatter dims (the CPU kernel's order).
__device__ int64_t scatter_target(const ScatterPlan& p, const void* ind, int64_t i, int64_t* pos) {
  int64_t uc[K], sl[K], start[K];
  coords(i, p.urank, p.upd_size, uc);
  int64_t s = 0;
  for (int k = 0; k < p.ns; ++k) {
    sl[k] = uc[p.scatter_udim[k]];
    s = s * p.scatter_size[k] + sl[k];
  }
  *pos = s;
  if (!scatter_start(p, sl, ind, start)) return -1;
  return scatter_dest(p, start, uc);
}

// Set, pass 1: each output element records the last scatter position writing it (+1).
__global__ void scatter_claim_k(ScatterPlan p, const void* ind, unsigned long long* win,
                                int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t s, d = scatter_target(p, ind, i, &s);
    if (d >= 0) atomicMax(win + d, static_cast<unsigned long long>(s + 1));
  }
}

// Set, pass 2: the winning position's update is written.
template <typename U>
__global__ void scatter_set_k(ScatterPlan p, const void* ind, const unsigned long long* win,
                              const U* upd, U* out, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t s, d = scatter_target(p, ind, i, &s);
    if (d >= 0 && win[d] == static_cast<unsigned long long>(s + 1)) out[d] = upd[i];
  }
}

// *p = f(*p) atomically by compare-and-swap; 1- and 2-byte elements swap the aligned
// 4-byte word that holds them. Nothing is written when f keeps the bits.
template <typename S, typename F>
__device__ void cas_update(S* p, F f) {
  if constexpr (sizeof(S) == 4 || sizeof(S) == 8) {
    using W = typename std::conditional<sizeof(S) == 4, unsigned, unsigned long long>::type;
    W* w = reinterpret_cast<W*>(p);
    W old = *w, assumed;
    do {
      assumed = old;
      S cur, nv;
      memcpy(&cur, &assumed, sizeof(S));
      nv = f(cur);
      W bits;
      memcpy(&bits, &nv, sizeof(S));
      if (bits == assumed) return;
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else {
    uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned* w = reinterpret_cast<unsigned*>(addr & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3u) * 8u;
    const unsigned mask = ((sizeof(S) == 1 ? 0xffu : 0xffffu) << shift);
    unsigned old = *w, assumed;
    do {
      assumed = old;
      unsigned part = (assumed & mask) >> shift;
      S cur, nv;
      memcpy(&cur, &part, sizeof(S));  // little-endian: the low bytes
      nv = f(cur);
      unsigned nb = 0;
      memcpy(&nb, &nv, sizeof(S));
      unsigned word = (assumed & ~mask) | (nb << shift);
      if (word == assumed) return;
      old = atomicCAS(w, assumed, word);
    } while (old != assumed);
  }
}

// out op= b for a real element (the half types combine in float, as the CPU kernel).
template <typename S>
__device__ void atomic_combine(ScatterOp k, S* out, S b) {
  using C = Compute<S>;
  constexpr bool kFull = __is_same(S, float) || __is_same(S, double);
  constexpr bool kWide = ops::Traits<C>::kInt && (sizeof(S) == 4 || sizeof(S) == 8);
  if constexpr (kFull) {
    if (k == ScatterOp::Add || k == ScatterOp::Sub) {
      atomicAdd(out, k == ScatterOp::Sub ? -b : b);  // a - b == a + (-b) exactly
      return;
    }
  } else if constexpr (kWide) {
    using W = typename std::conditional<sizeof(S) == 4, unsigned, unsigned long long>::type;
    if (k == ScatterOp::Add || k == ScatterOp::Sub) {  // wrapping, as the CPU's unsigned sum
      W v = static_cast<W>(b);
      atomicAdd(reinterpret_cast<W*>(out), k == ScatterOp::Sub ? W(0) - v : v);
      return;
    }
    if (k == ScatterOp::Min || k == ScatterOp::Max) {
      using A =
          typename std::conditional<ops::Traits<S>::kSigned,
                                    typename std::conditional<sizeof(S) == 4, int, long long>::type,
                                    W>::type;
      A* q = reinterpret_cast<A*>(out);
      if (k == ScatterOp::Min)
        atomicMin(q, static_cast<A>(b));
      else
        atomicMax(q, static_cast<A>(b));
      return;
    }
  }
  const C y = load(b);
  cas_update(out, [k, y](S cur) { return store<S>(scatter_combine<C>(k, load(cur), y)); });
}

template <typename S>
__global__ void scatter_combine_k(ScatterOp k, ScatterPlan p, const void* ind, const S* upd, S* out,
                                  int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t s, d = scatter_target(p, ind, i, &s);
    if (d >= 0) atomic_combine(k, out + d, upd[i]);
  }
}

// Complex add / sub: each part atomically.
template <typename R>
__global__ void scatter_complex_add_k(bool sub, ScatterPlan p, const void* ind, const R* upd,
                                      R* out, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t s, d = scatter_target(p, ind, i, &s);
    if (d < 0) continue;
    atomicAdd(out + 2 * d, sub ? -upd[2 * i] : upd[2 * i]);
    atomicAdd(out + 2 * d + 1, sub ? -upd[2 * i + 1] : upd[2 * i + 1]);
  }
}

/** A complex element as its parts. */
template <typename R>
struct alignas(2 * sizeof(R)) Cplx {
  R re, im;
};

// The CPU's combiners where order matters: a real element, or a complex one (lax's
// lexicographic min / max; the product's textbook formula, std::complex's for
// finite values).
struct OrderedCombine {
  ScatterOp k;
  template <typename S>
  __device__ S operator()(S a, S b) const {
    return store<S>(scatter_combine<Compute<S>>(k, load(a), load(b)));
  }
  template <typename R>
  __device__ Cplx<R> operator()(Cplx<R> a, Cplx<R> b) const {
    switch (k) {
      case ScatterOp::Mul:
        return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
      case ScatterOp::Min:
        return complex_less(b.re, b.im, a.re, a.im) ? b : a;
      case ScatterOp::Max:
        return complex_less(a.re, a.im, b.re, b.im) ? b : a;
      case ScatterOp::Add:
        return {a.re + b.re, a.im + b.im};
      case ScatterOp::Sub:
        return {a.re - b.re, a.im - b.im};
      default:
        return b;
    }
  }
};

// One block walks the scatter positions in the CPU's order; its threads share each
// window (a window's elements land on distinct outputs), a barrier between positions.
template <typename S>
__global__ void scatter_ordered_k(OrderedCombine f, ScatterPlan p, const void* ind, const S* upd,
                                  S* out, int64_t npos, int64_t wn) {
  int64_t wsize[K], ust[K];
  for (int j = 0; j < p.nw; ++j) wsize[j] = p.upd_size[p.window_udim[j]];
  int64_t acc = 1;
  for (int u = p.urank - 1; u >= 0; --u) {
    ust[u] = acc;
    acc *= p.upd_size[u];
  }
  for (int64_t s = 0; s < npos; ++s) {
    int64_t sl[K], start[K], uc[K], wc[K];
    coords(s, p.ns, p.scatter_size, sl);
    if (scatter_start(p, sl, ind, start)) {  // the same answer in every thread
      for (int k = 0; k < p.ns; ++k) uc[p.scatter_udim[k]] = sl[k];
      for (int64_t w = threadIdx.x; w < wn; w += blockDim.x) {
        coords(w, p.nw, wsize, wc);
        for (int j = 0; j < p.nw; ++j) uc[p.window_udim[j]] = wc[j];
        int64_t d = scatter_dest(p, start, uc);
        if (d < 0) continue;
        int64_t u = 0;
        for (int q = 0; q < p.urank; ++q) u += uc[q] * ust[q];
        out[d] = f(out[d], upd[u]);
      }
    }
    __syncthreads();
  }
}

template <typename S>
void launch_ordered(ScatterOp k, const ScatterPlan& p, const void* ind, const void* upd, void* out,
                    cudaStream_t s) {
  int64_t npos = 1, wn = 1;
  for (int q = 0; q < p.ns; ++q) npos *= p.scatter_size[q];
  for (int j = 0; j < p.nw; ++j) wn *= p.upd_size[p.window_udim[j]];
  unsigned threads = wn >= 256 ? 256u : (wn >= 32 ? static_cast<unsigned>(wn) : 32u);
  scatter_ordered_k<S><<<1, threads, 0, s>>>(OrderedCombine{k}, p, ind, static_cast<const S*>(upd),
                                             static_cast<S*>(out), npos, wn);
}

}  // namespace

void gather_launch(size_t item, const void* src, const void* ind, const GatherPlan& p,
                   const void* fill, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    U f;
    memcpy(&f, fill, sizeof(U));
    gather_k<U><<<l.blocks, l.threads, 0, s>>>(static_cast<const U*>(src), ind,
                                               static_cast<U*>(out), p, f, n);
  });
  check(cudaGetLastError(), "gather", "kernel launch");
}

void scatter_launch(int kind, DType t, const ScatterPlan& p, const void* ind, const void* upd,
                    void* out, int64_t nupd, int64_t nout, cudaStream_t s) {
  if (nupd == 0 || nout == 0) return;
  const auto k = static_cast<ScatterOp>(kind);
  Launch l = launch_1d(nupd);
  if (k == ScatterOp::Set) {
    Scratch win(s, "scatter");
    win.alloc(static_cast<size_t>(nout) * sizeof(unsigned long long));
    check(cudaMemsetAsync(win.p, 0, static_cast<size_t>(nout) * sizeof(unsigned long long), s),
          "scatter", "cudaMemsetAsync");
    auto* w = static_cast<unsigned long long*>(win.p);
    scatter_claim_k<<<l.blocks, l.threads, 0, s>>>(p, ind, w, nupd);
    by_item_size(itemsize(t), [&](auto tag) {
      using U = decltype(tag);
      scatter_set_k<U><<<l.blocks, l.threads, 0, s>>>(p, ind, w, static_cast<const U*>(upd),
                                                      static_cast<U*>(out), nupd);
    });
  } else if (is_complex(t)) {
    bool dbl = t == DType::Complex128;
    if (k == ScatterOp::Add || k == ScatterOp::Sub) {
      if (dbl)
        scatter_complex_add_k<double><<<l.blocks, l.threads, 0, s>>>(
            k == ScatterOp::Sub, p, ind, static_cast<const double*>(upd), static_cast<double*>(out),
            nupd);
      else
        scatter_complex_add_k<float><<<l.blocks, l.threads, 0, s>>>(k == ScatterOp::Sub, p, ind,
                                                                    static_cast<const float*>(upd),
                                                                    static_cast<float*>(out), nupd);
    } else if (dbl) {
      launch_ordered<Cplx<double>>(k, p, ind, upd, out, s);
    } else {
      launch_ordered<Cplx<float>>(k, p, ind, upd, out, s);
    }
  } else {
    dispatch_real(t, "scatter", [&](auto tag) {
      using S = decltype(tag);
      if constexpr (ops::kIsFloat<Compute<S>>) {
        if (k == ScatterOp::Mul) return launch_ordered<S>(k, p, ind, upd, out, s);  // rounding
      }
      scatter_combine_k<S><<<l.blocks, l.threads, 0, s>>>(k, p, ind, static_cast<const S*>(upd),
                                                          static_cast<S*>(out), nupd);
    });
  }
  check(cudaGetLastError(), "scatter", "kernel launch");
}

}  // namespace tsr::detail::cuda
