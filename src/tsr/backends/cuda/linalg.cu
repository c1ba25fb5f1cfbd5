// CUDA cholesky and lu and their launchers (launch.h), one block per matrix.
// cholesky: LAPACK's unblocked potf2 order, the CPU kernel's small_cholesky (each
// column's pivot in one thread, the entries below it across the block): bit-identical
// to the CPU up to its 16 x 16 cutoff, LAPACK's blocked rounding beyond. A matrix that
// is not positive definite gives NaN in the lower triangle, as the CPU kernel.
// lu: LAPACK's getf2 (partial pivoting on the first largest |a|, the column scaled by
// the pivot's reciprocal, a rank-1 update); the CPU's getrf rounds in another order,
// so only near-ties between pivot candidates could choose another row.
// qr: LAPACK's geqr2 (Householder reflectors by dlarfg's convention: beta = -sign(alpha)
// |x|, so the signs of r's diagonal are LAPACK's) and org2r for q; rounding as the
// unblocked algorithm, not geqrf's blocked one.
// eigh: cyclic Jacobi rotations (not LAPACK's syevd): eigenvalues ascending as LAPACK's,
// to rounding; each eigenvector's sign is the rotations' (either sign is an answer).
// svd: one-sided Jacobi (Hestenes) on the taller of a and a^T: singular values
// descending as gesdd's, singular vectors up to a sign per pair; the columns no
// singular value fixes (full_matrices' complement, a zero singular value) are the
// unit vectors e_0, e_1, ... made orthogonal to the others (twice, Gram-Schmidt).
#include <cstring>
#include <vector>

#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// Row-major lower factor of x (matrix blockIdx.x) into out; the upper triangle zero.
template <typename T>
__global__ void cholesky_k(const T* x, T* out, int64_t n) {
  __shared__ int failed;
  __shared__ T pivot;
  const int64_t nn = n * n;
  const T* a = x + static_cast<int64_t>(blockIdx.x) * nn;
  T* l = out + static_cast<int64_t>(blockIdx.x) * nn;
  if (threadIdx.x == 0) failed = 0;
  for (int64_t i = threadIdx.x; i < nn; i += blockDim.x) l[i] = a[i];
  __syncthreads();
  for (int64_t j = 0; j < n; ++j) {
    if (threadIdx.x == 0) {
      T d = l[j * n + j];
      for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
      if (!(d > T(0))) {  // also NaN, as potrf
        failed = 1;
      } else {
        d = sqrt(d);
        l[j * n + j] = d;
        pivot = d;
      }
    }
    __syncthreads();
    if (failed) break;  // the same answer in every thread
    for (int64_t i = j + 1 + threadIdx.x; i < n; i += blockDim.x) {
      T v = l[i * n + j];
      for (int64_t k = 0; k < j; ++k) v -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = v / pivot;
    }
    __syncthreads();
  }
  for (int64_t q = threadIdx.x; q < nn; q += blockDim.x) {
    int64_t i = q / n, j = q - i * n;
    if (j > i)
      l[q] = T(0);
    else if (failed)
      l[q] = ops::qnan<T>();
  }
}

