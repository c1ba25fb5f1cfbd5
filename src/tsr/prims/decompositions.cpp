// Rules of the matrix decompositions (lax.linalg). Shapes, dtypes and shardings follow
// JAX's linalg_shape_rule / linalg_sharding_rule: batch dimensions shard freely and
// must agree between inputs; the matrix dimensions must be unsharded (triangular_solve
// lets a's non-contracting dimension be sharded, as JAX's _tri_solve_sharding).
// The jvp rules are JAX's, written with ops so they compose to any order.
#include "tsr/prims/decompositions.h"

#include "tsr/indexing.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
bool register_all() {
  for (const char* n : {"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"})
    register_primitive(n);
  declare_ad("cholesky", AdKind::Differentiable);
  declare_ad("triangular_solve", AdKind::Linear);
  declare_ad("lu", AdKind::Differentiable);
  declare_ad("qr", AdKind::Differentiable);
  declare_ad("eigh", AdKind::Differentiable);
  declare_ad("svd", AdKind::Differentiable);
  return true;
}
const bool registered = register_all();

// JAX's linalg_shape_rule and dtype rule, then linalg_sharding_rule: every input has
// rank >= 2, a float32/float64 dtype shared by all, the same batch shape, unsharded
// matrix dimensions (unless `sharded_ok`) and the same batch entries, which it returns.
std::vector<PartitionEntry> check_linalg(const char* name, const std::vector<ArrayType>& in,
                                         bool sharded_ok = false) {
  for (size_t i = 0; i < in.size(); ++i) {
    const ArrayType& t = in[i];
    if (t.ndim() < 2)
      throw TypeError(std::string("[") + name + "] Input " + std::to_string(i) + " to " + name +
                      " must have rank at least 2, but got shape=" + p_ints(t.shape) + ". Got " +
                      t.str() + "; expected an array of matrices (..., m, n).");
    if (!is_floating(t.dtype))
      throw TypeError(std::string("[") + name + "] " + name + " does not accept dtype " +
                      dtype_name(t.dtype) + ". Accepted dtypes are subtypes of floating. Got " +
                      t.str() +
                      "; expected float32 or float64. Convert with astype(float32) (the "
                      "tsr::linalg functions promote integers themselves).");
    if (t.dtype != DType::Float32 && t.dtype != DType::Float64)
      throw NotImplementedError(std::string("[") + name + "] Unsupported dtype " +
                                dtype_name(t.dtype) + ": LAPACK has no " + dtype_name(t.dtype) +
                                " routines. Got " + t.str() +
                                "; expected float32 or float64. Convert with astype(float32) "
                                "and back.");
    if (t.dtype != in[0].dtype)
      throw TypeError(std::string("[") + name + "] " + name +
                      " requires arguments to have the same dtypes, got " +
                      dtype_name(in[0].dtype) + ", " + dtype_name(t.dtype) + ". Got " +
                      in[0].str() + " and " + t.str() +
                      "; expected one dtype. Convert with "
                      "astype first.");
    Shape b(t.shape.begin(), t.shape.end() - 2), b0(in[0].shape.begin(), in[0].shape.end() - 2);
    if (b != b0)
      throw TypeError(std::string("[") + name + "] All inputs to " + name +
                      " must have the same batch dimensions. Got " + in[0].str() + " and " +
                      t.str() +
                      "; expected equal leading dimensions. Broadcast them first "
                      "(broadcast_to).");
  }
  no_unreduced(name, in);
  std::vector<PartitionEntry> batch;
  bool have = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const ArrayType& t = in[i];
    if (t.sharding.mesh().empty()) continue;
    auto e = entries_of(t);
    if (!sharded_ok && (!e[e.size() - 1].is_none() || !e[e.size() - 2].is_none()))
      throw ShardingTypeError(std::string("[") + name + "] Input " + std::to_string(i) + " to " +
                              name + " must be unsharded on non-batch dimensions, but got " +
                              t.sharding.spec().repr() +
                              ". Reshard the matrix dimensions to unsharded first, e.g. "
                              "reshard(x, P(<batch entries>, None, None)); only the leading "
                              "batch dimensions may be sharded.");
    std::vector<PartitionEntry> b(e.begin(), e.end() - 2);
    if (!have) {
      batch = b;
      have = true;
    } else if (b != batch) {
      throw ShardingTypeError(std::string("[") + name + "] All inputs to " + name +
                              " must have the same batch sharding, but got " +
                              entries_tuple(batch) + " and " + entries_tuple(b) +
                              ". Reshard the inputs to one batch sharding first.");
    }
  }
  if (!have) batch.assign(in[0].shape.size() - 2, PartitionEntry());
  return batch;
}

