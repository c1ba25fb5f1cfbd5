// dot_general on CUDA with the CPU kernel's semantics: operands in the canonical
// layouts [batch, M, K] and [batch, K, N] (used in place when they already are, else
// staged by one strided read), one cuBLAS strided-batched GEMM (float32 / float64,
// or float16 / bfloat16 on tensor cores with float32 accumulation), a plain kernel for
// integers (int64, wrapping), and the [batch, M, N] product, dot_general's output
// order, converted to the output dtype. TF32 stays off unless TSR_CUDA_ALLOW_TF32=1,
// so float32 matches the CPU's precision.
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tsr/backends/common/dot_plan.h"
#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cuda/blas.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/error.h"
#include "tsr/prims/linalg.h"
#include "tsr/runtime/env.h"

namespace tsr::detail::cuda {

void check_blas(cublasStatus_t st, const char* prim, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw BackendError(std::string("[") + prim + "] cuBLAS call " + what +
                     " failed: " + cublasGetStatusString(st) +
                     ". Got that status from cuBLAS; expected success. "
                     "Check the GPU with nvidia-smi, or run on the CPU platform.");
}

cublasHandle_t blas_handle(cudaStream_t s) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, cublasHandle_t> handles;
  int dev = 0;
  check(cudaGetDevice(&dev), "cuBLAS", "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mu);
  auto& h = handles[{dev, s}];
  if (!h) {
    check_blas(cublasCreate(&h), "cuBLAS", "cublasCreate");
    check_blas(cublasSetStream(h, s), "cuBLAS", "cublasSetStream");
    // Default math: float32 GEMMs run in float32 (TF32 only through the compute type
    // dot_general passes), half-type GEMMs on tensor cores with float32 accumulation.
    check_blas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cuBLAS", "cublasSetMathMode");
  }
  return h;
}

namespace {

bool allow_tf32() {
  static const bool on = env_flag("TSR_CUDA_ALLOW_TF32", "dot_general",
                                  "1 lets float32 GEMMs use TF32 tensor cores (less precise)");
  return on;
}

cudaDataType_t blas_type(DType t) {
  switch (t) {
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    case DType::Float64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

bool is_identity(const std::vector<int>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int>(i)) return false;
  return true;
}

// Operand k in `order` as a row-major box of dtype st: the input itself when it is
// already that (no copy), else staged into `scratch` (a layout change and/or a
// conversion, as the CPU kernel's prepare()).
const void* stage(const KernelArgs& a, int k, const std::vector<int>& order, DType st,
                  Scratch& scratch, cudaStream_t s) {
  const LocalType& t = (*a.in)[k];
  if (t.dtype == st && is_identity(order)) return a.in_ptr[k];
  int64_t n = numel(t.shape);
  scratch.alloc(static_cast<size_t>(n) * itemsize(st));
  // The operand's dims in `order`: a transpose's read (backends/common/strided_plans.h).
  StridedRead r = transpose_read(t.shape, order);
  Strides rd = read_strides(r.extent, r.strides, "dot_general");
  if (t.dtype == st) {
    strided_read_launch(itemsize(st), a.in_ptr[k], rd, scratch.p, n, s);
  } else {
    gather_convert_launch(st, t.dtype, a.in_ptr[k], rd, scratch.p, n, s);
  }
  return scratch.p;
}

}  // namespace

void dot_general(const KernelArgs& a) {
  const auto& dims = static_cast<const prim::DotGeneral&>(*a.prim).dims();
  const LocalType& lt = (*a.in)[0];
  const LocalType& rt = (*a.in)[1];
  const LocalType& ot = (*a.out)[0];
  int64_t nout = numel(ot.shape);
  if (nout == 0) return;
  if (is_complex(lt.dtype) || is_complex(ot.dtype)) unsupported("dot_general", lt.dtype);
  // The CPU kernel's GEMM view and compute dtype (backends/common/dot_plan.h); half-type
  // operands stay half for cuBLAS (exact products, float32 accumulation: what the CPU
  // computes after widening them).
  DotPlan plan = dot_plan(dims, lt.shape, rt.shape, lt.dtype, ot.dtype);
  const std::vector<int>& lf = plan.lhs_free;
  const std::vector<int>& rf = plan.rhs_free;
  int64_t nb = plan.batch, m = plan.m, n = plan.n, k = plan.k;
  DType in = lt.dtype, out = ot.dtype, ct = plan.compute;
  bool ints = ct == DType::Int64;
  bool half_in =
      (in == DType::Float16 || in == DType::BFloat16) && (out == in || out == DType::Float32);
  DType op_t = half_in ? in : ct;  // operands as cuBLAS reads them
  DType c_t = half_in ? out : ct;  // the product as cuBLAS writes it
  cudaStream_t s = stream_of(a);
  Scratch ab(s, "dot_general"), bb(s, "dot_general"), cb(s, "dot_general");
  void* c = a.out_ptr[0];
  if (out != c_t) {
    cb.alloc(static_cast<size_t>(nout) * itemsize(c_t));
    c = cb.p;
  }
  std::vector<int> lo = cat_dims({&dims.lhs_batch, &lf, &dims.lhs_contract});
  std::vector<int> ro = cat_dims({&dims.rhs_batch, &dims.rhs_contract, &rf});
  if (k == 0) {
    check(cudaMemsetAsync(c, 0, static_cast<size_t>(nout) * itemsize(c_t), s), "dot_general",
          "cudaMemsetAsync");
  } else if (ints) {
    const void* A = stage(a, 0, lo, ct, ab, s);
    const void* B = stage(a, 1, ro, ct, bb, s);
    gemm_int_launch(static_cast<const int64_t*>(A), static_cast<const int64_t*>(B),
                    static_cast<int64_t*>(c), nb, m, n, k, s);
  } else {
    const void* A = stage(a, 0, lo, op_t, ab, s);
    const void* B = stage(a, 1, ro, op_t, bb, s);
    cublasComputeType_t compute = ct == DType::Float64         ? CUBLAS_COMPUTE_64F
                                  : (!half_in && allow_tf32()) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                               : CUBLAS_COMPUTE_32F;
    const double one64 = 1, zero64 = 0;
    const float one32 = 1, zero32 = 0;
    const void* one = ct == DType::Float64 ? static_cast<const void*>(&one64) : &one32;
    const void* zero = ct == DType::Float64 ? static_cast<const void*>(&zero64) : &zero32;
    // Row-major C[M, N] = A[M, K] B[K, N] is column-major C^T = B^T A^T.
    check_blas(
        cublasGemmStridedBatchedEx(
            blas_handle(s), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
            static_cast<int>(k), one, B, blas_type(op_t), static_cast<int>(n), k * n, A,
            blas_type(op_t), static_cast<int>(k), m * k, zero, c, blas_type(c_t),
            static_cast<int>(n), m * n, static_cast<int>(nb), compute, CUBLAS_GEMM_DEFAULT),
        "dot_general", "cublasGemmStridedBatchedEx");
  }
  if (out != c_t) store_convert_launch(out, c_t, c, a.out_ptr[0], nout, s);
}

}  // namespace tsr::detail::cuda