// Row-major m x n matrix blockIdx.x of x factored in place in lu; piv (k entries) and
// perm (m) as the CPU kernel writes them.
template <typename T>
__global__ void lu_k(const T* x, T* lu, int32_t* piv, int32_t* perm, int64_t m, int64_t n) {
  __shared__ int64_t pivot_row;
  const int64_t mn = m * n, k = m < n ? m : n;
  const T* a = x + static_cast<int64_t>(blockIdx.x) * mn;
  T* l = lu + static_cast<int64_t>(blockIdx.x) * mn;
  int32_t* pv = piv + static_cast<int64_t>(blockIdx.x) * k;
  int32_t* pm = perm + static_cast<int64_t>(blockIdx.x) * m;
  for (int64_t i = threadIdx.x; i < mn; i += blockDim.x) l[i] = a[i];
  __syncthreads();
  for (int64_t j = 0; j < k; ++j) {
    if (threadIdx.x == 0) {  // idamax: the first largest |a|; a NaN is never larger
      int64_t p = j;
      T best = fabs(l[j * n + j]);
      for (int64_t i = j + 1; i < m; ++i) {
        T v = fabs(l[i * n + j]);
        if (v > best) {
          best = v;
          p = i;
        }
      }
      pivot_row = p;
      pv[j] = static_cast<int32_t>(p);
    }
    __syncthreads();
    const int64_t p = pivot_row;
    const T d = l[p * n + j];
    if (d != T(0)) {
      if (p != j)
        for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
          T t = l[j * n + c];
          l[j * n + c] = l[p * n + c];
          l[p * n + c] = t;
        }
      __syncthreads();
      // LAPACK scales by the reciprocal unless it would overflow (|d| < the smallest
      // normal number).
      const bool recip = fabs(d) >= (sizeof(T) == 8 ? 2.2250738585072014e-308 : 1.17549435e-38f);
      const T r = T(1) / d;
      for (int64_t i = j + 1 + threadIdx.x; i < m; i += blockDim.x)
        l[i * n + j] = recip ? l[i * n + j] * r : l[i * n + j] / d;
    }
    __syncthreads();
    const int64_t rows = m - j - 1, cols = n - j - 1;
    for (int64_t q = threadIdx.x; q < rows * cols; q += blockDim.x) {
      int64_t i = j + 1 + q / cols, c = j + 1 + q % cols;
      l[i * n + c] -= l[i * n + j] * l[j * n + c];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int64_t i = 0; i < m; ++i) pm[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < k; ++i) {
      int32_t q = pm[i];
      pm[i] = pm[pv[i]];
      pm[pv[i]] = q;
    }
  }
}

// H = I - tau v v^T (v = (1, w[i+1..m) column i)) applied from the left to columns
// [c0, c1) of the m x ld row-major w, each thread its own columns.
template <typename T>
__device__ void apply_reflector(T* w, int64_t ld, int64_t m, int64_t i, T tau, int64_t c0,
                                int64_t c1) {
  if (tau == T(0)) return;  // H = I (LAPACK's dlarf skips it too)
  for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    T dot = w[i * ld + c];
    for (int64_t r = i + 1; r < m; ++r) dot += w[r * ld + i] * w[r * ld + c];
    const T t = -tau * dot;
    w[i * ld + c] += t;
    for (int64_t r = i + 1; r < m; ++r) w[r * ld + c] += w[r * ld + i] * t;
  }
}

// Matrix blockIdx.x: w (m x ld scratch, ld = max(n, qc)) and tau (k scratch); q is
// m x qc, r is qc x n.
template <typename T>
__global__ void qr_k(const T* x, T* q, T* r, T* work, T* taus, int64_t m, int64_t n, int64_t qc) {
  __shared__ T scale;
  const int64_t k = m < n ? m : n, ld = n > qc ? n : qc;
  const int64_t b = blockIdx.x;
  const T* a = x + b * m * n;
  T* w = work + b * m * ld;
  T* tau = taus + b * (k > 0 ? k : 1);
  for (int64_t e = threadIdx.x; e < m * n; e += blockDim.x) w[(e / n) * ld + e % n] = a[e];
  __syncthreads();
  for (int64_t i = 0; i < k; ++i) {
    if (threadIdx.x == 0) {  // dlarfg
      const T alpha = w[i * ld + i];
      T ss = 0;
      for (int64_t rr = i + 1; rr < m; ++rr) ss += w[rr * ld + i] * w[rr * ld + i];
      const T xnorm = sqrt(ss);
      if (xnorm == T(0)) {
        tau[i] = 0;
        scale = 1;
      } else {
        const T beta = -copysign(hypot(alpha, xnorm), alpha);
        tau[i] = (beta - alpha) / beta;
        scale = T(1) / (alpha - beta);
        w[i * ld + i] = beta;
      }
    }
    __syncthreads();
    for (int64_t rr = i + 1 + threadIdx.x; rr < m; rr += blockDim.x) w[rr * ld + i] *= scale;
    __syncthreads();
    const T ti = tau[i], diag = w[i * ld + i];
    __syncthreads();
    if (threadIdx.x == 0) w[i * ld + i] = 1;
    __syncthreads();
    apply_reflector(w, ld, m, i, ti, i + 1, n);
    __syncthreads();
    if (threadIdx.x == 0) w[i * ld + i] = diag;
    __syncthreads();
  }
  for (int64_t e = threadIdx.x; e < qc * n; e += blockDim.x) {
    int64_t i = e / n, j = e - i * n;
    r[b * qc * n + e] = j >= i ? w[i * ld + j] : T(0);
  }
  __syncthreads();
  // org2r: columns k..qc of the identity, then the reflectors from the last.
  for (int64_t e = threadIdx.x; e < m * (qc - k); e += blockDim.x) {
    int64_t l = e / (qc - k), j = k + e % (qc - k);
    w[l * ld + j] = l == j ? T(1) : T(0);
  }
  __syncthreads();
  for (int64_t i = k - 1; i >= 0; --i) {
    const T ti = tau[i];
    if (i < qc - 1) {
      if (threadIdx.x == 0) w[i * ld + i] = 1;
      __syncthreads();
      apply_reflector(w, ld, m, i, ti, i + 1, qc);
      __syncthreads();
    }
    for (int64_t rr = i + 1 + threadIdx.x; rr < m; rr += blockDim.x) w[rr * ld + i] *= -ti;
    for (int64_t l = threadIdx.x; l < i; l += blockDim.x) w[l * ld + i] = 0;
    if (threadIdx.x == 0) w[i * ld + i] = T(1) - ti;
    __syncthreads();
  }
  for (int64_t e = threadIdx.x; e < m * qc; e += blockDim.x)
    q[b * m * qc + e] = w[(e / qc) * ld + e % qc];
}