// A type of `shape` whose batch dimensions carry `batch` and the rest nothing.
ArrayType linalg_type(const Shape& shape, DType dtype, const AbstractMesh& mesh,
                      std::vector<PartitionEntry> batch) {
  batch.resize(shape.size());
  return make_type(shape, dtype, false, mesh, batch);
}

Shape with_matrix(const Shape& in, std::initializer_list<int64_t> tail, size_t drop = 2) {
  Shape s(in.begin(), in.end() - static_cast<std::ptrdiff_t>(drop));
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

void square(const char* name, const ArrayType& t, const std::string& what) {
  int64_t m = t.shape[t.ndim() - 2], n = t.shape[t.ndim() - 1];
  if (m != n)
    throw ValueError(std::string("[") + name + "] " + what +
                     " must be a square matrix. Got shape " + p_ints({m, n}) + " (" + t.str() +
                     "); expected (..., n, n).");
}

std::string flag(bool b) { return b ? "True" : "False"; }

// x with its dimensions `dims` (negative: from the end) unsharded, the rest as they are:
// the AD rules' solves need a's matrix and b's contracting dimension whole, which a
// cotangent or a product laid out by other rules may not have.
Array unsharded_on(const Array& x, std::initializer_list<int> dims) {
  const ArrayType& t = x.type();
  if (t.sharding.mesh().empty()) return x;
  auto e = entries_of(t);
  bool change = false;
  for (int d : dims) {
    auto& entry = e[static_cast<size_t>(d < 0 ? d + t.ndim() : d)];
    change = change || !entry.is_none();
    entry = PartitionEntry();
  }
  if (!change) return x;
  return bind1(
      std::make_shared<Reshard>(
          NamedSharding(t.sharding.mesh(), with_sets_of(e, t.sharding.spec())), std::nullopt),
      {x});
}

// Helpers of the jvp rules (batched over leading dimensions like the primitives).
Array mT(const Array& x) { return swapaxes(x, -1, -2); }
Array mm(const Array& a, const Array& b) { return matmul(a, b); }
Array tri_solve(const Array& a, const Array& b, bool left, bool lower, bool trans, bool unit) {
  return bind1(std::make_shared<TriangularSolve>(left, lower, trans, unit),
               {unsharded_on(a, {-2, -1}), unsharded_on(b, {left ? -2 : -1})});
}
// An (n, n) identity broadcast against x's batch: a mesh-less constant of x's dtype.
Array eye_like(const Array& x, int64_t n) { return eye(n, -1, 0, x.dtype()); }

// Every input and output laid out with output 0's batch entries and unsharded matrix
// dimensions: outputs of other ranks (svd's s, eigh's w, lu's pivots) and a layout the
// Auto pass chose for one output only still get blocks of the same matrices.
Lowering batch_partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out,
                         int out0_matrix_rank) {
  auto e = entries_of(out[0]);
  std::vector<PartitionEntry> batch(e.begin(), e.end() - out0_matrix_rank);
  auto spec = [&](const ArrayType& t) {
    std::vector<PartitionEntry> v = batch;
    v.resize(t.shape.size());
    return spec_of(v);
  };
  Lowering l;
  for (const auto& t : in) l.in.push_back(spec(t));
  for (const auto& t : out) l.out.push_back(spec(t));
  return l;
}

// JAX's expand_dims_batcher: every batch at 0 (unbatched operands broadcast), the same
// primitive (its parameters name only the last two dimensions), outputs batched at 0.
Batched batch_front(const Primitive& p, const std::vector<Array>& args,
                    const std::vector<int>& dims) {
  std::vector<Array> ins;
  for (size_t i = 0; i < args.size(); ++i) ins.push_back(batch_at_front(args[i], dims[i]));
  std::vector<Array> outs = detail::bind(p.shared_from_this(), ins);
  return {outs, std::vector<int>(outs.size(), 0)};
}
}  // namespace

// ---- cholesky ---------------------------------------------------------------------

std::vector<ArrayType> Cholesky::infer(const std::vector<ArrayType>& in) const {
  auto batch = check_linalg("cholesky", in);
  square("cholesky", in[0], "The input to cholesky");
  return {linalg_type(in[0].shape, in[0].dtype, rule_mesh(in), batch)};
}

