// dot_general: operands are brought to [batch, M, K] and [batch, K, N] (copying
// only when the stored order is neither that nor its transpose), then each batch
// is one GEMM: OpenBLAS for float32/float64 (and the half types, widened to
// float32), a blocked loop in wrapping int64 for integers. A few-row product on
// one thread (a data-parallel device's share of the batch) goes to small_gemm,
// which skips OpenBLAS's pass that packs the whole other operand.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "tsr/backends/common/dot_plan.h"
#include "tsr/backends/cpu/blas_lock.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/backends/cpu/small_gemm.h"
#include "tsr/error.h"
#include "tsr/prims/linalg.h"

// Declared here rather than through cblas.h (CMake links libopenblas only).
extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha,
                 const double* a, int lda, const double* b, int ldb, double beta, double* c,
                 int ldc);
void cblas_cgemm(int order, int transa, int transb, int m, int n, int k, const void* alpha,
                 const void* a, int lda, const void* b, int ldb, const void* beta, void* c,
                 int ldc);
void cblas_zgemm(int order, int transa, int transb, int m, int n, int k, const void* alpha,
                 const void* a, int lda, const void* b, int ldb, const void* beta, void* c,
                 int ldc);
}

namespace tsr::detail::cpu {

// Several simulated devices run GEMMs at once: share the cores between them.
// Cores are those this process may run on (taskset, a container's cpuset), not
// all the machine has: oversubscribed GEMM threads only get in each other's way.
int blas_threads(int busy_devices) {
  static const int cores = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return std::max(1, cores / std::max(1, busy_devices));
}

namespace {
// OpenBLAS's thread count is global, so it is set only on a change.
std::shared_mutex g_blas_mu;
int g_blas_threads = 0;  // guarded by g_blas_mu (written under the exclusive lock)
}  // namespace

BlasLock::BlasLock(int n) {
  if (n == 1) {
    shared_ = std::shared_lock<std::shared_mutex>(g_blas_mu);
    if (g_blas_threads == 1) return;
    shared_.unlock();
  }
  exclusive_ = std::unique_lock<std::shared_mutex>(g_blas_mu);
  if (g_blas_threads != n) {
    openblas_set_num_threads(n);
    g_blas_threads = n;
  }
}

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// True when the dims `perm` (of `shape`) are already in memory order, ignoring
// size-1 dims: a reshape of the operand then is that permutation.
bool in_order(const std::vector<int>& perm, const Shape& shape) {
  int last = -1;
  for (int d : perm) {
    if (shape[d] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

// One operand in the layout GEMM reads, in the compute dtype `ct`: `data` is
// the input itself when nothing had to change, else `own`.
struct Operand {
  const void* data = nullptr;
  bool trans = false;  // stored with its two matrix dims swapped
  std::vector<unsigned char> own;
};

// `want` is the order GEMM reads; `swapped` the same with the matrix dims swapped
// (usable as a transposed operand when allow_trans).
Operand prepare(const void* src, const LocalType& t, DType ct, const std::vector<int>& want,
                const std::vector<int>& swapped, bool allow_trans) {
  Operand op;
  op.data = src;
  std::vector<unsigned char> tmp;
  op.trans = !in_order(want, t.shape) && allow_trans && in_order(swapped, t.shape);
  if (!op.trans && !in_order(want, t.shape)) {
    // Permute into `want` order (in the input dtype).
    size_t r = want.size(), isz = itemsize(t.dtype);
    Shape ext(r);
    std::vector<int64_t> ss(r), full = row_major_strides(t.shape);
    for (size_t i = 0; i < r; ++i) ext[i] = t.shape[want[i]], ss[i] = full[want[i]];
    std::vector<int64_t> ds = row_major_strides(ext);
    tmp.resize(numel(ext) * isz);
    copy_strided(tmp.data(), ds.data(), src, ss.data(), ext, isz);
    op.data = tmp.data();
  }
  if (t.dtype != ct) {
    int64_t n = numel(t.shape);
    op.own.resize(n * itemsize(ct));
    convert_n(op.data, t.dtype, op.own.data(), ct, n);
    op.data = op.own.data();
  } else if (!tmp.empty()) {
    op.own = std::move(tmp);
    op.data = op.own.data();
  }
  return op;
}

// c[M, N] = a[M, K] @ b[K, N] in wrapping 64-bit integer arithmetic.
void gemm_int(const int64_t* a, const int64_t* b, int64_t* c, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kJ = 256, kK = 64;  // a [kK, kJ] block of b stays in L2
  auto* cu = reinterpret_cast<uint64_t*>(c);
  const auto* bu = reinterpret_cast<const uint64_t*>(b);
  std::fill(cu, cu + m * n, uint64_t(0));
  for (int64_t j0 = 0; j0 < n; j0 += kJ) {
    int64_t jn = std::min(kJ, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += kK) {
      int64_t kn = std::min(kK, k - k0);
      for (int64_t i = 0; i < m; ++i) {
        uint64_t* crow = cu + i * n + j0;
        for (int64_t kk = k0; kk < k0 + kn; ++kk) {
          uint64_t av = static_cast<uint64_t>(a[i * k + kk]);
          const uint64_t* brow = bu + kk * n + j0;
          for (int64_t j = 0; j < jn; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

}  // namespace

void dot_general(const KernelArgs& a) {
  const auto& dims = static_cast<const prim::DotGeneral&>(*a.prim).dims();
  const LocalType& lt = (*a.in)[0];
  const LocalType& rt = (*a.in)[1];
  const LocalType& ot = (*a.out)[0];
  int64_t nout = numel(ot.shape);
  if (nout == 0) return;

  // The GEMM view and compute dtype (backends/common/dot_plan.h, shared with CUDA).
  DotPlan plan = dot_plan(dims, lt.shape, rt.shape, lt.dtype, ot.dtype);
  const std::vector<int>& lf = plan.lhs_free;
  const std::vector<int>& rf = plan.rhs_free;
  int64_t nb = plan.batch, m = plan.m, n = plan.n, k = plan.k;
  DType out = ot.dtype, ct = plan.compute;
  bool cx = is_complex(ct);
  std::vector<unsigned char> result;
  void* c = a.out_ptr[0];
  if (out != ct) {
    result.resize(nout * itemsize(ct));
    c = result.data();
  }
  if (k == 0) {
    std::memset(c, 0, nout * itemsize(ct));
  } else {
    bool blas = ct != DType::Int64;
    const auto& lb = dims.lhs_batch;
    const auto& lc = dims.lhs_contract;
    const auto& rb = dims.rhs_batch;
    const auto& rc = dims.rhs_contract;
    Operand l =
        prepare(a.in_ptr[0], lt, ct, cat_dims({&lb, &lf, &lc}), cat_dims({&lb, &lc, &lf}), blas);
    Operand r =
        prepare(a.in_ptr[1], rt, ct, cat_dims({&rb, &rc, &rf}), cat_dims({&rb, &rf, &rc}), blas);
    int lda = static_cast<int>(l.trans ? m : k), ldb = static_cast<int>(r.trans ? k : n);
    int ta = l.trans ? kTrans : kNoTrans, tb = r.trans ? kTrans : kNoTrans;
    int threads = blas_threads(a.busy_devices);
    bool small = blas && !cx && prefer_small_gemm(m, n, k, threads);
    std::optional<BlasLock> lock;
    if (blas && !small) lock.emplace(threads);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t lo = b * m * k, ro = b * k * n, co = b * m * n;
      if (small && ct == DType::Float32) {
        small_gemm(l.trans, r.trans, m, n, k, static_cast<const float*>(l.data) + lo, lda,
                   static_cast<const float*>(r.data) + ro, ldb, static_cast<float*>(c) + co, n);
      } else if (small) {
        small_gemm(l.trans, r.trans, m, n, k, static_cast<const double*>(l.data) + lo, lda,
                   static_cast<const double*>(r.data) + ro, ldb, static_cast<double*>(c) + co, n);
      } else if (ct == DType::Float32) {
        cblas_sgemm(kRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, static_cast<const float*>(l.data) + lo, lda,
                    static_cast<const float*>(r.data) + ro, ldb, 0.0f, static_cast<float*>(c) + co,
                    static_cast<int>(n));
      } else if (cx) {
        size_t z = itemsize(ct);
        const auto* lp = static_cast<const char*>(l.data) + lo * z;
        const auto* rp = static_cast<const char*>(r.data) + ro * z;
        char* cp = static_cast<char*>(c) + co * z;
        int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
        if (ct == DType::Complex64) {
          const std::complex<float> one(1), zero(0);
          cblas_cgemm(kRowMajor, ta, tb, mi, ni, ki, &one, lp, lda, rp, ldb, &zero, cp, ni);
        } else {
          const std::complex<double> one(1), zero(0);
          cblas_zgemm(kRowMajor, ta, tb, mi, ni, ki, &one, lp, lda, rp, ldb, &zero, cp, ni);
        }
      } else if (ct == DType::Float64) {
        cblas_dgemm(kRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0, static_cast<const double*>(l.data) + lo, lda,
                    static_cast<const double*>(r.data) + ro, ldb, 0.0, static_cast<double*>(c) + co,
                    static_cast<int>(n));
      } else {
        gemm_int(static_cast<const int64_t*>(l.data) + lo, static_cast<const int64_t*>(r.data) + ro,
                 static_cast<int64_t*>(c) + co, m, n, k);
      }
    }
  }
  if (out != ct) convert_n(c, ct, a.out_ptr[0], out, nout);
}

}  // namespace tsr::detail::cpu
