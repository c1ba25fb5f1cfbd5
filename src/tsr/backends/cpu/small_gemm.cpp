// small_gemm: the loops of a classic blocked GEMM (a kc-slice of A packed once, B
// copied an L2-sized block at a time and cut into kc x NR panels, an MR x NR
// register tile) without the whole-matrix packing pass, which is what costs a
// few-row product most.
//
// One generic body in GCC vector extensions, instantiated for AVX-512 and for
// AVX2/FMA inside functions compiled for those targets (chosen at run time) and
// for the x86-64 baseline (SSE2). This file is compiled with -ffp-contract=fast so the
// vector `acc += a * b` becomes an FMA where the target has one.
#include "tsr/backends/cpu/small_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "tsr/backends/cpu/small_gemm_mode.h"

namespace tsr::detail::cpu {
namespace {

constexpr int64_t kPanel = 16384;  // bytes of one kc x NR panel of B: half of L1
constexpr int64_t kNc = 256;       // columns of B copied per pass (at most 256 KiB: L2)
constexpr int64_t kMaxM = 64;      // above this a full pack pays for itself: OpenBLAS wins

std::atomic<SmallGemmMode> g_mode{SmallGemmMode::Auto};

template <class T, int B>
using Vec [[gnu::vector_size(B)]] = T;

// The register tile for B-byte vectors: Rows x Vecs accumulators, plus Vecs loads
// of B and one broadcast of A, within the registers (16 below AVX-512, 32 with it).
// Rows divide the power-of-two row counts of a sharded batch (32 rows: no padding).
template <int B>
struct Tile {
  static constexpr int rows = B == 64 ? 8 : B == 32 ? 4 : 6;
  static constexpr int vecs = B == 32 ? 3 : 2;  // SSE2 has no FMA: a product needs a register
};

// Grow-only per-thread buffers: each device's worker thread keeps its own.
template <class T, int Slot>
T* scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A[:, k0:k0+kc] as ceil(m / kMr) slivers, each kc x kMr (rows past m are zero).
template <int kMr, class T>
void pack_a(bool ta, const T* a, int64_t lda, int64_t m, int64_t k0, int64_t kc, T* out) {
  for (int64_t i0 = 0; i0 < m; i0 += kMr, out += kc * kMr) {
    int64_t mr = std::min<int64_t>(kMr, m - i0);
    for (int64_t p = 0; p < kc; ++p) {
      T* dst = out + p * kMr;
      for (int64_t r = 0; r < mr; ++r)
        dst[r] = ta ? a[(k0 + p) * lda + i0 + r] : a[(i0 + r) * lda + k0 + p];
      for (int64_t r = mr; r < kMr; ++r) dst[r] = T(0);
    }
  }
}

// B[k0:k0+kc, j0:j0+nc] as ceil(nc / width) panels, each kc x width (columns past
// nc are zero). Reading kNc columns of a row at once keeps the reads of a row-major
// B sequential, which the prefetchers follow.
template <class T>
void pack_b(bool tb, const T* b, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
            int64_t width, T* out) {
  int64_t panels = (nc + width - 1) / width, tail = nc - (panels - 1) * width;
  if (!tb) {
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = b + (k0 + p) * ldb + j0;
      for (int64_t q = 0; q < panels; ++q) {
        T* dst = out + (q * kc + p) * width;
        int64_t w = q + 1 < panels ? width : tail;
        std::memcpy(dst, src + q * width, w * sizeof(T));
        std::fill(dst + w, dst + width, T(0));
      }
    }
    return;
  }
  for (int64_t j = 0; j < nc; ++j) {
    const T* src = b + (j0 + j) * ldb + k0;
    T* dst = out + (j / width) * kc * width + j % width;
    for (int64_t p = 0; p < kc; ++p) dst[p * width] = src[p];
  }
  if (tail < width)
    for (int64_t p = 0; p < kc; ++p) {
      T* row = out + ((panels - 1) * kc + p) * width;
      std::fill(row + tail, row + width, T(0));
    }
}

// Prefetches B[k0:k0+kc, j0:j0+nc] (stored [n, k] when tb) into L2, in `parts`
// pieces: part(i) fetches the i-th group of the stored rows.
template <class T>
struct Prefetch {
  const T* b;
  int64_t ldb;
  bool tb;
  int64_t k0, kc, j0, nc;
  void part(int64_t i, int64_t parts) const {
    int64_t rows = tb ? nc : kc, cols = tb ? kc : nc;
    const T* base = tb ? b + j0 * ldb + k0 : b + k0 * ldb + j0;
    for (int64_t r = rows * i / parts; r < rows * (i + 1) / parts; ++r)
      for (int64_t x = 0; x < cols; x += 64 / sizeof(T))
        __builtin_prefetch(base + r * ldb + x, 0, 2);
  }
};

// The register tile: c[0:mr, 0:nr] (+)= ap (kc x MR) @ bp (kc x NV vectors).
template <class T, int B, int MR, int NV>
[[gnu::always_inline]] inline void micro(int64_t kc, const T* ap, const T* bp, T* c, int64_t ldc,
                                         int64_t mr, int64_t nr, bool add) {
  using V = Vec<T, B>;
  constexpr int L = B / sizeof(T);
  V acc[MR][NV] = {};
  for (int64_t p = 0; p < kc; ++p, ap += MR, bp += NV * L) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], bp + v * L, B);
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) acc[r][v] += ap[r] * bv[v];
  }
  if (mr == MR && nr == NV * L) {
    for (int r = 0; r < MR; ++r) {
      T* cr = c + r * ldc;
      for (int v = 0; v < NV; ++v) {
        if (add) {
          V old;
          std::memcpy(&old, cr + v * L, B);
          acc[r][v] += old;
        }
        std::memcpy(cr + v * L, &acc[r][v], B);
      }
    }
    return;
  }
  T tile[MR][NV * L];
  std::memcpy(tile, acc, sizeof(tile));
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j)
      c[r * ldc + j] = add ? c[r * ldc + j] + tile[r][j] : tile[r][j];
}

