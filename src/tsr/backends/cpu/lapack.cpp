// Decomposition kernels on LAPACK (LAPACKE over OpenBLAS) and BLAS trsm. Our blocks
// are row-major and LAPACK is column-major: a row-major matrix is its transpose in
// column-major, which cholesky, eigh (a triangle's mirror), svd (A^T = U' S V'^T gives
// u = V' and vt = U'^T in place) and trsm (CBLAS's row-major order) use without a
// copy; lu and qr transpose into a scratch matrix and back.
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "tsr/backends/cpu/blas_lock.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/decompositions.h"

extern "C" {
void cblas_strsm(int order, int side, int uplo, int trans, int diag, int m, int n, float alpha,
                 const float* a, int lda, float* b, int ldb);
void cblas_dtrsm(int order, int side, int uplo, int trans, int diag, int m, int n, double alpha,
                 const double* a, int lda, double* b, int ldb);
}

namespace tsr::detail::cpu {
namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112, kUpper = 121, kLower = 122;
constexpr int kNonUnit = 131, kUnit = 132, kLeft = 141, kRight = 142;

// Overloads picking the s/d routine. LAPACKE's _work entry points call LAPACK
// directly: the high-level ones first scan the input for NaN and then return an error
// without factoring (leaving pivots unset, which the permutation then indexed with);
// LAPACK itself propagates NaN into the results, as JAX's kernels do. Workspaces are
// sized by a query (lwork = -1) per call.
lapack_int potrf(char uplo, lapack_int n, float* a, lapack_int lda) {
  return LAPACKE_spotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);
}
lapack_int potrf(char uplo, lapack_int n, double* a, lapack_int lda) {
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);
}
void trsm(int side, int uplo, int trans, int diag, int m, int n, const float* a, int lda, float* b,
          int ldb) {
  cblas_strsm(kRowMajor, side, uplo, trans, diag, m, n, 1.0f, a, lda, b, ldb);
}
void trsm(int side, int uplo, int trans, int diag, int m, int n, const double* a, int lda,
          double* b, int ldb) {
  cblas_dtrsm(kRowMajor, side, uplo, trans, diag, m, n, 1.0, a, lda, b, ldb);
}
lapack_int getrf(lapack_int m, lapack_int n, float* a, lapack_int lda, lapack_int* piv) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, piv);
}
lapack_int getrf(lapack_int m, lapack_int n, double* a, lapack_int lda, lapack_int* piv) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, piv);
}

// A workspace query's answer (stored in the first work element) as a size.
template <typename T>
lapack_int wsize(T w) {
  return std::max<lapack_int>(1, static_cast<lapack_int>(w));
}

template <typename T>
lapack_int geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau) {
  T q = 0;
  auto call = [&](T* work, lapack_int lwork) {
    if constexpr (std::is_same_v<T, float>)
      return LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
    else
      return LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
  };
  call(&q, -1);
  std::vector<T> work(static_cast<size_t>(wsize(q)));
  return call(work.data(), static_cast<lapack_int>(work.size()));
}
template <typename T>
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau) {
  T q = 0;
  auto call = [&](T* work, lapack_int lwork) {
    if constexpr (std::is_same_v<T, float>)
      return LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);
    else
      return LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);
  };
  call(&q, -1);
  std::vector<T> work(static_cast<size_t>(wsize(q)));
  return call(work.data(), static_cast<lapack_int>(work.size()));
}
template <typename T>
lapack_int syevd(char uplo, lapack_int n, T* a, lapack_int lda, T* w) {
  T q = 0;
  lapack_int iq = 0;
  auto call = [&](T* work, lapack_int lwork, lapack_int* iwork, lapack_int liwork) {
    if constexpr (std::is_same_v<T, float>)
      return LAPACKE_ssyevd_work(LAPACK_COL_MAJOR, 'V', uplo, n, a, lda, w, work, lwork, iwork,
                                 liwork);
    else
      return LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, 'V', uplo, n, a, lda, w, work, lwork, iwork,
                                 liwork);
  };
  call(&q, -1, &iq, -1);
  std::vector<T> work(static_cast<size_t>(wsize(q)));
  std::vector<lapack_int> iwork(static_cast<size_t>(std::max<lapack_int>(1, iq)));
  return call(work.data(), static_cast<lapack_int>(work.size()), iwork.data(),
              static_cast<lapack_int>(iwork.size()));
}
template <typename T>
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, T* s, T* u,
                 lapack_int ldu, T* vt, lapack_int ldvt) {
  T q = 0;
  std::vector<lapack_int> iwork(static_cast<size_t>(8 * std::max<lapack_int>(1, std::min(m, n))));
  auto call = [&](T* work, lapack_int lwork) {
    if constexpr (std::is_same_v<T, float>)
      return LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work,
                                 lwork, iwork.data());
    else
      return LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work,
                                 lwork, iwork.data());
  };
  call(&q, -1);
  std::vector<T> work(static_cast<size_t>(wsize(q)));
  return call(work.data(), static_cast<lapack_int>(work.size()));
}

