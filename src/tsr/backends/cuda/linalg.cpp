// The CUDA kernel table's cholesky, lu, qr, eigh and svd (linalg.cu) and triangular_solve: one
// cuBLAS trsm per matrix of the batch on the CPU kernel's layout (row-major, b copied to the output
// and solved in place). A row-major matrix is its transpose column-major, so the row-major solve is
// cuBLAS's with the side and the triangle swapped (what CBLAS's row-major trsm does).
#include <algorithm>

#include "tsr/backends/cuda/blas.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/prims/decompositions.h"

namespace tsr::detail::cuda {
namespace {

// The matrices of a [..., rows, cols] block (the leading dims' product).
int64_t batch_of(const Shape& s) {
  int64_t b = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}

}  // namespace

void triangular_solve(const KernelArgs& a) {
  const auto& p = static_cast<const prim::TriangularSolve&>(*a.prim);
  const Shape& as = (*a.in)[0].shape;
  const Shape& bs = (*a.in)[1].shape;
  const DType t = (*a.in)[1].dtype;
  const size_t r = bs.size();
  const int64_t m = as[as.size() - 1], rows = bs[r - 2], cols = bs[r - 1];
  const int64_t bsz = rows * cols, batch = bsz == 0 ? 0 : numel(bs) / bsz;
  cudaStream_t s = stream_of(a);
  const size_t isz = itemsize(t);
  if (a.out_ptr[0] != a.in_ptr[1] && numel(bs) > 0)
    check(cudaMemcpyAsync(a.out_ptr[0], a.in_ptr[1], static_cast<size_t>(numel(bs)) * isz,
                          cudaMemcpyDeviceToDevice, s),
          "triangular_solve", "cudaMemcpyAsync");
  if (bsz == 0) return;
  cublasHandle_t h = blas_handle(s);
  const cublasSideMode_t side = p.left_side() ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT;
  const cublasFillMode_t uplo = p.lower() ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  const cublasOperation_t op = p.transpose_a() ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasDiagType_t diag = p.unit_diagonal() ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
  const int cm = static_cast<int>(cols), cn = static_cast<int>(rows);
  const int lda = static_cast<int>(std::max<int64_t>(m, 1)), ldb = static_cast<int>(cols);
  for (int64_t b = 0; b < batch; ++b) {
    if (t == DType::Float64) {
      const double one = 1;
      const double* am = static_cast<const double*>(a.in_ptr[0]) + b * m * m;
      double* x = static_cast<double*>(a.out_ptr[0]) + b * bsz;
      check_blas(cublasDtrsm(h, side, uplo, op, diag, cm, cn, &one, am, lda, x, ldb),
                 "triangular_solve", "cublasDtrsm");
    } else if (t == DType::Float32) {
      const float one = 1;
      const float* am = static_cast<const float*>(a.in_ptr[0]) + b * m * m;
      float* x = static_cast<float*>(a.out_ptr[0]) + b * bsz;
      check_blas(cublasStrsm(h, side, uplo, op, diag, cm, cn, &one, am, lda, x, ldb),
                 "triangular_solve", "cublasStrsm");
    } else {
      unsupported("triangular_solve", t);  // the rule admits float32 and float64 only
    }
  }
}

void cholesky(const KernelArgs& a) {
  const Shape& s = (*a.in)[0].shape;
  cholesky_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], batch_of(s), s.back(), stream_of(a));
}

void lu(const KernelArgs& a) {
  const Shape& s = (*a.in)[0].shape;
  const size_t r = s.size();
  lu_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], static_cast<int32_t*>(a.out_ptr[1]),
            static_cast<int32_t*>(a.out_ptr[2]), batch_of(s), s[r - 2], s[r - 1], stream_of(a));
}

void qr(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Qr&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  const size_t r = s.size();
  const int64_t m = s[r - 2], n = s[r - 1];
  qr_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], a.out_ptr[1], batch_of(s), m, n,
            p.full_matrices() ? m : std::min(m, n), stream_of(a));
}

void eigh(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Eigh&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  eigh_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], a.out_ptr[1], batch_of(s), s.back(),
              p.lower(), stream_of(a));
}

void svd(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Svd&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  const size_t r = s.size();
  svd_launch((*a.in)[0].dtype, a.in_ptr[0], a.out_ptr[0], p.compute_uv() ? a.out_ptr[1] : nullptr,
             p.compute_uv() ? a.out_ptr[2] : nullptr, batch_of(s), s[r - 2], s[r - 1],
             p.compute_uv(), p.full_matrices(), stream_of(a));
}

}  // namespace tsr::detail::cuda
