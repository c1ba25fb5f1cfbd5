#pragma once
// Linear algebra: jnp.linalg's functions and lax.linalg's decompositions, named as in
// JAX. Matrices are the last two dimensions; leading dimensions are a batch, which may
// be sharded freely, while the two matrix dimensions must be unsharded (a
// ShardingTypeError names the reshard that fixes it, as JAX). float32 and float64
// (integers are promoted to float32); derivatives follow JAX's rules, including their
// degenerate cases (repeated eigenvalues or singular values give infinite derivatives).
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"

namespace tsr::linalg {

/** Flags of lax.linalg.triangular_solve. */
struct TriangularSolveOptions {
  bool left_side = false;     /**< solve op(a) x = b (else x op(a) = b) */
  bool lower = false;         /**< a is lower triangular (only that triangle is read) */
  bool transpose_a = false;   /**< op(a) = a^T */
  bool unit_diagonal = false; /**< a's diagonal is taken as ones */
};
/** lax.linalg.triangular_solve: a (..., m, m), b (..., m, n) (left) or (..., n, m), or b
 *  with one dimension less (a vector per matrix). Linear in b. */
Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& o = {});
/** jax.scipy.linalg.solve_triangular: x with op(a) x = b, b (..., m) or (..., m, n);
 *  trans 0 (a), 1 (a^T). */
Array solve_triangular(const Array& a, const Array& b, int trans = 0, bool lower = false,
                       bool unit_diagonal = false);

/** jnp.linalg.cholesky: the lower factor L (L L^T = a), or the upper one (U^T U = a).
 *  With symmetrize_input, (a + a^T) / 2 is factored; NaN when a is not positive definite. */
Array cholesky(const Array& a, bool upper = false, bool symmetrize_input = true);

/** lax.linalg.lu's results. */
struct LuResult {
  Array lu;          /**< L below the diagonal (unit diagonal implied), U on and above it */
  Array pivots;      /**< int32 (..., min(m, n)): row i was swapped with row pivots[i] */
  Array permutation; /**< int32 (..., m): a[permutation] = L U */
};
/** lax.linalg.lu: LU decomposition with partial pivoting of (..., m, n) matrices. */
LuResult lu(const Array& a);

/** jnp.linalg.qr's results. */
struct QrResult {
  Array Q; /**< orthonormal columns (invalid for mode "r") */
  Array R; /**< upper triangular */
};
/** jnp.linalg.qr: mode "reduced" (Q (m, k), R (k, n), k = min(m, n)), "complete"
 *  (Q (m, m), R (m, n)) or "r" (R only). */
QrResult qr(const Array& a, const std::string& mode = "reduced");

/** jnp.linalg.eigh's results. */
struct EighResult {
  Array eigenvalues;  /**< ascending (..., n) */
  Array eigenvectors; /**< (..., n, n), eigenvector i in column i */
};
/** jnp.linalg.eigh of symmetric matrices: UPLO "L" or "U" is the triangle read; with
 *  symmetrize_input, (a + a^T) / 2 is decomposed (then both triangles count). */
EighResult eigh(const Array& a, const std::string& UPLO = "L", bool symmetrize_input = true);
/** jnp.linalg.eigvalsh: the eigenvalues of eigh. */
Array eigvalsh(const Array& a, const std::string& UPLO = "L");

/** jnp.linalg.svd's results. */
struct SvdResult {
  Array U;  /**< (..., m, m) or (..., m, k) */
  Array S;  /**< descending (..., k), k = min(m, n) */
  Array Vh; /**< (..., n, n) or (..., k, n) */
};
/** jnp.linalg.svd: a = U diag(S) Vh (full or reduced U and Vh). */
SvdResult svd(const Array& a, bool full_matrices = true);
/** jnp.linalg.svdvals: the singular values alone (descending). */
Array svdvals(const Array& a);

/** jnp.linalg.solve: x with a x = b; b is (..., n) when it is a vector per matrix
 *  (b.ndim == 1), else (..., n, k); batch dimensions broadcast. Through LU. */
Array solve(const Array& a, const Array& b);
/** jnp.linalg.inv: the inverse of each matrix (inf or NaN when singular, as JAX). */
Array inv(const Array& a);
/** jnp.linalg.det: the determinant (closed forms for 2x2 and 3x3, LU otherwise). */
Array det(const Array& a);

/** jnp.linalg.slogdet's results. */
struct SlogdetResult {
  Array sign;      /**< -1, 0 or 1 */
  Array logabsdet; /**< log |det a| (-inf when singular) */
};
/** jnp.linalg.slogdet: sign and log |det| through LU. */
SlogdetResult slogdet(const Array& a);