// Rows and columns of a block's matrices, and how many matrices it holds.
struct Dims {
  int64_t batch, rows, cols;
};
Dims dims_of(const Shape& s) {
  const size_t r = s.size();
  int64_t b = 1;
  for (size_t i = 0; i + 2 < r; ++i) b *= s[i];
  return {b, s[r - 2], s[r - 1]};
}

int li(int64_t v) { return static_cast<int>(std::max<int64_t>(v, 1)); }

// Row-major (rows x cols) src into column-major dst (leading dimension rows), and back.
template <typename T>
void to_col_major(const T* src, T* dst, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i + j * rows] = src[i * cols + j];
}
template <typename T>
void from_col_major(const T* src, int64_t ld, T* dst, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[i + j * ld];
}

// True when a block holds a NaN: eigh and svd then give NaN outputs without calling
// LAPACK, whose iterative eigen- and singular-value solvers may return finite garbage
// (or fail to converge) on NaN input.
template <typename T>
bool has_nan(const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] != x[i]) return true;
  return false;
}

// Runs f<T> for the block's float dtype (the rule admits float32 and float64 only).
template <typename F>
void by_dtype(DType t, F&& f) {
  if (t == DType::Float32)
    f(float{});
  else
    f(double{});
}

// Unblocked Cholesky (LAPACK's potf2 order) for small matrices: a LAPACK call costs
// ~0.5 us of wrapper and buffer locking, more than an 8x8 factorization, and the
// buffer lock serialises devices that factor batches side by side. Returns false
// when a is not positive definite. Lower triangle in, lower factor out (row-major).
template <typename T>
bool small_cholesky(T* l, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    T d = l[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
    if (!(d > T(0))) return false;  // also NaN, as potrf
    d = std::sqrt(d);
    l[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      T v = l[i * n + j];
      for (int64_t k = 0; k < j; ++k) v -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = v / d;
    }
  }
  return true;
}
constexpr int64_t kSmallCholesky = 16;