// Matrix blockIdx.x: the symmetric matrix from x's lower (else upper) triangle in a
// (n x n), rotations accumulated in vv (n x n), order (n) for the ascending sort.
// ord = 0..n-1 stably ordered by `before` (a selection that shifts, never swaps, so
// equal keys keep index order); one thread, n is a matrix side.
template <typename Before>
__device__ void stable_order(int64_t* ord, int64_t n, Before before) {
  for (int64_t j = 0; j < n; ++j) ord[j] = j;
  for (int64_t j = 0; j < n; ++j) {
    int64_t best = j;
    for (int64_t i = j + 1; i < n; ++i)
      if (before(ord[i], ord[best])) best = i;
    const int64_t chosen = ord[best];
    for (int64_t i = best; i > j; --i) ord[i] = ord[i - 1];
    ord[j] = chosen;
  }
}

template <typename T>
__global__ void eigh_k(const T* x, T* v, T* w, T* work, int64_t* order, int64_t n, bool lower) {
  __shared__ T cs, sn;
  __shared__ int done, has_nan;
  const int64_t nn = n * n, b = blockIdx.x;
  const T* src = x + b * nn;
  T* a = work + b * 2 * nn;
  T* vv = a + nn;
  int64_t* ord = order + b * n;
  if (threadIdx.x == 0) has_nan = 0;
  __syncthreads();
  for (int64_t e = threadIdx.x; e < nn; e += blockDim.x) {
    int64_t i = e / n, j = e - i * n;
    bool mine = lower ? j <= i : j >= i;  // the triangle that is read
    T val = mine ? src[e] : src[j * n + i];
    a[e] = val;
    vv[e] = i == j ? T(1) : T(0);
    if (src[e] != src[e]) has_nan = 1;  // a NaN anywhere: NaN outputs, as the CPU
  }
  __syncthreads();
  if (has_nan) {
    for (int64_t e = threadIdx.x; e < nn; e += blockDim.x) v[b * nn + e] = ops::qnan<T>();
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) w[b * n + e] = ops::qnan<T>();
    return;
  }
  const T eps = sizeof(T) == 8 ? T(1.1102230246251565e-16) : T(5.9604645e-08f);
  for (int sweep = 0; sweep < 60; ++sweep) {
    if (threadIdx.x == 0) {
      T off = 0, all = 0;
      for (int64_t e = 0; e < nn; ++e) {
        all += a[e] * a[e];
        if (e / n != e % n) off += a[e] * a[e];
      }
      done = !(off > eps * eps * all);
    }
    __syncthreads();
    if (done) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (threadIdx.x == 0) {
          const T apq = a[p * n + q];
          if (apq == T(0)) {
            cs = 1;
            sn = 0;
          } else {
            const T tau = (a[q * n + q] - a[p * n + p]) / (T(2) * apq);
            const T t = (tau >= T(0) ? T(1) : T(-1)) / (fabs(tau) + sqrt(T(1) + tau * tau));
            cs = T(1) / sqrt(T(1) + t * t);
            sn = t * cs;
          }
        }
        __syncthreads();
        const T c = cs, s = sn;
        if (s != T(0)) {
          for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {  // columns p, q
            const T akp = a[k * n + p], akq = a[k * n + q];
            a[k * n + p] = c * akp - s * akq;
            a[k * n + q] = s * akp + c * akq;
            const T vkp = vv[k * n + p], vkq = vv[k * n + q];
            vv[k * n + p] = c * vkp - s * vkq;
            vv[k * n + q] = s * vkp + c * vkq;
          }
          __syncthreads();
          for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {  // rows p, q
            const T apk = a[p * n + k], aqk = a[q * n + k];
            a[p * n + k] = c * apk - s * aqk;
            a[q * n + k] = s * apk + c * aqk;
          }
        }
        __syncthreads();
      }
  }
  if (threadIdx.x == 0) {  // ascending, equal values by index
    stable_order(ord, n, [&](int64_t p, int64_t q) { return a[p * n + p] < a[q * n + q]; });
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < nn; e += blockDim.x) {
    int64_t i = e / n, j = e - i * n;
    v[b * nn + e] = vv[i * n + ord[j]];
  }
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) w[b * n + j] = a[ord[j] * n + ord[j]];
}