// lax's _cholesky_jvp_rule (arXiv:1602.07527): L' = L phi(L^-1 A' L^-T), phi taking
// the lower triangle with the diagonal halved.
std::vector<Array> Cholesky::jvp(const std::vector<Array>&, const std::vector<Array>& tangents,
                                 std::vector<Array>& outs) const {
  const Array& L = outs[0];
  const int64_t n = L.shape().back();
  Array tmp = tri_solve(L, tangents[0], false, true, true, false);
  Array inner = tri_solve(L, tmp, true, true, false, false);
  Array half = add(eye_like(L, n), 1.0);
  Array phi = divide(tril(inner), half);
  return {mm(L, phi)};
}

Lowering Cholesky::partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const {
  return batch_partition(in, out, 2);
}

Batched Cholesky::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

// ---- triangular_solve -------------------------------------------------------------

std::vector<ArrayType> TriangularSolve::infer(const std::vector<ArrayType>& in) const {
  if (in.size() != 2)
    throw TypeError("[triangular_solve] triangular_solve takes two operands. Got " +
                    std::to_string(in.size()) + "; expected a and b.");
  check_linalg("triangular_solve", in, true);
  const ArrayType &a = in[0], &b = in[1];
  square("triangular_solve", a, "The first input to triangular_solve");
  const int r = b.ndim();
  int64_t common = left_side_ ? b.shape[r - 2] : b.shape[r - 1];
  if (a.shape.back() != common)
    throw ValueError("[triangular_solve] Incompatible shapes for arguments to triangular_solve: " +
                     p_ints({a.shape[a.ndim() - 2], a.shape.back()}) + " and " +
                     p_ints({b.shape[r - 2], b.shape[r - 1]}) + ". Got " + a.str() + " and " +
                     b.str() + "; expected b's " + (left_side_ ? "rows" : "columns") +
                     " to equal a's size (left_side=" + flag(left_side_) + ").");
  // JAX's _tri_solve_sharding: batch entries equal, the contracting dims unsharded;
  // the result takes b's free dim and a's non-contracting dim.
  std::vector<PartitionEntry> ea = entries_of(a), eb = entries_of(b);
  if (a.sharding.mesh().empty()) ea.assign(a.shape.size(), PartitionEntry());
  if (b.sharding.mesh().empty()) eb.assign(b.shape.size(), PartitionEntry());
  std::vector<PartitionEntry> ba(ea.begin(), ea.end() - 2), bb(eb.begin(), eb.end() - 2);
  if (!a.sharding.mesh().empty() && !b.sharding.mesh().empty() && ba != bb)
    throw ShardingTypeError(
        "[triangular_solve] All inputs to triangular_solve must have the same batch sharding, "
        "but got " +
        entries_tuple(ba) + " and " + entries_tuple(bb) +
        ". Reshard the inputs to one batch sharding first.");
  const PartitionEntry a0 = ea[ea.size() - 2], a1 = ea.back();
  const PartitionEntry b0 = eb[eb.size() - 2], b1 = eb.back();
  if (!(left_side_ ^ transpose_a_ ? a1 : a0).is_none())
    throw ShardingTypeError(
        "[triangular_solve] triangular solve input `a` must be unsharded on the contracting "
        "axis, but got " +
        a.sharding.spec().repr() + " with left_side=" + flag(left_side_) + " and transpose_a=" +
        flag(transpose_a_) + ". Reshard a's contracting dimension to unsharded first.");
  if (!(left_side_ ? b0 : b1).is_none())
    throw ShardingTypeError(
        "[triangular_solve] triangular solve input `b` must be unsharded on the contracting "
        "axis, but got " +
        b.sharding.spec().repr() + " with left_side=" + flag(left_side_) + " and transpose_a=" +
        flag(transpose_a_) + ". Reshard b's contracting dimension to unsharded first.");
  std::vector<PartitionEntry> e = a.sharding.mesh().empty() ? bb : ba;
  if (left_side_) {
    e.push_back(transpose_a_ ? a1 : a0);
    e.push_back(b1);
  } else {
    e.push_back(b0);
    e.push_back(transpose_a_ ? a0 : a1);
  }
  return {make_type(b.shape, b.dtype, false, rule_mesh(in), e)};
}