template <typename T>
void cholesky_t(const KernelArgs& a) {
  const Dims d = dims_of((*a.in)[0].shape);
  const int64_t n = d.rows, nn = n * n;
  const T* x = a.i<T>(0);
  T* out = a.o<T>(0);
  std::optional<BlasLock> lock;
  if (n > kSmallCholesky) lock.emplace(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < d.batch; ++b) {
    T* l = out + b * nn;
    std::memcpy(l, x + b * nn, static_cast<size_t>(nn) * sizeof(T));
    // Row-major lower is column-major upper.
    lapack_int info = n > kSmallCholesky ? potrf('U', static_cast<lapack_int>(n), l, li(n))
                                         : (small_cholesky(l, n) ? 0 : 1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (j > i)
          l[i * n + j] = T(0);
        else if (info != 0)
          l[i * n + j] = std::numeric_limits<T>::quiet_NaN();
  }
}

template <typename T>
void triangular_solve_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::TriangularSolve&>(*a.prim);
  const Dims da = dims_of((*a.in)[0].shape), db = dims_of((*a.in)[1].shape);
  const int64_t m = da.rows, bsz = db.rows * db.cols;
  const T* am = a.i<T>(0);
  const T* bm = a.i<T>(1);
  T* out = a.o<T>(0);
  std::memcpy(out, bm, static_cast<size_t>(db.batch * bsz) * sizeof(T));
  if (bsz == 0) return;
  BlasLock lock(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < db.batch; ++b)
    trsm(p.left_side() ? kLeft : kRight, p.lower() ? kLower : kUpper,
         p.transpose_a() ? kTrans : kNoTrans, p.unit_diagonal() ? kUnit : kNonUnit,
         static_cast<int>(db.rows), static_cast<int>(db.cols), am + b * m * m, li(m), out + b * bsz,
         li(db.cols));
}

template <typename T>
void lu_t(const KernelArgs& a) {
  const Dims d = dims_of((*a.in)[0].shape);
  const int64_t m = d.rows, n = d.cols, k = std::min(m, n);
  const T* x = a.i<T>(0);
  T* lu = a.o<T>(0);
  auto* piv_out = a.o<int32_t>(1);
  auto* perm_out = a.o<int32_t>(2);
  std::vector<T> cm(static_cast<size_t>(m * n));
  std::vector<lapack_int> ipiv(static_cast<size_t>(std::max<int64_t>(k, 1)));
  BlasLock lock(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < d.batch; ++b) {
    to_col_major(x + b * m * n, cm.data(), m, n);
    if (k > 0)
      getrf(static_cast<lapack_int>(m), static_cast<lapack_int>(n), cm.data(), li(m), ipiv.data());
    from_col_major(cm.data(), m, lu + b * m * n, m, n);
    int32_t* perm = perm_out + b * m;
    std::iota(perm, perm + m, 0);
    for (int64_t i = 0; i < k; ++i) {
      int32_t pi = static_cast<int32_t>(ipiv[static_cast<size_t>(i)] - 1);
      if (pi < 0 || pi >= m) pi = static_cast<int32_t>(i);  // never index out of the rows
      piv_out[b * k + i] = pi;
      std::swap(perm[i], perm[pi]);
    }
  }
}

template <typename T>
void qr_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Qr&>(*a.prim);
  const Dims d = dims_of((*a.in)[0].shape);
  const int64_t m = d.rows, n = d.cols, k = std::min(m, n);
  const int64_t qc = p.full_matrices() ? m : k, rr = qc;  // q (m, qc), r (qc, n)
  const T* x = a.i<T>(0);
  T* q = a.o<T>(0);
  T* r = a.o<T>(1);
  // Column-major m x max(n, qc): geqrf's reflectors, then orgqr's q in the first qc columns.
  const int64_t w = std::max(n, qc);
  std::vector<T> cm(static_cast<size_t>(m * w)), tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
  BlasLock lock(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < d.batch; ++b) {
    to_col_major(x + b * m * n, cm.data(), m, n);
    if (k > 0)
      geqrf(static_cast<lapack_int>(m), static_cast<lapack_int>(n), cm.data(), li(m), tau.data());
    T* rb = r + b * rr * n;
    for (int64_t i = 0; i < rr; ++i)
      for (int64_t j = 0; j < n; ++j)
        rb[i * n + j] = j >= i ? cm[static_cast<size_t>(i + j * m)] : T(0);
    if (m > 0 && qc > 0)
      orgqr(static_cast<lapack_int>(m), static_cast<lapack_int>(qc), static_cast<lapack_int>(k),
            cm.data(), li(m), tau.data());
    from_col_major(cm.data(), m, q + b * m * qc, m, qc);
  }
}

