// dot_general's CUDA kernels (launch.h): operands read into the compute type in the
// canonical layout, the result converted to the output dtype, and the integer GEMM
// (int64, wrapping). The float GEMMs are cuBLAS calls in dot.cpp.
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// dst (row-major over `extent`, compute type C) = src read through strides.
template <typename C, typename S>
__global__ void gather_convert_k(C* dst, const S* src, Strides st, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    S v = src[offset_of(st, 0, i)];
    if constexpr (__is_same(C, int64_t)) {
      dst[i] = ops::cast<int64_t>(load(v));
    } else {
      dst[i] = static_cast<C>(load(v));
    }
  }
}

template <typename O, typename C>
__global__ void store_k(O* out, const C* c, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    if constexpr (__is_same(O, float16_t) || __is_same(O, bfloat16_t)) {
      out[i] = store<O>(static_cast<float>(c[i]));
    } else {
      out[i] = ops::cast<O>(c[i]);
    }
  }
}

// c[b, i, j] = sum_k a[b, i, k] * b[b, k, j], wrapping.
__global__ void gemm_int_k(const int64_t* a, const int64_t* b, int64_t* c, int64_t nb, int64_t m,
                           int64_t n, int64_t k) {
  TSR_CUDA_FOR(idx, nb * m * n) {
    int64_t j = idx % n, i = (idx / n) % m, bb = idx / (m * n);
    uint64_t acc = 0;
    const int64_t* ar = a + (bb * m + i) * k;
    const int64_t* bc = b + bb * k * n + j;
    for (int64_t kk = 0; kk < k; ++kk)
      acc += static_cast<uint64_t>(ar[kk]) * static_cast<uint64_t>(bc[kk * n]);
    c[idx] = static_cast<int64_t>(acc);
  }
}

}  // namespace

void gather_convert_launch(DType ct, DType t, const void* src, const Strides& st, void* dst,
                           int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "dot_general", [&](auto tag) {
    using S = decltype(tag);
    const S* x = static_cast<const S*>(src);
    if (ct == DType::Int64)
      gather_convert_k<int64_t, S>
          <<<l.blocks, l.threads, 0, s>>>(static_cast<int64_t*>(dst), x, st, n);
    else if (ct == DType::Float64)
      gather_convert_k<double, S>
          <<<l.blocks, l.threads, 0, s>>>(static_cast<double*>(dst), x, st, n);
    else
      gather_convert_k<float, S><<<l.blocks, l.threads, 0, s>>>(static_cast<float*>(dst), x, st, n);
  });
  check(cudaGetLastError(), "dot_general", "operand layout kernel");
}

void store_convert_launch(DType t, DType ct, const void* c, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "dot_general", [&](auto tag) {
    using O = decltype(tag);
    O* o = static_cast<O*>(out);
    if (ct == DType::Int64)
      store_k<O, int64_t><<<l.blocks, l.threads, 0, s>>>(o, static_cast<const int64_t*>(c), n);
    else if (ct == DType::Float64)
      store_k<O, double><<<l.blocks, l.threads, 0, s>>>(o, static_cast<const double*>(c), n);
    else
      store_k<O, float><<<l.blocks, l.threads, 0, s>>>(o, static_cast<const float*>(c), n);
  });
  check(cudaGetLastError(), "dot_general", "result conversion kernel");
}

void gemm_int_launch(const int64_t* a, const int64_t* bm, int64_t* c, int64_t nb, int64_t m,
                     int64_t n, int64_t k, cudaStream_t s) {
  int64_t total = nb * m * n;
  if (total == 0) return;
  Launch l = launch_1d(total);
  gemm_int_k<<<l.blocks, l.threads, 0, s>>>(a, bm, c, nb, m, n, k);
  check(cudaGetLastError(), "dot_general", "integer GEMM kernel");
}

}  // namespace tsr::detail::cuda
