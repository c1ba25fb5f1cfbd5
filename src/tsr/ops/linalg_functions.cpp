// tsr::linalg: jnp.linalg's functions over the decomposition primitives
// (prims/decompositions.h). Composites follow jax/_src/numpy/linalg.py, so their
// derivatives are those of the primitives they are made of.
#include "tsr/linalg.h"

#include <cmath>
#include <functional>
#include <limits>

#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/ops.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/decompositions.h"

namespace tsr::linalg {
using namespace tsr::detail;

namespace {

// jnp's promote_dtypes_inexact: integers and bool become float32.
Array inexact(const Array& x) { return is_floating(x.dtype()) ? x : astype(x, float32); }

Array mT(const Array& x) { return swapaxes(x, -1, -2); }

void need_matrix(const char* op, const Array& a, bool square) {
  if (a.ndim() < 2)
    throw ValueError(std::string("[") + op + "] " + op + " needs an array of matrices. Got " +
                     a.type().str() + "; expected rank >= 2 (..., m, n).");
  if (square && a.shape()[a.ndim() - 2] != a.shape().back())
    throw ValueError(std::string("[") + op + "] " + op + " needs square matrices. Got " +
                     a.type().str() + "; expected (..., n, n).");
}

Array symmetrize(const Array& a) { return divide(add(a, mT(a)), 2.0); }

Shape batch_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

// NumPy broadcasting of two batch shapes.
Shape broadcast_batch(const char* op, const Shape& x, const Shape& y) {
  const size_t r = std::max(x.size(), y.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t a = i + x.size() >= r ? x[i + x.size() - r] : 1;
    int64_t b = i + y.size() >= r ? y[i + y.size() - r] : 1;
    if (a != b && a != 1 && b != 1)
      throw ValueError(std::string("[") + op + "] batch dimensions do not broadcast. Got " +
                       shape_str(x) + " and " + shape_str(y) +
                       "; expected equal sizes or 1. Broadcast the inputs first.");
    out[i] = a == 1 ? b : a;
  }
  return out;
}

Shape cat(Shape a, std::initializer_list<int64_t> tail) {
  a.insert(a.end(), tail.begin(), tail.end());
  return a;
}

// pivots != arange(k), counted: the parity of the row exchanges.
Array swaps(const Array& pivots) {
  const int64_t k = pivots.shape().back();
  Array ar = broadcasted_iota(DType::Int32, {k}, 0);
  return sum(astype(not_equal(pivots, ar), DType::Int32), -1);
}

Array det_2x2(const Array& a) {
  auto e = [&](int i, int j) {
    return squeeze(slice(a, cat(Shape(a.ndim() - 2, 0), {i, j}), cat(batch_of(a), {i + 1, j + 1})),
                   {-2, -1});
  };
  return subtract(multiply(e(0, 0), e(1, 1)), multiply(e(0, 1), e(1, 0)));
}

Array det_3x3(const Array& a) {
  auto e = [&](int i, int j) {
    return squeeze(slice(a, cat(Shape(a.ndim() - 2, 0), {i, j}), cat(batch_of(a), {i + 1, j + 1})),
                   {-2, -1});
  };
  Array t0 = multiply(e(0, 0), subtract(multiply(e(1, 1), e(2, 2)), multiply(e(1, 2), e(2, 1))));
  Array t1 = multiply(e(0, 1), subtract(multiply(e(1, 0), e(2, 2)), multiply(e(1, 2), e(2, 0))));
  Array t2 = multiply(e(0, 2), subtract(multiply(e(1, 0), e(2, 1)), multiply(e(1, 1), e(2, 0))));
  return add(subtract(t0, t1), t2);
}

double eps_of(DType t) {
  return t == DType::Float64 ? std::numeric_limits<double>::epsilon()
                             : std::numeric_limits<float>::epsilon();
}

}  // namespace

Array triangular_solve(const Array& a0, const Array& b0, const TriangularSolveOptions& o) {
  Array a = a0, b = b0;
  // lax.linalg.triangular_solve: b with one dimension less is a vector per matrix.
  const bool singleton = b.ndim() == a.ndim() - 1;
  if (singleton) b = expand_dims(b, o.left_side ? -1 : -2);
  auto p =
      std::make_shared<prim::TriangularSolve>(o.left_side, o.lower, o.transpose_a, o.unit_diagonal);
  Array x = bind1(p, {a, b});
  return singleton ? squeeze(x, o.left_side ? -1 : -2) : x;
}

Array solve_triangular(const Array& a0, const Array& b0, int trans, bool lower,
                       bool unit_diagonal) {
  if (trans != 0 && trans != 1)
    throw ValueError("[solve_triangular] Invalid 'trans' value " + std::to_string(trans) +
                     ". Got " + std::to_string(trans) +
                     "; expected 0 (a) or 1 (a^T); real matrices have no 2 (conjugate "
                     "transpose) distinct from 1.");
  Array a = inexact(a0), b = inexact(b0);
  need_matrix("solve_triangular", a, true);
  const bool vector = b.ndim() == a.ndim() - 1;
  if (vector) b = expand_dims(b, -1);
  Array x = triangular_solve(a, b, {true, lower, trans == 1, unit_diagonal});
  return vector ? squeeze(x, -1) : x;
}

Array cholesky(const Array& a0, bool upper, bool symmetrize_input) {
  Array a = inexact(a0);
  need_matrix("cholesky", a, false);
  if (symmetrize_input && a.shape()[a.ndim() - 2] == a.shape().back()) a = symmetrize(a);
  Array l = bind1(std::make_shared<prim::Cholesky>(), {a});
  return upper ? mT(l) : l;
}

LuResult lu(const Array& a) {
  std::vector<Array> r = detail::bind(std::make_shared<prim::Lu>(), {a});
  return {r[0], r[1], r[2]};
}

QrResult qr(const Array& a0, const std::string& mode) {
  if (mode != "reduced" && mode != "complete" && mode != "r")
    throw ValueError("[qr] Unsupported QR decomposition mode '" + mode + "'. Got '" + mode +
                     "'; expected 'reduced', 'complete' or 'r'.");
  Array a = inexact(a0);
  std::vector<Array> r = detail::bind(std::make_shared<prim::Qr>(mode == "complete"), {a});
  if (mode == "r") return {Array(), r[1]};
  return {r[0], r[1]};
}

EighResult eigh(const Array& a0, const std::string& UPLO, bool symmetrize_input) {
  if (UPLO != "L" && UPLO != "U")
    throw ValueError("[eigh] UPLO must be one of None, 'L', or 'U', got " + UPLO + ". Got '" +
                     UPLO + "'; expected 'L' or 'U'.");
  Array a = inexact(a0);
  need_matrix("eigh", a, false);
  if (symmetrize_input && a.shape()[a.ndim() - 2] == a.shape().back()) a = symmetrize(a);
  std::vector<Array> r = detail::bind(std::make_shared<prim::Eigh>(UPLO == "L"), {a});
  return {r[1], r[0]};
}

Array eigvalsh(const Array& a, const std::string& UPLO) { return eigh(a, UPLO).eigenvalues; }

SvdResult svd(const Array& a0, bool full_matrices) {
  Array a = inexact(a0);
  std::vector<Array> r = detail::bind(std::make_shared<prim::Svd>(full_matrices, true), {a});
  return {r[1], r[0], r[2]};
}

Array svdvals(const Array& a0) {
  return bind1(std::make_shared<prim::Svd>(false, false), {inexact(a0)});
}

Array solve(const Array& a0, const Array& b0) {
  Array a = inexact(a0), b = inexact(b0);
  need_matrix("solve", a, true);
  std::vector<Array> v = promote({a, b}, "solve");
  a = v[0];
  b = v[1];
  const int64_t n = a.shape().back();
  // JAX >= 0.5: a 1-D b is one vector for every matrix; otherwise b is (..., n, k).
  const bool vector = b.ndim() == 1;
  if (vector) b = expand_dims(b, -1);
  if (b.ndim() < 2 || b.shape()[b.ndim() - 2] != n)
    throw ValueError("[solve] Invalid shapes for solve: " + shape_str(a.shape()) + ", " +
                     shape_str(b0.shape()) + ". Got b " + b0.type().str() + "; expected (" +
                     std::to_string(n) + ",) or (..., " + std::to_string(n) +
                     ", k). For a batch of vectors use solve(a, b[..., None]) and squeeze "
                     "the last axis.");
  Shape batch = broadcast_batch("solve", batch_of(a), batch_of(b));
  if (batch_of(a) != batch) a = broadcast_to(a, cat(batch, {n, n}));
  if (batch_of(b) != batch) b = broadcast_to(b, cat(batch, {n, b.shape().back()}));
  LuResult f = lu(a);
  // Rows of b in the permutation's order, then L y = P b and U x = y.
  Array idx = broadcast_to(expand_dims(f.permutation, -1), b.shape());
  Array pb = take_along_axis(b, idx, b.ndim() - 2);
  Array y = triangular_solve(f.lu, pb, {true, true, false, true});
  Array x = triangular_solve(f.lu, y, {true, false, false, false});
  return vector ? squeeze(x, -1) : x;
}

Array inv(const Array& a0) {
  Array a = inexact(a0);
  need_matrix("inv", a, true);
  const int64_t n = a.shape().back();
  return solve(a, broadcast_to(eye(n, -1, 0, a.dtype()), a.shape()));
}

Array det(const Array& a0) {
  Array a = inexact(a0);
  need_matrix("det", a, true);
  const int64_t n = a.shape().back();
  if (n == 2) return det_2x2(a);
  if (n == 3) return det_3x3(a);
  LuResult f = lu(a);
  Array d = prod(diagonal(f.lu, 0, -2, -1), -1);
  Array odd = astype(rem(swaps(f.pivots), 2), a.dtype());
  return multiply(d, subtract(1.0, multiply(odd, 2.0)));
}

SlogdetResult slogdet(const Array& a0) {
  Array a = inexact(a0);
  need_matrix("slogdet", a, true);
  LuResult f = lu(a);
  Array diag = diagonal(f.lu, 0, -2, -1);
  Array is_zero = any(equal(diag, 0.0), -1);
  Array parity = add(swaps(f.pivots), sum(astype(less(diag, 0.0), DType::Int32), -1));
  Array sign = astype(subtract(1, multiply(rem(parity, 2), 2)), a.dtype());
  sign = where(is_zero, zeros_like(sign), sign);
  Array logdet = sum(log(abs(diag)), -1);
  logdet = where(is_zero, full_like(logdet, -std::numeric_limits<double>::infinity()), logdet);
  return {sign, logdet};
}

LstsqResult lstsq(const Array& a0, const Array& b0, std::optional<double> rcond) {
  std::vector<Array> v = promote({inexact(a0), inexact(b0)}, "lstsq");
  Array a = v[0], b = v[1];
  if (a.ndim() != 2)
    throw TypeError("[lstsq] " + std::to_string(a.ndim()) +
                    "-dimensional array given. Array must be two-dimensional. Got " +
                    a.type().str() + "; expected (m, n).");
  const bool vector = b.ndim() == 1;
  if (vector) b = expand_dims(b, -1);
  if (b.ndim() != 2)
    throw TypeError("[lstsq] " + std::to_string(b0.ndim()) +
                    "-dimensional array given. Array must be one or two-dimensional. Got " +
                    b0.type().str() + "; expected (m,) or (m, k).");
  if (a.shape()[0] != b.shape()[0])
    throw ValueError("[lstsq] Leading dimensions of input arrays must match. Got " +
                     a.type().str() + " and " + b0.type().str() + "; expected the same m.");
  const int64_t m = a.shape()[0], n = a.shape()[1];
  const double rc = rcond ? (*rcond < 0 ? eps_of(a.dtype()) : *rcond)
                          : eps_of(a.dtype()) * static_cast<double>(std::max(m, n));
  Array x, s, rank;
  if (m == 0 || n == 0) {
    s = zeros({0}, a.dtype());
    rank = zeros({}, DType::Int32);
    x = zeros({n, b.shape()[1]}, a.dtype());
  } else {
    SvdResult d = svd(a, false);
    s = d.S;
    Array s0 = slice(s, {0}, {1});
    Array mask = greater_equal(s, multiply(s0, rc));
    rank = sum(astype(mask, DType::Int32));
    Array safe = where(mask, s, 1.0);
    Array s_inv = expand_dims(where(mask, divide(1.0, safe), 0.0), -1);
    x = matmul(mT(d.Vh), multiply(s_inv, matmul(mT(d.U), b)));
  }
  Array r = subtract(b, matmul(a, x));
  Array resid = sum(multiply(r, r), 0);
  if (vector) x = ravel(x);
  return {x, resid, rank, s};
}

Array pinv(const Array& a0, std::optional<double> rtol) {
  Array a = inexact(a0);
  need_matrix("pinv", a, false);
  const int64_t m = a.shape()[a.ndim() - 2], n = a.shape().back();
  if (m == 0 || n == 0) return zeros(cat(batch_of(a), {n, m}), a.dtype());
  const double rt = rtol ? *rtol : 10.0 * static_cast<double>(std::max(m, n)) * eps_of(a.dtype());
  SvdResult d = svd(a, false);
  Shape lo(static_cast<size_t>(d.S.ndim()), 0), hi = d.S.shape();
  hi.back() = 1;
  Array cutoff = multiply(slice(d.S, lo, hi), rt);
  Array s = where(greater(d.S, cutoff), d.S, std::numeric_limits<double>::infinity());
  return matmul(mT(d.Vh), divide(mT(d.U), expand_dims(s, -1)));
}

Array norm(const Array& x0, const NormOrd& ord, std::optional<std::vector<int>> axis,
           bool keepdims) {
  Array x = inexact(x0);
  const bool unset = !ord.number() && ord.name().empty();
  const ReduceOptions keep{keepdims};
  if (!axis) {
    if (unset) return sqrt(sum(multiply(x, x), {}, keep));
    if (x.ndim() != 1 && x.ndim() != 2)
      throw ValueError("[norm] Improper number of axes for norm: " + std::to_string(x.ndim()) +
                       ". Got " + x.type().str() +
                       "; expected a vector or a matrix when ord is given without axis. "
                       "Pass axis.");
    std::vector<int> all;
    for (int i = 0; i < x.ndim(); ++i) all.push_back(i);
    axis = all;
  }
  std::vector<int> ax = *axis;
  for (int& a : ax) a = a < 0 ? a + x.ndim() : a;
  if (ax.size() == 1) {
    const int a = ax[0];
    if (!ord.name().empty())
      throw ValueError("[norm] Invalid order '" + ord.name() + "' for vector norm. Got '" +
                       ord.name() + "'; expected a number (inf, -inf, 0, 1, 2, p).");
    if (unset) return sqrt(sum(multiply(x, x), a, keep));
    const double p = *ord.number();
    if (std::isinf(p)) return p > 0 ? max(abs(x), a, keep) : min(abs(x), a, keep);
    if (p == 0) return sum(astype(not_equal(x, 0.0), x.dtype()), a, keep);
    if (p == 1) return sum(abs(x), a, keep);
    if (p == 2) return sqrt(sum(multiply(x, x), a, keep));
    return power(sum(power(abs(x), p), a, keep), 1.0 / p);
  }
  if (ax.size() != 2 || ax[0] == ax[1])
    throw ValueError("[norm] Improper number of axes for norm: " + std::to_string(ax.size()) +
                     ". Got " + std::to_string(ax.size()) +
                     " axes; expected one (vector norm) or two distinct ones (matrix norm).");
  const int row = ax[0], col = ax[1];
  auto restore = [&](Array r) {
    if (!keepdims) return r;
    std::vector<int> pos{std::min(row, col), std::max(row, col)};
    return expand_dims(r, pos);
  };
  const std::string name = ord.name();
  if (unset || name == "fro") return sqrt(sum(multiply(x, x), {row, col}, keep));
  if (name == "nuc" || (ord.number() && std::fabs(*ord.number()) == 2)) {
    Array s = svdvals(moveaxis(x, {row, col}, {-2, -1}));
    Array r = name == "nuc" ? sum(s, -1) : (*ord.number() > 0 ? max(s, -1) : min(s, -1));
    return restore(r);
  }
  if (!name.empty())
    throw ValueError("[norm] Invalid order '" + name + "' for matrix norm. Got '" + name +
                     "'; expected 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2.");
  const double p = *ord.number();
  // 1 / -1: the largest / smallest column sum; inf / -inf: the same over row sums.
  if (p == 1 || p == -1 || std::isinf(p)) {
    const int summed = std::isinf(p) ? col : row, kept = std::isinf(p) ? row : col;
    Array sums = sum(abs(x), summed, ReduceOptions{true});
    Array r = p > 0 ? max(sums, kept, ReduceOptions{true}) : min(sums, kept, ReduceOptions{true});
    return keepdims ? r : squeeze(r, {row, col});
  }
  throw ValueError("[norm] Invalid order " + std::to_string(p) + " for matrix norm. Got ord=" +
                   std::to_string(p) + "; expected 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2.");
}

Array matrix_rank(const Array& m0, std::optional<double> rtol) {
  Array m = inexact(m0);
  if (m.ndim() < 2) return astype(any(not_equal(m, 0.0)), DType::Int32);
  Array s = svdvals(m);
  const int64_t big = std::max(m.shape()[m.ndim() - 2], m.shape().back());
  const double r = rtol ? *rtol : static_cast<double>(big) * eps_of(m.dtype());
  Array cut = multiply(max(s, -1, ReduceOptions{true}), r);
  return sum(astype(greater(s, cut), DType::Int32), -1);
}

Array cond(const Array& x0, const NormOrd& p) {
  Array x = inexact(x0);
  if (x.ndim() < 2)
    throw ValueError(
        "[cond] jnp.linalg.cond: input array must have at least 2 dimensions, "
        "got " +
        x.type().str() + ". Got rank " + std::to_string(x.ndim()) +
        "; expected matrices (..., m, n).");
  const bool two = p.name().empty() && (!p.number() || std::fabs(*p.number()) == 2);
  Array r;
  if (two) {
    Array s = svdvals(x);
    const int64_t k = s.shape().back();
    Shape lo(static_cast<size_t>(s.ndim()), 0), hi = s.shape();
    Shape lo_last = lo, hi_first = hi;
    hi_first.back() = 1;
    lo_last.back() = k - 1;
    Array first = squeeze(slice(s, lo, hi_first), -1), last = squeeze(slice(s, lo_last, hi), -1);
    r = p.number() && *p.number() < 0 ? divide(last, first) : divide(first, last);
  } else {
    if (x.shape()[x.ndim() - 2] != x.shape().back())
      throw ValueError("[cond] cond(x, p) requires x to be square, got " + shape_str(x.shape()) +
                       ". Got " + x.type().str() + "; expected (..., n, n) for this p.");
    std::vector<int> ax{-2, -1};
    r = multiply(norm(x, p, ax), norm(inv(x), p, ax));
  }
  // NaN from a singular matrix (not from NaN input) is inf, as JAX.
  Array x_nan = any(not_equal(x, x), {x.ndim() - 2, x.ndim() - 1});
  return where(logical_and(not_equal(r, r), logical_not(x_nan)),
               std::numeric_limits<double>::infinity(), r);
}

Array multi_dot(const std::vector<Array>& arrays) {
  const size_t n = arrays.size();
  if (n < 2)
    throw ValueError("[multi_dot] multi_dot requires at least two arrays. Got " +
                     std::to_string(n) + "; expected two or more (use matmul for two).");
  std::vector<Array> a = arrays;
  const bool first_vec = a.front().ndim() == 1, last_vec = a.back().ndim() == 1;
  if (first_vec) a.front() = expand_dims(a.front(), 0);
  if (last_vec) a.back() = expand_dims(a.back(), -1);
  for (size_t i = 0; i < n; ++i)
    if (a[i].ndim() != 2)
      throw ValueError(
          "[multi_dot] multi_dot: arrays must be 2-D (the first and last may be "
          "1-D). Got " +
          arrays[i].type().str() + " at position " + std::to_string(i) + "; expected a matrix.");
  // The classic matrix-chain order: cost[i][j] of the product a[i..j].
  std::vector<int64_t> dims{a[0].shape()[0]};
  for (const auto& m : a) dims.push_back(m.shape()[1]);
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        int64_t c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1];
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = k;
        }
      }
    }
  std::function<Array(size_t, size_t)> chain = [&](size_t i, size_t j) -> Array {
    if (i == j) return a[i];
    return matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j));
  };
  Array r = chain(0, n - 1);
  if (first_vec) r = squeeze(r, 0);
  if (last_vec) r = squeeze(r, -1);
  return r;
}

