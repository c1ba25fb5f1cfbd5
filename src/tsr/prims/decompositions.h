#pragma once
// Matrix decompositions (lax.linalg): cholesky, triangular_solve, lu, qr, eigh, svd.
// Each works on the last two dimensions; leading dimensions are a batch that shards
// freely, while the matrix dimensions must be unsharded (JAX's linalg_sharding_rule).
#include "tsr/core/primitive.h"

namespace tsr::prim {

/** lax.linalg.cholesky_p: the lower Cholesky factor of the lower triangle of x
 *  (upper triangle zero); NaN in the lower triangle when x is not positive definite. */
class Cholesky : public detail::Primitive {
 public:
  const char* name() const override { return "cholesky"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
};

/** lax.linalg.triangular_solve_p: x with op(a) x = b (left_side) or x op(a) = b,
 *  op(a) = a or a^T, reading only a's `lower` (or upper) triangle. Linear in b. */
class TriangularSolve : public detail::Primitive {
 public:
  /** JAX's flags (conjugate_a has no effect on real dtypes and is not kept). */
  TriangularSolve(bool left_side, bool lower, bool transpose_a, bool unit_diagonal)
      : left_side_(left_side),
        lower_(lower),
        transpose_a_(transpose_a),
        unit_diagonal_(unit_diagonal) {}
  /** Solve op(a) x = b (else x op(a) = b). */
  bool left_side() const { return left_side_; }
  /** a is lower triangular (else upper). */
  bool lower() const { return lower_; }
  /** op(a) = a^T. */
  bool transpose_a() const { return transpose_a_; }
  /** a's diagonal is taken as ones (not read). */
  bool unit_diagonal() const { return unit_diagonal_; }
  const char* name() const override { return "triangular_solve"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  bool left_side_, lower_, transpose_a_, unit_diagonal_;
};

/** lax.linalg.lu_p: partial-pivoting LU of an (m, n) matrix: (lu, pivots, permutation)
 *  with L unit lower (below lu's diagonal) and U upper; pivots (min(m, n),) and
 *  permutation (m,) are int32 and zero-based, so a[permutation] = L U. */
class Lu : public detail::Primitive {
 public:
  const char* name() const override { return "lu"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
};

/** lax.linalg.qr_p: q (m, k) with orthonormal columns and upper r (k, n), k = m when
 *  full_matrices, else min(m, n). */
class Qr : public detail::Primitive {
 public:
  /** Complete (m, m) q when true, reduced otherwise. */
  explicit Qr(bool full_matrices) : full_matrices_(full_matrices) {}
  /** Complete q. */
  bool full_matrices() const { return full_matrices_; }
  const char* name() const override { return "qr"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;

 private:
  bool full_matrices_;
};

/** lax.linalg.eigh_p: (v, w) of the symmetric matrix whose `lower` (or upper) triangle
 *  is given: eigenvalues w ascending, eigenvectors in v's columns. */
class Eigh : public detail::Primitive {
 public:
  /** Read the lower triangle (else the upper). */
  explicit Eigh(bool lower) : lower_(lower) {}
  /** Reads the lower triangle. */
  bool lower() const { return lower_; }
  const char* name() const override { return "eigh"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;

 private:
  bool lower_;
};

/** lax.linalg.svd_p: singular values s (descending, k = min(m, n)) and, with compute_uv,
 *  u (m, m or k) and vt (n or k, n) with a = u diag(s) vt. */
class Svd : public detail::Primitive {
 public:
  /** Complete u and vt when full_matrices; s only unless compute_uv. */
  Svd(bool full_matrices, bool compute_uv)
      : full_matrices_(full_matrices), compute_uv_(compute_uv) {}
  /** Complete u and vt. */
  bool full_matrices() const { return full_matrices_; }
  /** Outputs u and vt too. */
  bool compute_uv() const { return compute_uv_; }
  const char* name() const override { return "svd"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  bool jvp_makes_outputs() const override { return true; }
  TSR_DEFINE_BATCH;

 private:
  bool full_matrices_, compute_uv_;
};

}  // namespace tsr::prim
