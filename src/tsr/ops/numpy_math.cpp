// NumPy math front-ends built from existing primitives: triangles and diagonals
// (iota masks + where; diagonals reduce a masked plane), clip, outer, kron,
// isclose/allclose and nan_to_num (as jnp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"

namespace tsr {
using namespace detail;

namespace {

// (col - row) over the [n, m] plane of x's last two dims: the diagonal index of
// each cell, laid out like those dims of x (select_n needs `which` sharded as
// the cases).
Array diag_index(const Array& x, int64_t n, int64_t m) {
  const ArrayType& t = x.type();
  Placement where;
  if (!t.sharding.mesh().empty()) {
    auto e = entries_of(t);
    PartitionSpec spec(std::vector<PartitionEntry>(e.end() - 2, e.end()));
    const NamedSharding& cs = x.sharding();
    where = cs.concrete_mesh() ? NamedSharding(*cs.concrete_mesh(), spec)
                               : NamedSharding(t.sharding.mesh(), spec);
  }
  return subtract(broadcasted_iota(DType::Int32, {n, m}, 1, where),
                  broadcasted_iota(DType::Int32, {n, m}, 0, where));
}

Array zero_of(const Array& x) { return scalar_array(0, x.dtype(), x.type().weak, &x); }

Array triangle(const Array& x, int k, bool upper, const char* op) {
  if (x.ndim() < 2)
    throw ValueError(std::string("[") + op + "] Argument to " + op + " must be at least 2D. Got " +
                     x.type().str() + "; expected rank >= 2 (the last two dims form the matrix).");
  int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  Array d = diag_index(x, n, m);
  Array keep = upper ? greater_equal(d, k) : less_equal(d, k);
  return where(keep, x, zero_of(x));
}

Array isnan_(const Array& x) { return not_equal(x, x); }
Array isinf_(const Array& x) { return equal(abs(x), std::numeric_limits<double>::infinity()); }

double finfo_max(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace

Array triu(const Array& x, int k) { return triangle(x, k, true, "triu"); }
Array tril(const Array& x, int k) { return triangle(x, k, false, "tril"); }

Array diagonal(const Array& x, int offset, int axis1, int axis2) {
  if (x.ndim() < 2)
    throw ValueError("[diagonal] diagonal requires an array of rank >= 2. Got " + x.type().str() +
                     "; expected at least two dims.");
  int a1 = norm_axis(axis1, x.ndim(), "diagonal"), a2 = norm_axis(axis2, x.ndim(), "diagonal");
  if (a1 == a2)
    throw ValueError("[diagonal] axis1 and axis2 cannot be the same. Got " + std::to_string(axis1) +
                     " and " + std::to_string(axis2) + "; expected two different axes.");
  Array y = moveaxis(x, {a1, a2}, {-2, -1});
  int r = y.ndim();
  int64_t n = y.shape()[r - 2], m = y.shape()[r - 1];
  int64_t k = offset;
  int64_t len = std::max<int64_t>(0, k >= 0 ? std::min(n, m - k) : std::min(n + k, m));
  Array masked = where(equal(diag_index(y, n, m), offset), y, zero_of(y));
  // k >= 0: row i holds its diagonal cell; k < 0: column j does.
  int red = k >= 0 ? r - 1 : r - 2;
  Array d = y.dtype() == DType::Bool ? any(masked, red) : sum(masked, red, {.dtype = y.dtype()});
  if (d.shape()[r - 2] == len) return d;
  Shape start(static_cast<size_t>(r - 1), 0), limit = d.shape();
  limit[r - 2] = len;
  return slice(d, start, limit);
}

Array diag(const Array& v, int k) {
  if (v.ndim() == 2) return diagonal(v, k, 0, 1);
  if (v.ndim() != 1)
    throw ValueError("[diag] diag input must be 1d or 2d. Got " + v.type().str() +
                     "; expected a vector (builds a matrix) or a matrix (takes a diagonal).");
  int64_t n = v.shape()[0], ak = std::abs(static_cast<int64_t>(k)), big = n + ak;
  Array w = ak ? pad(v, zero_of(v), {{0, ak, 0}}) : v;
  // k >= 0: row i carries v[i]; k < 0: column j does.
  Array wb = broadcast_in_dim(w, {big, big}, {k >= 0 ? 0 : 1});
  return where(equal(diag_index(wb, big, big), k), wb, zero_of(v));
}

Array trace(const Array& x, int offset, int axis1, int axis2) {
  return sum(diagonal(x, offset, axis1, axis2), -1);
}

Array clip(const Array& x, const std::optional<ArrayLike>& min,
           const std::optional<ArrayLike>& max) {
  Array r = x;
  if (min) r = maximum(*min, r);
  if (max) r = minimum(*max, r);
  return r;
}

Array outer(const Array& a, const Array& b) {
  Array ar = ravel(a), br = ravel(b);
  return multiply(expand_dims(ar, 1), expand_dims(br, 0));
}

Array kron(const Array& a0, const Array& b0) {
  Array a = a0, b = b0;
  int r = std::max(a.ndim(), b.ndim());
  auto lead = [](const Array& x, int rank) {
    std::vector<int> ax(static_cast<size_t>(rank - x.ndim()));
    std::iota(ax.begin(), ax.end(), 0);
    return ax.empty() ? x : expand_dims(x, ax);
  };
  a = lead(a, r);
  b = lead(b, r);
  std::vector<int> odd, even;
  Shape out;
  for (int i = 0; i < r; ++i) {
    odd.push_back(2 * i + 1);
    even.push_back(2 * i);
    out.push_back(a.shape()[i] * b.shape()[i]);
  }
  if (r == 0) return multiply(a, b);
  return reshape(multiply(expand_dims(a, odd), expand_dims(b, even)), out);
}

Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  std::vector<Array> p = promote({a, b}, "isclose");
  const Array &x = p[0], &y = p[1];
  if (!is_inexact(x.dtype())) return equal(x, y);
  Array out = less_equal(abs(subtract(x, y)), add(atol, multiply(rtol, abs(y))));
  Array xi = isinf_(x), yi = isinf_(y);
  // Infinite values are close only to the same infinity.
  out = logical_and(out, logical_not(logical_or(xi, yi)));
  out = logical_or(out, logical_and(logical_and(xi, yi), equal(x, y)));
  Array xn = isnan_(x), yn = isnan_(y);
  out = logical_and(out, logical_not(logical_or(xn, yn)));
  if (equal_nan) out = logical_or(out, logical_and(xn, yn));
  return out;
}

Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan));
}

Array nan_to_num(const Array& x, double nan, std::optional<double> posinf,
                 std::optional<double> neginf) {
  if (!is_floating(x.dtype())) return x;
  DType t = x.dtype();
  double big = finfo_max(t);
  auto c = [&](double v) { return scalar_array(v, t, false, &x); };
  double inf = std::numeric_limits<double>::infinity();
  Array out = where(isnan_(x), c(nan), x);
  out = where(equal(out, inf), c(posinf.value_or(big)), out);
  return where(equal(out, -inf), c(neginf.value_or(-big)), out);
}

}  // namespace tsr