template <typename T>
void eigh_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Eigh&>(*a.prim);
  const Dims d = dims_of((*a.in)[0].shape);
  const int64_t n = d.rows, nn = n * n;
  const T* x = a.i<T>(0);
  T* v = a.o<T>(0);
  T* w = a.o<T>(1);
  std::vector<T> z(static_cast<size_t>(nn));
  BlasLock lock(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < d.batch; ++b) {
    std::memcpy(z.data(), x + b * nn, static_cast<size_t>(nn) * sizeof(T));
    // Row-major lower is column-major upper; eigenvectors come back as columns of a
    // column-major matrix, i.e. rows here: transpose into v.
    lapack_int info = has_nan(z.data(), nn)
                          ? 1
                          : (n ? syevd(p.lower() ? 'U' : 'L', static_cast<lapack_int>(n), z.data(),
                                       li(n), w + b * n)
                               : 0);
    T* vb = v + b * nn;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        vb[i * n + j] =
            info ? std::numeric_limits<T>::quiet_NaN() : z[static_cast<size_t>(j * n + i)];
    if (info)
      for (int64_t i = 0; i < n; ++i) w[b * n + i] = std::numeric_limits<T>::quiet_NaN();
  }
}

template <typename T>
void svd_t(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Svd&>(*a.prim);
  const Dims d = dims_of((*a.in)[0].shape);
  const int64_t m = d.rows, n = d.cols, k = std::min(m, n);
  const bool uv = p.compute_uv(), full = p.full_matrices();
  const int64_t ku = full ? m : k, kv = full ? n : k;  // u (m, ku), vt (kv, n)
  const T* x = a.i<T>(0);
  T* s = a.o<T>(0);
  T* u = uv ? a.o<T>(1) : nullptr;
  T* vt = uv ? a.o<T>(2) : nullptr;
  std::vector<T> at(static_cast<size_t>(m * n));
  T dummy[1];
  BlasLock lock(blas_threads(a.busy_devices));
  for (int64_t b = 0; b < d.batch; ++b) {
    T* ub = uv ? u + b * m * ku : dummy;
    T* vb = uv ? vt + b * kv * n : dummy;
    if (k == 0) {
      // Nothing to decompose: full u and vt are identities.
      for (int64_t i = 0; uv && i < m * ku; ++i) ub[i] = (i / ku == i % ku) ? T(1) : T(0);
      for (int64_t i = 0; uv && i < kv * n; ++i) vb[i] = (i / n == i % n) ? T(1) : T(0);
      continue;
    }
    std::memcpy(at.data(), x + b * m * n, static_cast<size_t>(m * n) * sizeof(T));
    // The row-major a is the column-major a^T (n x m): a^T = U' S V'^T, so u = V' is
    // V'^T in column-major (written straight into u) and vt = U'^T is U' (into vt).
    lapack_int info =
        has_nan(at.data(), m * n)
            ? 1
            : gesdd(uv ? (full ? 'A' : 'S') : 'N', static_cast<lapack_int>(n),
                    static_cast<lapack_int>(m), at.data(), li(n), s + b * k, vb, li(n), ub, li(ku));
    if (info) {
      const T nan = std::numeric_limits<T>::quiet_NaN();
      std::fill(s + b * k, s + (b + 1) * k, nan);
      if (uv) {
        std::fill(ub, ub + m * ku, nan);
        std::fill(vb, vb + kv * n, nan);
      }
    }
  }
}

}  // namespace

void cholesky(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { cholesky_t<decltype(t)>(a); });
}
void triangular_solve(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { triangular_solve_t<decltype(t)>(a); });
}
void lu(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { lu_t<decltype(t)>(a); });
}
void qr(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { qr_t<decltype(t)>(a); });
}
void eigh(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { eigh_t<decltype(t)>(a); });
}
void svd(const KernelArgs& a) {
  by_dtype((*a.in)[0].dtype, [&](auto t) { svd_t<decltype(t)>(a); });
}

}  // namespace tsr::detail::cpu