Lowering TriangularSolve::partition(const std::vector<ArrayType>& in,
                                    const std::vector<ArrayType>& out) const {
  // The kernel needs a whole (its batch block) and b's block; a sharded result row
  // (or column) dimension taken from a is a slice of the whole solve, made after it.
  auto eo = entries_of(out[0]);
  std::vector<PartitionEntry> ka(eo.begin(), eo.end() - 2), kb = ka;
  ka.resize(eo.size());
  if (left_side_) {
    kb.push_back(PartitionEntry());
    kb.push_back(eo.back());
  } else {
    kb.push_back(eo[eo.size() - 2]);
    kb.push_back(PartitionEntry());
  }
  return {{spec_of(ka), spec_of(kb)}, {spec_of(kb)}};
}

std::string TriangularSolve::params() const {
  return "left_side=" + flag(left_side_) + " lower=" + flag(lower_) +
         " transpose_a=" + flag(transpose_a_) +
         " conjugate_a=False unit_diagonal=" + flag(unit_diagonal_);
}

// lax's _triangular_solve_jvp_rule_a plus the linear part in b; a' enters through its
// read triangle only, ordered so that the cheaper of the two products comes first.
std::vector<Array> TriangularSolve::jvp(const std::vector<Array>& primals,
                                        const std::vector<Array>& tangents,
                                        std::vector<Array>& outs) const {
  const Array &a = primals[0], &x = outs[0];
  auto inv = [&](const Array& rhs) {
    return tri_solve(a, rhs, left_side_, lower_, transpose_a_, unit_diagonal_);
  };
  Array from_b = tangents[1].valid() ? inv(tangents[1]) : Array();
  if (!tangents[0].valid()) return {from_b};
  const int k = unit_diagonal_ ? 1 : 0;
  Array g = lower_ ? tril(tangents[0], -k) : triu(tangents[0], k);
  g = neg(g);
  if (transpose_a_) g = mT(g);
  const int64_t m = x.shape()[x.ndim() - 2], n = x.shape().back();
  Array from_a;
  if (left_side_)
    from_a = m > n ? inv(mm(g, x)) : mm(inv(g), x);
  else
    from_a = m < n ? inv(mm(x, g)) : mm(x, inv(g));
  return {ad::add(from_a, from_b)};
}

// lax's _triangular_solve_transpose_rule: the cotangent of b is the solve with op(a)
// transposed; a itself is not a linear input.
std::vector<Array> TriangularSolve::transpose(const std::vector<Array>& cts,
                                              const std::vector<LinearIn>& ins) const {
  if (ins[0].linear())
    throw NotImplementedError(
        "[transpose] triangular_solve is linear in b only. Got a linear input a; expected a "
        "value known before the transpose (a solve's matrix must not depend on the linear "
        "inputs).");
  Array ct = tri_solve(ins[0].value, cts[0], left_side_, lower_, !transpose_a_, unit_diagonal_);
  return {Array(), ad::coerce(ct, ins[1].type, "triangular_solve", "cotangent")};
}

Batched TriangularSolve::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

// ---- lu -----------------------------------------------------------------------------

std::vector<ArrayType> Lu::infer(const std::vector<ArrayType>& in) const {
  auto batch = check_linalg("lu", in);
  const ArrayType& a = in[0];
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape.back();
  AbstractMesh mesh = rule_mesh(in);
  return {linalg_type(a.shape, a.dtype, mesh, batch),
          linalg_type(with_matrix(a.shape, {std::min(m, n)}), DType::Int32, mesh, batch),
          linalg_type(with_matrix(a.shape, {m}), DType::Int32, mesh, batch)};
}