template <class T, int B>
[[gnu::always_inline]] inline void drive(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                         const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                                         int64_t ldc) {
  constexpr int kMr = Tile<B>::rows, kNv = Tile<B>::vecs;
  constexpr int64_t nr_full = kNv * (B / sizeof(T)), kc_max = kPanel / (nr_full * sizeof(T));
  constexpr int64_t nc_block = kNc / nr_full * nr_full;
  int64_t slivers = (m + kMr - 1) / kMr;
  // Equal slices (784 = 3 x 262 rather than 3 x 256 + 16): a thin last slice would
  // spend as much on loading and storing the C tile as on its products.
  int64_t slices = (k + kc_max - 1) / kc_max, depth = (k + slices - 1) / slices;
  T* ap = scratch<T, 0>(static_cast<size_t>(slivers * kMr * depth));
  int64_t nc_max = std::min(nc_block, (n + nr_full - 1) / nr_full * nr_full);
  T* bp = scratch<T, 1>(static_cast<size_t>(nc_max * depth));
  for (int64_t k0 = 0; k0 < k; k0 += depth) {
    int64_t kc = std::min(depth, k - k0);
    pack_a<kMr>(ta, a, lda, m, k0, kc, ap);
    for (int64_t jc = 0; jc < n; jc += nc_block) {
      int64_t nc = std::min(nc_block, n - jc);
      pack_b(tb, b, ldb, k0, kc, jc, nc, nr_full, bp);
      // The next block of B, fetched while this one is multiplied: each device
      // streams its own copy of replicated weights from memory, and the products
      // of one block take longer than its transfer.
      bool last = jc + nc_block >= n;
      int64_t nk0 = last ? k0 + depth : k0, njc = last ? 0 : jc + nc_block;
      Prefetch next{b, ldb, tb, nk0, std::min(depth, k - nk0), njc, std::min(nc_block, n - njc)};
      int64_t panels = (nc + nr_full - 1) / nr_full;
      for (int64_t q = 0; q < panels; ++q) {
        if (nk0 < k) next.part(q, panels);
        int64_t j0 = q * nr_full;
        const T* panel = bp + j0 * kc;
        for (int64_t s = 0; s < slivers; ++s)
          micro<T, B, kMr, kNv>(kc, ap + s * kc * kMr, panel, c + s * kMr * ldc + jc + j0, ldc,
                                std::min<int64_t>(kMr, m - s * kMr), std::min(nr_full, nc - j0),
                                k0 > 0);
      }
    }
  }
}

[[gnu::target("avx2,fma")]] void drive_avx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                            const float* a, int64_t lda, const float* b,
                                            int64_t ldb, float* c, int64_t ldc) {
  drive<float, 32>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}
[[gnu::target("avx2,fma")]] void drive_avx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                            const double* a, int64_t lda, const double* b,
                                            int64_t ldb, double* c, int64_t ldc) {
  drive<double, 32>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

[[gnu::target("avx512f")]] void drive_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                             const float* a, int64_t lda, const float* b,
                                             int64_t ldb, float* c, int64_t ldc) {
  drive<float, 64>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}
[[gnu::target("avx512f")]] void drive_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                             const double* a, int64_t lda, const double* b,
                                             int64_t ldb, double* c, int64_t ldc) {
  drive<double, 64>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

// The widest code this CPU runs, capped by the mode (tests and benchmarks pick one).
enum class Isa { Sse2, Avx2, Avx512 };
Isa isa(SmallGemmMode mode) {
  static const Isa best = __builtin_cpu_supports("avx512f") ? Isa::Avx512
                          : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                              ? Isa::Avx2
                              : Isa::Sse2;
  if (mode == SmallGemmMode::Portable) return Isa::Sse2;
  if (mode == SmallGemmMode::Avx2 && best == Isa::Avx512) return Isa::Avx2;
  return best;
}

}  // namespace

void set_small_gemm_mode(SmallGemmMode mode) { g_mode.store(mode, std::memory_order_relaxed); }

bool prefer_small_gemm(int64_t m, int64_t n, int64_t k, int threads) {
  switch (g_mode.load(std::memory_order_relaxed)) {
    case SmallGemmMode::Never:
      return false;
    case SmallGemmMode::Always:
    case SmallGemmMode::Avx2:
    case SmallGemmMode::Portable:
      return true;
    case SmallGemmMode::Auto:
      break;
  }
  return threads == 1 && m <= kMaxM && n >= 16 && k >= 16;
}

template <class T>
void small_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  switch (isa(g_mode.load(std::memory_order_relaxed))) {
    case Isa::Avx512:
      return drive_avx512(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    case Isa::Avx2:
      return drive_avx2(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    case Isa::Sse2:
      return drive<T, 16>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  }
}

template void small_gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                                const float*, int64_t, float*, int64_t);
template void small_gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                 const double*, int64_t, double*, int64_t);

}  // namespace tsr::detail::cpu