/** jnp.linalg.lstsq's results. */
struct LstsqResult {
  Array x;         /**< the least-squares solution (n,) or (n, k) */
  Array residuals; /**< squared residual norm per column (always computed, as JAX) */
  Array rank;      /**< int32 scalar: singular values above rcond * the largest */
  Array s;         /**< singular values of a */
};
/** jnp.linalg.lstsq for a (m, n) and b (m,) or (m, k): through the SVD; rcond defaults
 *  to eps * max(m, n). */
LstsqResult lstsq(const Array& a, const Array& b, std::optional<double> rcond = {});

/** jnp.linalg.pinv: Moore-Penrose pseudo-inverse through the SVD; singular values at most
 *  rtol * the largest (default 10 * max(m, n) * eps) count as zero. */
Array pinv(const Array& a, std::optional<double> rtol = {});

/** The `ord` of norm: a number (inf, -inf, 0, 1, 2, p), "fro" or "nuc", or unset (the
 *  2-norm of vectors, Frobenius for matrices). */
class NormOrd {
 public:
  /** Unset: 2 for vectors, "fro" for matrices. */
  NormOrd() = default;
  /** A number (std::numeric_limits<double>::infinity() for inf). */
  NormOrd(double p) : number_(p) {}  // NOLINT: implicit by design
  /** An int. */
  NormOrd(int p) : number_(p) {}  // NOLINT
  /** "fro" or "nuc". */
  NormOrd(const char* name) : name_(name) {}  // NOLINT
  /** "fro" or "nuc". */
  NormOrd(std::string name) : name_(std::move(name)) {}  // NOLINT
  /** The number, when one was given. */
  const std::optional<double>& number() const { return number_; }
  /** The name, when one was given ("" otherwise). */
  const std::string& name() const { return name_; }

 private:
  std::optional<double> number_;
  std::string name_;
};
/** jnp.linalg.norm: a vector norm over one axis, a matrix norm over two, or with no axis
 *  the 2-norm of the flattened x (ord unset) or of x as a vector or matrix (rank 1 or 2). */
Array norm(const Array& x, const NormOrd& ord = {}, std::optional<std::vector<int>> axis = {},
           bool keepdims = false);

/** jnp.linalg.matrix_rank: singular values above rtol * the largest count (rtol
 *  defaults to max(m, n) * eps); a vector's rank is 1 unless it is all zeros. int32. */
Array matrix_rank(const Array& m, std::optional<double> rtol = {});
/** jnp.linalg.cond: the condition number in the 2-norm (unset, 2, -2: from the singular
 *  values) or another matrix norm (|a| |a^-1|, square matrices); inf where singular. */
Array cond(const Array& x, const NormOrd& p = {});
/** jnp.linalg.multi_dot: the product of the arrays in the cheapest order (a 1-D first
 *  or last operand is a row or column vector, dropped from the result). */
Array multi_dot(const std::vector<Array>& arrays);

/** jax.scipy.linalg.cho_factor's result: the Cholesky factor and which triangle. */
struct ChoFactor {
  Array c;            /**< the factor (the other triangle zero) */
  bool lower = false; /**< c is lower (c c^T = a), else upper (c^T c = a) */
};
/** jax.scipy.linalg.cho_factor: the factor cho_solve uses. */
ChoFactor cho_factor(const Array& a, bool lower = false);
/** jax.scipy.linalg.cho_solve: x with a x = b from a's Cholesky factor; b is (..., n) or
 *  (..., n, k). */
Array cho_solve(const ChoFactor& f, const Array& b);

/** jax.scipy.linalg.lu_factor's result, with the permutation lax.linalg.lu gives. */
struct LuFactor {
  Array lu;          /**< L below the diagonal (unit), U on and above */
  Array piv;         /**< int32 pivots (row i swapped with piv[i]) */
  Array permutation; /**< int32: a[permutation] = L U */
};
/** jax.scipy.linalg.lu_factor: LU with partial pivoting, for lu_solve. */
LuFactor lu_factor(const Array& a);
/** jax.scipy.linalg.lu_solve: x with a x = b (trans 0) or a^T x = b (trans 1) from
 *  lu_factor's result; b is (..., n) or (..., n, k). */
Array lu_solve(const LuFactor& f, const Array& b, int trans = 0);

/** jnp.linalg.matrix_power: a^n by repeated squaring (n < 0: of inv(a); n = 0: identity). */
Array matrix_power(const Array& a, int n);

}  // namespace tsr::linalg