// lax's _lu_jvp_rule (De Hoog, Anderssen and Lukas): with P A' = L' U + L U',
// inv(L) P A' inv(U) = X splits into L' = L tril(X, -1) and U' = triu(X) U.
std::vector<Array> Lu::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                           std::vector<Array>& outs) const {
  const Array &lu = outs[0], &perm = outs[2];
  const Shape& s = lu.shape();
  const int r = lu.ndim();
  const int64_t m = s[r - 2], n = s[r - 1], k = std::min(m, n);
  // Rows of a' in the permutation's order.
  Shape idx_shape = perm.shape();
  idx_shape.push_back(1);
  Array idx = broadcast_to(reshape(perm, idx_shape), s);
  Array x = take_along_axis(tangents[0], idx, r - 2);
  auto block = [&](const Array& v, int64_t rows, int64_t cols) {
    Shape lo(static_cast<size_t>(r), 0), hi = s;
    hi[r - 2] = rows;
    hi[r - 1] = cols;
    return slice(v, lo, hi);
  };
  auto padded = [&](const Array& v, int64_t rows, int64_t cols) {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> cfg(static_cast<size_t>(r), {0, 0, 0});
    cfg[r - 2] = {0, rows, 0};
    cfg[r - 1] = {0, cols, 0};
    return pad(v, 0.0, cfg);
  };
  Array l = add(padded(tril(block(lu, m, k), -1), 0, m - k), eye_like(lu, m));
  // JAX pads eye(n - k) to (n, n) at the bottom right: U's missing rows are identity.
  Array u_eye =
      multiply(eye(n, -1, 0, lu.dtype()),
               astype(greater_equal(broadcasted_iota(DType::Int32, {n, n}, 0), static_cast<int>(k)),
                      lu.dtype()));
  Array u = add(padded(triu(block(lu, k, n)), n - k, 0), u_eye);
  Array la = tri_solve(l, x, true, true, false, true);
  Array lau = tri_solve(u, la, false, false, false, false);
  Array l_dot = mm(l, tril(lau, -1));
  Array u_dot = mm(triu(lau), u);
  // l_dot is (m, m) @ (m, n), u_dot (m, n) @ (n, n): both (m, n), lu's shape.
  return {add(l_dot, u_dot), Array(), Array()};
}

Lowering Lu::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  return batch_partition(in, out, 2);
}

Batched Lu::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

// ---- qr -----------------------------------------------------------------------------

std::vector<ArrayType> Qr::infer(const std::vector<ArrayType>& in) const {
  auto batch = check_linalg("qr", in);
  const ArrayType& a = in[0];
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape.back();
  const int64_t k = full_matrices_ ? m : std::min(m, n);
  AbstractMesh mesh = rule_mesh(in);
  return {linalg_type(with_matrix(a.shape, {m, k}), a.dtype, mesh, batch),
          linalg_type(with_matrix(a.shape, {k, n}), a.dtype, mesh, batch)};
}

std::string Qr::params() const {
  return "full_matrices=" + flag(full_matrices_) + " pivoting=False";
}

// lax's qr_jvp_rule (j-towns.github.io/papers/qr-derivative.pdf): defined for tall or
// square inputs in reduced mode (JAX raises NotImplementedError otherwise).
std::vector<Array> Qr::jvp(const std::vector<Array>&, const std::vector<Array>& tangents,
                           std::vector<Array>& outs) const {
  const Array &q = outs[0], &r = outs[1], &dx = tangents[0];
  const int64_t m = dx.shape()[dx.ndim() - 2], n = dx.shape().back();
  if (m < n || (full_matrices_ && m != n))
    throw NotImplementedError(
        "[qr] Unimplemented case of QR decomposition derivative. Got a " + std::to_string(m) + "x" +
        std::to_string(n) + " input with full_matrices=" + flag(full_matrices_) +
        "; expected m >= n, and m == n with full_matrices (JAX's rule has the same limits). "
        "Differentiate qr of the transpose, or use mode='reduced'.");
  Array dx_rinv = tri_solve(r, dx, false, false, false, false);
  Array qt_dx_rinv = mm(mT(q), dx_rinv);
  Array low = tril(qt_dx_rinv, -1);
  Array d_o = subtract(low, mT(low));
  Array dq = add(mm(q, subtract(d_o, qt_dx_rinv)), dx_rinv);
  Array dr = mm(subtract(qt_dx_rinv, d_o), r);
  return {dq, dr};
}

Lowering Qr::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  return batch_partition(in, out, 2);
}

Batched Qr::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

// ---- eigh ---------------------------------------------------------------------------

std::vector<ArrayType> Eigh::infer(const std::vector<ArrayType>& in) const {
  auto batch = check_linalg("eigh", in);
  const ArrayType& a = in[0];
  const int64_t n = a.shape.back();
  if (a.shape[a.ndim() - 2] != n)
    throw ValueError(
        "[eigh] Argument to symmetric eigendecomposition must have shape [..., n, n], "
        "got shape " +
        p_ints(a.shape) + ". Got " + a.str() + "; expected square matrices.");
  AbstractMesh mesh = rule_mesh(in);
  return {linalg_type(a.shape, a.dtype, mesh, batch),
          linalg_type(with_matrix(a.shape, {n}), a.dtype, mesh, batch)};
}

std::string Eigh::params() const { return "lower=" + flag(lower_) + " sort_eigenvalues=True"; }

