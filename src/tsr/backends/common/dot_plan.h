#pragma once
// dot_general's sizes and compute dtype, for the CPU and CUDA kernels alike: the
// operands as [batch, M, K] and [batch, K, N] GEMMs, in the dtype the CPU computes.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tsr/dtype.h"
#include "tsr/prims/linalg.h"

namespace tsr::detail {

/** The GEMM view of one dot_general. */
struct DotPlan {
  std::vector<int> lhs_free, rhs_free;    /**< each operand's free dims, in order */
  int64_t batch = 1, m = 1, n = 1, k = 1; /**< the batched GEMM's sizes */
  DType compute = DType::Float32;         /**< int64 (wrapping), complex, float64 or float32 */
};

/** The dims of `parts`, concatenated. */
inline std::vector<int> cat_dims(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> r;
  for (const auto* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

/** The product of s's sizes along `dims`. */
inline int64_t prod_dims(const Shape& s, const std::vector<int>& dims) {
  int64_t p = 1;
  for (int d : dims) p *= s[d];
  return p;
}

/** The plan of dot_general(lhs, rhs) -> out with `dims`. Compute dtype: integers
 *  stay integers (int64, wrapping); complex stays complex; otherwise float32 unless
 *  float64 is involved. */
inline DotPlan dot_plan(const prim::DotDims& dims, const Shape& lhs, const Shape& rhs, DType in,
                        DType out) {
  DotPlan p;
  p.lhs_free = prim::dot_free_dims(static_cast<int>(lhs.size()), dims.lhs_contract, dims.lhs_batch);
  p.rhs_free = prim::dot_free_dims(static_cast<int>(rhs.size()), dims.rhs_contract, dims.rhs_batch);
  p.batch = prod_dims(lhs, dims.lhs_batch);
  p.m = prod_dims(lhs, p.lhs_free);
  p.n = prod_dims(rhs, p.rhs_free);
  p.k = prod_dims(lhs, dims.lhs_contract);
  auto int_like = [](DType t) { return t == DType::Bool || is_integer(t); };
  bool cx = is_complex(in) || is_complex(out);
  p.compute = int_like(in) && int_like(out)                                 ? DType::Int64
              : cx && (in == DType::Complex128 || out == DType::Complex128) ? DType::Complex128
              : cx                                                          ? DType::Complex64
              : (in == DType::Float64 || out == DType::Float64)             ? DType::Float64
                                                                            : DType::Float32;
  return p;
}

}  // namespace tsr::detail