ChoFactor cho_factor(const Array& a, bool lower) { return {cholesky(a, !lower), lower}; }

Array cho_solve(const ChoFactor& f, const Array& b0) {
  Array b = inexact(b0);
  const bool vector = b.ndim() == f.c.ndim() - 1;
  if (vector) b = expand_dims(b, -1);
  // a = L L^T: L y = b, L^T x = y (with U = L^T: U^T y = b, U x = y).
  Array y = triangular_solve(f.c, b, {true, f.lower, !f.lower, false});
  Array x = triangular_solve(f.c, y, {true, f.lower, f.lower, false});
  return vector ? squeeze(x, -1) : x;
}

LuFactor lu_factor(const Array& a) {
  LuResult r = lu(inexact(a));
  return {r.lu, r.pivots, r.permutation};
}

Array lu_solve(const LuFactor& f, const Array& b0, int trans) {
  if (trans != 0 && trans != 1)
    throw ValueError("[lu_solve] 'trans' value must be 0 or 1 for real matrices, got " +
                     std::to_string(trans) + ". Got " + std::to_string(trans) +
                     "; expected 0 (a x = b) or 1 (a^T x = b).");
  Array b = inexact(b0);
  const bool vector = b.ndim() == f.lu.ndim() - 1;
  if (vector) b = expand_dims(b, -1);
  auto rows = [&](const Array& v, const Array& idx) {
    return take_along_axis(v, broadcast_to(expand_dims(idx, -1), v.shape()), v.ndim() - 2);
  };
  Array x;
  if (trans == 0) {
    // P a = L U: L y = P b, U x = y.
    Array y = triangular_solve(f.lu, rows(b, f.permutation), {true, true, false, true});
    x = triangular_solve(f.lu, y, {true, false, false, false});
  } else {
    // a^T = U^T L^T P: U^T y = b, L^T z = y, x = P^T z.
    Array y = triangular_solve(f.lu, b, {true, false, true, false});
    Array z = triangular_solve(f.lu, y, {true, true, true, true});
    x = rows(z, argsort(f.permutation, -1));
  }
  return vector ? squeeze(x, -1) : x;
}

Array matrix_power(const Array& a0, int n) {
  Array a = a0;
  need_matrix("matrix_power", a, true);
  if (n == 0) return broadcast_to(eye(a.shape().back(), -1, 0, a.dtype()), a.shape());
  if (n < 0) {
    a = inv(a);
    n = -n;
  }
  // Repeated squaring: the result collects the powers of two in n.
  Array result, z = a;
  bool first = true;
  while (n > 0) {
    if (n & 1) {
      result = first ? z : matmul(result, z);
      first = false;
    }
    n >>= 1;
    if (n > 0) z = matmul(z, z);
  }
  return result;
}

}  // namespace tsr::linalg