// The sum of every thread's v (blockDim.x a power of two; red holds blockDim.x).
template <typename T>
__device__ T block_sum(T v, T* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  T r = red[0];
  __syncthreads();
  return r;
}

// Matrix blockIdx.x of x (m x n): s (k), and with uv u (m x ku) and vt (kv x n).
// g (r x c, r >= c: a or a^T), v (c x c), uf (r x want), sig (c) and ord (c) are
// scratch.
template <typename T>
__global__ void svd_k(const T* x, T* s_out, T* u_out, T* vt_out, T* work, int64_t* order, int64_t m,
                      int64_t n, bool uv, bool full) {
  __shared__ T red[256];
  __shared__ T cs, sn;
  __shared__ int rotated, has_nan, accept;
  const bool tall = m >= n;
  const int64_t r = tall ? m : n, c = tall ? n : m, want = full ? r : c;
  const int64_t b = blockIdx.x;
  const T* a = x + b * m * n;
  T* g = work + b * (r * c + c * c + r * want + c);
  T* v = g + r * c;
  T* uf = v + c * c;
  T* sig = uf + r * want;
  int64_t* ord = order + b * c;
  const int64_t ku = full ? m : c, kv = full ? n : c;
  if (threadIdx.x == 0) has_nan = 0;
  __syncthreads();
  for (int64_t e = threadIdx.x; e < m * n; e += blockDim.x) {
    int64_t i = e / n, j = e - i * n;
    g[tall ? e : j * c + i] = a[e];
    if (a[e] != a[e]) has_nan = 1;
  }
  for (int64_t e = threadIdx.x; e < c * c; e += blockDim.x) v[e] = e / c == e % c ? T(1) : T(0);
  __syncthreads();
  if (has_nan) {  // NaN outputs, as the CPU kernel
    for (int64_t e = threadIdx.x; e < c; e += blockDim.x) s_out[b * c + e] = ops::qnan<T>();
    if (uv) {
      for (int64_t e = threadIdx.x; e < m * ku; e += blockDim.x)
        u_out[b * m * ku + e] = ops::qnan<T>();
      for (int64_t e = threadIdx.x; e < kv * n; e += blockDim.x)
        vt_out[b * kv * n + e] = ops::qnan<T>();
    }
    return;
  }
  const T eps = sizeof(T) == 8 ? T(1.1102230246251565e-16) : T(5.9604645e-08f);
  for (int sweep = 0; sweep < 60; ++sweep) {
    if (threadIdx.x == 0) rotated = 0;
    __syncthreads();
    for (int64_t p = 0; p < c; ++p)
      for (int64_t q = p + 1; q < c; ++q) {
        T al = 0, be = 0, ga = 0;
        for (int64_t i = threadIdx.x; i < r; i += blockDim.x) {
          const T gp = g[i * c + p], gq = g[i * c + q];
          al += gp * gp;
          be += gq * gq;
          ga += gp * gq;
        }
        al = block_sum(al, red);
        be = block_sum(be, red);
        ga = block_sum(ga, red);
        if (threadIdx.x == 0) {
          sn = 0;
          cs = 1;
          if (ga != T(0) && fabs(ga) > eps * sqrt(al * be)) {
            const T zeta = (be - al) / (T(2) * ga);
            const T t = (zeta >= T(0) ? T(1) : T(-1)) / (fabs(zeta) + sqrt(T(1) + zeta * zeta));
            cs = T(1) / sqrt(T(1) + t * t);
            sn = cs * t;
            rotated = 1;
          }
        }
        __syncthreads();
        const T co = cs, si = sn;
        if (si != T(0)) {
          for (int64_t i = threadIdx.x; i < r; i += blockDim.x) {
            const T gp = g[i * c + p], gq = g[i * c + q];
            g[i * c + p] = co * gp - si * gq;
            g[i * c + q] = si * gp + co * gq;
          }
          for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
            const T vp = v[i * c + p], vq = v[i * c + q];
            v[i * c + p] = co * vp - si * vq;
            v[i * c + q] = si * vp + co * vq;
          }
        }
        __syncthreads();
      }
    if (!rotated) break;
  }
  for (int64_t j = 0; j < c; ++j) {
    T ss = 0;
    for (int64_t i = threadIdx.x; i < r; i += blockDim.x) ss += g[i * c + j] * g[i * c + j];
    ss = block_sum(ss, red);
    if (threadIdx.x == 0) sig[j] = sqrt(ss);
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // descending, equal values by index
    stable_order(ord, c, [&](int64_t p, int64_t q) { return sig[p] > sig[q]; });
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s_out[b * c + j] = sig[ord[j]];
  if (!uv) return;
  // uf's first c columns: g's, normalised, in the sorted order (zero where sigma is).
  for (int64_t e = threadIdx.x; e < r * want; e += blockDim.x) {
    int64_t i = e / want, j = e - i * want;
    T sj = j < c ? sig[ord[j]] : T(0);
    uf[e] = sj > T(0) ? g[i * c + ord[j]] / sj : T(0);
  }
  __syncthreads();
  // The columns no singular value fixes: unit vectors orthogonalised against the rest.
  int64_t cand = 0;
  for (int64_t j = 0; j < want; ++j) {
    if (j < c && sig[ord[j]] > T(0)) continue;
    for (; cand < r; ++cand) {
      for (int64_t i = threadIdx.x; i < r; i += blockDim.x)
        uf[i * want + j] = i == cand ? T(1) : T(0);
      __syncthreads();
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t l = 0; l < want; ++l) {
          bool filled = l < j || (l < c && sig[ord[l]] > T(0));
          if (!filled || l == j) continue;
          T d = 0;
          for (int64_t i = threadIdx.x; i < r; i += blockDim.x)
            d += uf[i * want + l] * uf[i * want + j];
          d = block_sum(d, red);
          for (int64_t i = threadIdx.x; i < r; i += blockDim.x)
            uf[i * want + j] -= d * uf[i * want + l];
          __syncthreads();
        }
      T nrm = 0;
      for (int64_t i = threadIdx.x; i < r; i += blockDim.x)
        nrm += uf[i * want + j] * uf[i * want + j];
      nrm = sqrt(block_sum(nrm, red));
      // Some e_t keeps at least 1 / sqrt(r) of its length: accept half of that.
      if (threadIdx.x == 0) accept = nrm > T(0.5) / sqrt(T(r));
      __syncthreads();
      if (accept) {
        for (int64_t i = threadIdx.x; i < r; i += blockDim.x) uf[i * want + j] /= nrm;
        __syncthreads();
        ++cand;
        break;
      }
    }
  }
  // tall: u = uf (m x ku), vt = v^T; wide: u = v (m x m), vt = uf^T (kv x n).
  T* ub = u_out + b * m * ku;
  T* vb = vt_out + b * kv * n;
  for (int64_t e = threadIdx.x; e < m * ku; e += blockDim.x) {
    int64_t i = e / ku, j = e - i * ku;
    ub[e] = tall ? uf[i * want + j] : v[i * c + ord[j]];
  }
  for (int64_t e = threadIdx.x; e < kv * n; e += blockDim.x) {
    int64_t j = e / n, i = e - j * n;
    vb[e] = tall ? v[i * c + ord[j]] : uf[i * want + j];
  }
}

}  // namespace

