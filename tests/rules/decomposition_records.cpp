// Records of the decompositions (cholesky, triangular_solve, lu, qr, eigh, svd) and the
// tsr::linalg functions made of them: batch-sharded layouts (the matrix dimensions must
// be unsharded, as JAX), triangular_solve's sharded free and non-contracting dims, and
// the refusals. Inputs are made well conditioned inside each op (x x^T + 4I, tril(x) +
// 4I), so values and finite differences are stable.
#include <limits>

#include "rules/record.h"
#include "tsr/linalg.h"

using namespace tsr;

namespace rules {
namespace {
// Batch-sharded layouts of one (8, n, n) input.
std::vector<std::vector<PartitionSpec>> batch_specs() {
  return {{P()}, {P("x")}, {P("y")}, {P(Axes{"x", "y"})}};
}
Array mT(const Array& x) { return swapaxes(x, -1, -2); }
Array eye_n(const Array& x) { return eye(x.shape().back(), -1, 0, x.dtype()); }
// x plus a fixed irregular matrix: the driver's inputs repeat with period 17, which
// makes singular matrices, repeated eigenvalues and tied pivots (where derivatives do
// not exist and finite differences jump).
Array generic(const Array& x) {
  int64_t n = 1;
  for (int64_t d : x.shape()) n *= d;
  Array k = reshape(astype(broadcasted_iota(int32, {n}, 0), x.dtype()), x.shape());
  return add(x, multiply(sin(add(multiply(k, 1.37), 0.4)), 1.5));
}
// Symmetric positive definite: x x^T + n I.
Array spd(const Array& x0) {
  Array x = generic(x0);
  return add(matmul(x, mT(x)), multiply(eye_n(x), static_cast<double>(x.shape().back())));
}
Array sym(const Array& x0) {
  Array x = generic(x0);
  return add(x, mT(x));
}
// Lower triangular with a dominant diagonal.
Array low(const Array& x) { return add(tril(x), multiply(eye_n(x), 4.0)); }
}  // namespace

std::vector<Record> decomposition_records() {
  std::vector<Record> r;
  // The Auto pass is greedy: it shards x x^T's free dimension over a spare Auto axis
  // (free at the dot), then pays an all-to-all at the transposed add and an all-gather
  // before the decomposition, which needs the matrix whole (docs/design/0020).
  const std::string spd_auto =
      "the Auto pass shards x x^T's rows over a spare axis, which the decomposition must "
      "gather back";
  auto mark_spd = [&] { r.back().auto_comm_why = spd_auto; };
  auto add1 = [&](std::vector<std::string> prims, std::string name, In in,
                  std::function<Array(const Array&)> f,
                  std::vector<std::vector<PartitionSpec>> specs = batch_specs()) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {in},
                 one([f](const std::vector<Array>& a) { return f(a[0]); }),
                 std::move(specs)});
  };
  auto add2 = [&](std::vector<std::string> prims, std::string name, In a, In b,
                  std::function<Array(const Array&, const Array&)> f,
                  std::vector<std::vector<PartitionSpec>> specs) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {a, b},
                 one([f](const std::vector<Array>& v) { return f(v[0], v[1]); }),
                 std::move(specs)});
  };
  auto many = [&](std::vector<std::string> prims, std::string name, In in,
                  std::function<std::vector<Array>(const Array&)> f) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {in},
                 [f](const std::vector<Array>& a) { return f(a[0]); },
                 batch_specs()});
  };

  // cholesky
  add1({"cholesky"}, "cholesky", {{8, 4, 4}},
       [](const Array& x) { return linalg::cholesky(spd(x)); });
  mark_spd();
  add1({"cholesky"}, "cholesky_upper", {{8, 4, 4}},
       [](const Array& x) { return linalg::cholesky(spd(x), true); });
  mark_spd();
  add1({"cholesky"}, "cholesky_unbatched", {{4, 4}},
       [](const Array& x) { return linalg::cholesky(spd(x)); }, {{P()}});
  // Not positive definite: NaN in the lower triangle, zeros above (JAX's output).
  add1({"cholesky"}, "cholesky_not_positive_definite", {{8, 4, 4}}, [](const Array& x) {
    return linalg::cholesky(subtract(spd(x), multiply(eye_n(x), 100.0)));
  });
  mark_spd();
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why = "the factor is NaN: no derivative to check";
  add1({"cholesky"}, "cholesky_matrix_dim_sharded", {{8, 4, 4}},
       [](const Array& x) { return linalg::cholesky(x, false, false); },
       {{P(nullptr, "x")}, {P(nullptr, nullptr, "y")}});
  r.back().refuses = true;

  // triangular_solve: left and right, lower and upper, transposed, unit diagonal; b's
  // free dimension sharded, and a's non-contracting dimension sharded (JAX lets the
  // result take it).
  add2({"triangular_solve"}, "triangular_solve_left_lower", {{8, 4, 4}}, {{8, 4, 6}},
       [](const Array& a, const Array& b) {
         return linalg::triangular_solve(low(a), b, {.left_side = true, .lower = true});
       },
       {{P(), P()},
        {P("x"), P("x")},
        {P(), P(nullptr, nullptr, "y")},
        {P("x"), P("x", nullptr, "y")},
        {P(nullptr, "y"), P()}});
  add2({"triangular_solve"}, "triangular_solve_right_upper_transposed", {{8, 4, 4}}, {{8, 6, 4}},
       [](const Array& a, const Array& b) {
         return linalg::triangular_solve(mT(low(a)), b, {.transpose_a = true});
       },
       {{P(), P()}, {P("x"), P("x")}, {P(), P(nullptr, "y")}, {P(nullptr, "x"), P()}});
  add2({"triangular_solve"}, "triangular_solve_unit_diagonal", {{8, 4, 4}}, {{8, 4, 2}},
       [](const Array& a, const Array& b) {
         return linalg::triangular_solve(tril(a), b,
                                         {.left_side = true, .lower = true, .unit_diagonal = true});
       },
       {{P(), P()}, {P("y"), P("y")}});
  add2({"triangular_solve"}, "solve_triangular_vector", {{8, 4, 4}}, {{8, 4}},
       [](const Array& a, const Array& b) { return linalg::solve_triangular(low(a), b, 1, true); },
       {{P(), P()}, {P("x"), P("x")}});
  add2({"triangular_solve"}, "triangular_solve_contracting_sharded", {{8, 4, 4}}, {{8, 4, 6}},
       [](const Array& a, const Array& b) {
         return linalg::triangular_solve(a, b, {.left_side = true, .lower = true});
       },
       {{P(nullptr, nullptr, "x"), P()}, {P(), P(nullptr, "y")}});
  r.back().refuses = true;
  add2({"triangular_solve"}, "triangular_solve_batch_shardings_differ", {{8, 4, 4}}, {{8, 4, 6}},
       [](const Array& a, const Array& b) {
         return linalg::triangular_solve(a, b, {.left_side = true, .lower = true});
       },
       {{P("x"), P("y")}, {P("x"), P()}});
  r.back().refuses = true;

  // lu: square, tall and wide; the pivots and permutation are int32.
  many({"lu"}, "lu_square", {{8, 4, 4}}, [](const Array& x) {
    auto f = linalg::lu(generic(x));
    return std::vector<Array>{f.lu, f.pivots, f.permutation};
  });
  many({"lu"}, "lu_tall", {{8, 6, 4}}, [](const Array& x) {
    auto f = linalg::lu(generic(x));
    return std::vector<Array>{f.lu, f.pivots, f.permutation};
  });
  many({"lu"}, "lu_wide", {{8, 4, 6}}, [](const Array& x) {
    auto f = linalg::lu(generic(x));
    return std::vector<Array>{f.lu, f.pivots, f.permutation};
  });

  // qr
  many({"qr"}, "qr_tall_reduced", {{8, 6, 4}}, [](const Array& x) {
    auto f = linalg::qr(generic(x));
    return std::vector<Array>{f.Q, f.R};
  });
  many({"qr"}, "qr_square_complete", {{8, 4, 4}}, [](const Array& x) {
    auto f = linalg::qr(generic(x), "complete");
    return std::vector<Array>{f.Q, f.R};
  });
  many({"qr"}, "qr_tall_complete", {{8, 6, 4}}, [](const Array& x) {
    auto f = linalg::qr(generic(x), "complete");
    return std::vector<Array>{f.Q, f.R};
  });
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why = "JAX's qr derivative is not defined for complete mode with m != n";
  many({"qr"}, "qr_wide_r", {{8, 4, 6}},
       [](const Array& x) { return std::vector<Array>{linalg::qr(generic(x), "r").R}; });
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why = "JAX's qr derivative is not defined for wide matrices (m < n)";

  // eigh: ascending eigenvalues; eigenvectors as LAPACK signs them (the same sign on
  // every mesh: the same routine on the same matrix).
  many({"eigh"}, "eigh", {{8, 4, 4}}, [](const Array& x) {
    auto f = linalg::eigh(sym(x));
    return std::vector<Array>{f.eigenvalues, f.eigenvectors};
  });
  many({"eigh"}, "eigh_upper_triangle", {{8, 4, 4}}, [](const Array& x) {
    auto f = linalg::eigh(generic(x), "U", false);
    // Only the upper triangle is read: the result is that of its mirror.
    return std::vector<Array>{f.eigenvalues, matmul(f.eigenvectors, mT(f.eigenvectors))};
  });
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why =
      "the primitive reads one triangle, while its jvp (JAX's) assumes the tangent symmetric; "
      "eigh_symmetrized checks the derivative";
  add1({"eigh"}, "eigvalsh", {{8, 4, 4}}, [](const Array& x) { return linalg::eigvalsh(sym(x)); });

  // svd
  many({"svd"}, "svd_reduced_tall", {{8, 6, 4}}, [](const Array& x) {
    auto f = linalg::svd(generic(x), false);
    return std::vector<Array>{f.U, f.S, f.Vh};
  });
  many({"svd"}, "svd_reduced_wide", {{8, 4, 6}}, [](const Array& x) {
    auto f = linalg::svd(generic(x), false);
    return std::vector<Array>{f.U, f.S, f.Vh};
  });
  many({"svd"}, "svd_full", {{8, 6, 4}}, [](const Array& x) {
    auto f = linalg::svd(generic(x));
    return std::vector<Array>{f.U, f.S, f.Vh};
  });
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why = "JAX's svd derivative is not defined for full_matrices=True";
  add1({"svd"}, "svdvals", {{8, 6, 4}}, [](const Array& x) { return linalg::svdvals(generic(x)); });
  add1({"svd"}, "svd_matrix_dim_sharded", {{8, 4, 4}},
       [](const Array& x) { return linalg::svdvals(x); },
       {{P(nullptr, "x")}, {P(nullptr, nullptr, "y")}});
  r.back().refuses = true;

  // Functions made of the decompositions.
  add2({"lu", "triangular_solve"}, "solve", {{8, 4, 4}}, {{8, 4, 3}},
       [](const Array& a, const Array& b) { return linalg::solve(spd(a), b); },
       {{P(), P()}, {P("x"), P("x")}, {P("y"), P("y")}});
  mark_spd();
  add2({"lu", "triangular_solve"}, "solve_vector_broadcast", {{8, 4, 4}}, {{4}},
       [](const Array& a, const Array& b) { return linalg::solve(spd(a), b); },
       {{P(), P()}, {P("x"), P()}});
  mark_spd();
  add1({"lu", "triangular_solve"}, "inv", {{8, 4, 4}},
       [](const Array& x) { return linalg::inv(spd(x)); });
  mark_spd();
  add1({"lu"}, "det_5x5", {{8, 5, 5}}, [](const Array& x) { return linalg::det(generic(x)); });
  add1({"mul"}, "det_3x3", {{8, 3, 3}}, [](const Array& x) { return linalg::det(generic(x)); });
  add1({"lu"}, "slogdet", {{8, 5, 5}}, [](const Array& x) {
    auto s = linalg::slogdet(generic(x));
    return multiply(s.sign, s.logabsdet);
  });
  r.push_back({{"svd"},
               "lstsq",
               {{{6, 4}}, {{6, 3}}},
               [](const std::vector<Array>& a) {
                 auto s = linalg::lstsq(generic(a[0]), a[1]);
                 return std::vector<Array>{s.x, s.residuals, s.rank, s.s};
               },
               {{P(), P()}}});
  add1({"svd"}, "pinv", {{8, 6, 4}}, [](const Array& x) { return linalg::pinv(generic(x)); });
  add1({"svd"}, "norm_2", {{8, 6, 4}}, [](const Array& x) {
    return linalg::norm(generic(x), 2, std::vector<int>{-2, -1});
  });
  add1({"svd"}, "norm_nuc_keepdims", {{8, 6, 4}}, [](const Array& x) {
    return linalg::norm(generic(x), "nuc", std::vector<int>{1, 2}, true);
  });
  add1({"reduce_max"}, "norm_inf_and_1", {{8, 6, 4}}, [](const Array& x) {
    return add(linalg::norm(x, std::numeric_limits<double>::infinity(), std::vector<int>{1, 2}),
               linalg::norm(x, 1, std::vector<int>{1, 2}));
  });
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why = "max of sums of |x|: kinks where rows tie";
  add1({"reduce_sum"}, "norm_vector_3", {{8, 6}},
       [](const Array& x) { return linalg::norm(x, 3, std::vector<int>{1}); });
  add1({"svd"}, "matrix_rank", {{8, 6, 4}},
       [](const Array& x) { return linalg::matrix_rank(generic(x)); });
  add1({"svd"}, "cond", {{8, 4, 4}}, [](const Array& x) { return linalg::cond(generic(x)); });
  add1({"lu", "triangular_solve"}, "cond_fro", {{8, 4, 4}},
       [](const Array& x) { return linalg::cond(spd(x), "fro"); });
  mark_spd();
  r.push_back({{"dot_general"},
               "multi_dot",
               {{{4}}, {{4, 6}}, {{6, 3}}, {{3}}},
               [](const std::vector<Array>& a) { return std::vector<Array>{linalg::multi_dot(a)}; },
               {{P(), P(), P(), P()}, {P(), P("x"), P(nullptr, "x"), P()}}});
  add2({"cholesky", "triangular_solve"}, "cho_solve", {{8, 4, 4}}, {{8, 4, 3}},
       [](const Array& a, const Array& b) {
         return linalg::cho_solve(linalg::cho_factor(spd(a), true), b);
       },
       {{P(), P()}, {P("x"), P("x")}});
  mark_spd();
  add2({"lu", "triangular_solve", "sort"}, "lu_solve_trans", {{8, 4, 4}}, {{8, 4, 2}},
       [](const Array& a, const Array& b) {
         return linalg::lu_solve(linalg::lu_factor(spd(a)), b, 1);
       },
       {{P(), P()}, {P("y"), P("y")}});
  mark_spd();
  add1({"dot_general"}, "matrix_power_5", {{8, 4, 4}},
       [](const Array& x) { return linalg::matrix_power(multiply(x, 0.5), 5); });
  add1({"lu", "triangular_solve"}, "matrix_power_negative", {{8, 4, 4}},
       [](const Array& x) { return linalg::matrix_power(spd(x), -2); });
  mark_spd();
  return r;
}

static const RecordSet kSet(decomposition_records);

}  // namespace rules