// lax's _eigh_jvp_rule: dw = diag(V^T A' V), dV = V (F o V^T A' V) with
// F_ij = 1 / (w_j - w_i) off the diagonal (infinite for repeated eigenvalues, as JAX).
std::vector<Array> Eigh::jvp(const std::vector<Array>&, const std::vector<Array>& tangents,
                             std::vector<Array>& outs) const {
  const Array &v = outs[0], &w = outs[1];
  const int64_t n = w.shape().back();
  Array eye_n = eye_like(w, n);
  Array diff = subtract(expand_dims(w, {-2}), expand_dims(w, {-1}));
  Array f = subtract(integer_pow(add(eye_n, diff), -1), eye_n);
  Array vav = mm(mm(mT(v), tangents[0]), v);
  return {mm(v, multiply(f, vav)), diagonal(vav, 0, -2, -1)};
}

Lowering Eigh::partition(const std::vector<ArrayType>& in,
                         const std::vector<ArrayType>& out) const {
  return batch_partition(in, out, 2);
}

Batched Eigh::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

// ---- svd ----------------------------------------------------------------------------

std::vector<ArrayType> Svd::infer(const std::vector<ArrayType>& in) const {
  auto batch = check_linalg("svd", in);
  const ArrayType& a = in[0];
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape.back(), k = std::min(m, n);
  AbstractMesh mesh = rule_mesh(in);
  std::vector<ArrayType> out{linalg_type(with_matrix(a.shape, {k}), a.dtype, mesh, batch)};
  if (compute_uv_) {
    out.push_back(
        linalg_type(with_matrix(a.shape, {m, full_matrices_ ? m : k}), a.dtype, mesh, batch));
    out.push_back(
        linalg_type(with_matrix(a.shape, {full_matrices_ ? n : k, n}), a.dtype, mesh, batch));
  }
  return out;
}

std::string Svd::params() const {
  return "full_matrices=" + flag(full_matrices_) + " compute_uv=" + flag(compute_uv_);
}

// lax's _svd_jvp_rule: the reduced decomposition's derivative (JAX raises
// NotImplementedError for full u and vt); infinite where singular values repeat.
std::vector<Array> Svd::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                            std::vector<Array>& outs) const {
  if (compute_uv_ && full_matrices_)
    throw NotImplementedError(
        "[svd] Singular value decomposition JVP not implemented for full matrices. Got "
        "full_matrices=True; expected full_matrices=False. Differentiate svd(a, "
        "full_matrices=false).");
  std::vector<Array> r = detail::bind(std::make_shared<Svd>(false, true), {primals[0]});
  const Array &s = r[0], &U = r[1], &Vt = r[2], &dA = tangents[0];
  const int64_t m = dA.shape()[dA.ndim() - 2], n = dA.shape().back(), k = s.shape().back();
  Array Ut = mT(U), V = mT(Vt);
  Array s_dim = expand_dims(s, {-2});
  Array dS = mm(mm(Ut, dA), V);
  Array ds = diagonal(dS, 0, -2, -1);
  if (!compute_uv_) {
    outs = {s};
    return {ds};
  }
  outs = r;
  Array s_diffs = multiply(add(s_dim, mT(s_dim)), subtract(s_dim, mT(s_dim)));
  Array eye_k = eye_like(s, k);
  Array F = subtract(divide(1.0, add(s_diffs, eye_k)), eye_k);
  Array dSS = multiply(s_dim, dS), SdS = multiply(mT(s_dim), dS);
  Array s_zeros = astype(equal(s, 0.0), s.dtype());
  Array s_inv = subtract(divide(1.0, add(s, s_zeros)), s_zeros);
  Array s_inv_mat = multiply(expand_dims(s_inv, {-2}), eye_k);
  Array dUdV_diag = multiply(multiply(subtract(dS, mT(dS)), s_inv_mat), 0.5);
  Array dU = mm(U, add(multiply(F, add(dSS, mT(dSS))), dUdV_diag));
  Array dV = mm(V, multiply(F, add(SdS, mT(SdS))));
  if (m > n) {
    Array dAV = mm(dA, V);
    dU = add(dU, divide(subtract(dAV, mm(U, mm(Ut, dAV))), s_dim));
  }
  if (n > m) {
    Array dAHU = mm(mT(dA), U);
    dV = add(dV, divide(subtract(dAHU, mm(V, mm(Vt, dAHU))), s_dim));
  }
  return {ds, dU, mT(dV)};
}

Lowering Svd::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  return batch_partition(in, out, 1);
}

Batched Svd::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_front(*this, args, dims);
}

}  // namespace tsr::prim