void cholesky_launch(DType t, const void* x, void* out, int64_t batch, int64_t n, cudaStream_t s) {
  if (batch == 0 || n == 0) return;
  unsigned threads = n >= 256 ? 256u : (n > 32 ? static_cast<unsigned>((n + 31) / 32 * 32) : 32u);
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {  // a grid takes at most 65535 matrices
    unsigned nb = static_cast<unsigned>(batch - b0 < 65535 ? batch - b0 : 65535);
    if (t == DType::Float64)
      cholesky_k<double><<<nb, threads, 0, s>>>(static_cast<const double*>(x) + b0 * n * n,
                                                static_cast<double*>(out) + b0 * n * n, n);
    else if (t == DType::Float32)
      cholesky_k<float><<<nb, threads, 0, s>>>(static_cast<const float*>(x) + b0 * n * n,
                                               static_cast<float*>(out) + b0 * n * n, n);
    else
      unsupported("cholesky", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "cholesky", "kernel launch");
}

void lu_launch(DType t, const void* x, void* lu, int32_t* piv, int32_t* perm, int64_t batch,
               int64_t m, int64_t n, cudaStream_t s) {
  if (batch == 0 || m == 0) return;
  const int64_t k = m < n ? m : n;
  const int64_t w = n > m ? n : m;
  unsigned threads = w >= 256 ? 256u : (w > 32 ? static_cast<unsigned>((w + 31) / 32 * 32) : 32u);
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
    unsigned nb = static_cast<unsigned>(batch - b0 < 65535 ? batch - b0 : 65535);
    if (t == DType::Float64)
      lu_k<double><<<nb, threads, 0, s>>>(static_cast<const double*>(x) + b0 * m * n,
                                          static_cast<double*>(lu) + b0 * m * n, piv + b0 * k,
                                          perm + b0 * m, m, n);
    else if (t == DType::Float32)
      lu_k<float><<<nb, threads, 0, s>>>(static_cast<const float*>(x) + b0 * m * n,
                                         static_cast<float*>(lu) + b0 * m * n, piv + b0 * k,
                                         perm + b0 * m, m, n);
    else
      unsupported("lu", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "lu", "kernel launch");
}

void qr_launch(DType t, const void* x, void* q, void* r, int64_t batch, int64_t m, int64_t n,
               int64_t qc, cudaStream_t s) {
  if (batch == 0 || m == 0) return;
  const int64_t k = m < n ? m : n, ld = n > qc ? n : qc;
  const int64_t w = ld > m ? ld : m;
  unsigned threads = w >= 256 ? 256u : (w > 32 ? static_cast<unsigned>((w + 31) / 32 * 32) : 32u);
  const size_t isz = t == DType::Float64 ? 8 : 4;
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
    const int64_t nb = batch - b0 < 65535 ? batch - b0 : 65535;
    Scratch work(s, "qr"), taus(s, "qr");
    work.alloc(static_cast<size_t>(nb * m * ld) * isz + isz);
    taus.alloc(static_cast<size_t>(nb * (k > 0 ? k : 1)) * isz);
    if (t == DType::Float64)
      qr_k<double><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const double*>(x) + b0 * m * n, static_cast<double*>(q) + b0 * m * qc,
          static_cast<double*>(r) + b0 * qc * n, static_cast<double*>(work.p),
          static_cast<double*>(taus.p), m, n, qc);
    else if (t == DType::Float32)
      qr_k<float><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const float*>(x) + b0 * m * n, static_cast<float*>(q) + b0 * m * qc,
          static_cast<float*>(r) + b0 * qc * n, static_cast<float*>(work.p),
          static_cast<float*>(taus.p), m, n, qc);
    else
      unsupported("qr", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "qr", "kernel launch");
}

