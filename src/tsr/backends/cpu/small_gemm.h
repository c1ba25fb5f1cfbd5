#pragma once
// A single-threaded GEMM for few rows (a data-parallel device's share of a batch):
// it copies the other operand in L2-sized blocks as it goes instead of in one pass
// over the whole matrix, so a 32-row product with replicated weights does not pay
// a full pack of those weights (docs/design/0015-gemm-many-devices.md).
#include <cstdint>

namespace tsr::detail::cpu {

/** Whether small_gemm is the faster choice for an m x n x k product on `threads`
 *  BLAS threads (it is single-threaded and wins only when m is small). */
bool prefer_small_gemm(int64_t m, int64_t n, int64_t k, int threads);

/** c[m, n] = op(a)[m, k] @ op(b)[k, n], all row-major; op(a) is a as stored [m, k]
 *  with row stride lda, or its transpose when ta (stored [k, m]); likewise b ([k, n]
 *  or, when tb, [n, k]). c is overwritten. T is float or double. */
template <class T>
void small_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                const T* b, int64_t ldb, T* c, int64_t ldc);

}  // namespace tsr::detail::cpu