void eigh_launch(DType t, const void* x, void* v, void* w, int64_t batch, int64_t n, bool lower,
                 cudaStream_t s) {
  if (batch == 0 || n == 0) return;
  unsigned threads = n >= 256 ? 256u : (n > 32 ? static_cast<unsigned>((n + 31) / 32 * 32) : 32u);
  const size_t isz = t == DType::Float64 ? 8 : 4;
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
    const int64_t nb = batch - b0 < 65535 ? batch - b0 : 65535;
    Scratch work(s, "eigh"), order(s, "eigh");
    work.alloc(static_cast<size_t>(nb * 2 * n * n) * isz);
    order.alloc(static_cast<size_t>(nb * n) * sizeof(int64_t));
    auto* ord = static_cast<int64_t*>(order.p);
    if (t == DType::Float64)
      eigh_k<double><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const double*>(x) + b0 * n * n, static_cast<double*>(v) + b0 * n * n,
          static_cast<double*>(w) + b0 * n, static_cast<double*>(work.p), ord, n, lower);
    else if (t == DType::Float32)
      eigh_k<float><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const float*>(x) + b0 * n * n, static_cast<float*>(v) + b0 * n * n,
          static_cast<float*>(w) + b0 * n, static_cast<float*>(work.p), ord, n, lower);
    else
      unsupported("eigh", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "eigh", "kernel launch");
}

void svd_launch(DType t, const void* x, void* s_out, void* u, void* vt, int64_t batch, int64_t m,
                int64_t n, bool uv, bool full, cudaStream_t s) {
  if (batch == 0) return;
  const int64_t r = m > n ? m : n, c = m < n ? m : n, want = full ? r : c;
  const int64_t ku = full ? m : c, kv = full ? n : c;
  const size_t isz = t == DType::Float64 ? 8 : 4;
  if (c == 0) {  // nothing to decompose: full u and vt are identities, as the CPU
    if (!uv) return;
    std::vector<unsigned char> host;
    auto eye = [&](void* dst, int64_t rows, int64_t cols) {
      host.assign(static_cast<size_t>(batch * rows * cols) * isz, 0);
      for (int64_t bb = 0; bb < batch; ++bb)
        for (int64_t i = 0; i < rows && i < cols; ++i) {
          size_t at = static_cast<size_t>((bb * rows + i) * cols + i) * isz;
          if (isz == 8) {
            double one = 1;
            std::memcpy(&host[at], &one, 8);
          } else {
            float one = 1;
            std::memcpy(&host[at], &one, 4);
          }
        }
      if (!host.empty())
        check(cudaMemcpyAsync(dst, host.data(), host.size(), cudaMemcpyHostToDevice, s), "svd",
              "cudaMemcpyAsync");
      check(cudaStreamSynchronize(s), "svd", "cudaStreamSynchronize");  // host buffer reused
    };
    eye(u, m, ku);
    eye(vt, kv, n);
    return;
  }
  unsigned threads = 32;
  while (threads < 256 && threads < static_cast<unsigned>(r)) threads *= 2;  // a power of two
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
    const int64_t nb = batch - b0 < 65535 ? batch - b0 : 65535;
    Scratch work(s, "svd"), order(s, "svd");
    work.alloc(static_cast<size_t>(nb * (r * c + c * c + r * want + c)) * isz);
    order.alloc(static_cast<size_t>(nb * c) * sizeof(int64_t));
    auto* ord = static_cast<int64_t*>(order.p);
    if (t == DType::Float64)
      svd_k<double><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const double*>(x) + b0 * m * n, static_cast<double*>(s_out) + b0 * c,
          uv ? static_cast<double*>(u) + b0 * m * ku : nullptr,
          uv ? static_cast<double*>(vt) + b0 * kv * n : nullptr, static_cast<double*>(work.p), ord,
          m, n, uv, full);
    else if (t == DType::Float32)
      svd_k<float><<<static_cast<unsigned>(nb), threads, 0, s>>>(
          static_cast<const float*>(x) + b0 * m * n, static_cast<float*>(s_out) + b0 * c,
          uv ? static_cast<float*>(u) + b0 * m * ku : nullptr,
          uv ? static_cast<float*>(vt) + b0 * kv * n : nullptr, static_cast<float*>(work.p), ord, m,
          n, uv, full);
    else
      unsupported("svd", t);  // the rule admits float32 and float64 only
  }
  check(cudaGetLastError(), "svd", "kernel launch");
}

}  // namespace tsr::detail::cuda
