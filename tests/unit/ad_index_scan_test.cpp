// associative_scan against sequential loops, and the autodiff rules of the scan,
// scatter and sort families at the points where they decide something: ties
// (cummax/cummin as JAX's associative_scan tree splits them, scatter_max as JAX's
// _scatter_extremal_jvp splits them), losing scatter updates, scatter_mul with
// duplicates and zeros, and permutations. Expected numbers are derived by hand from
// JAX's algorithms (jax/_src/lax/control_flow/loops.py, jax/_src/lax/slicing.py);
// each test says how.
#include <gtest/gtest.h>

#include <cmath>

#include "support/check_grads.h"
#include "tsr/ad_core.h"
#include "tsr/tsr.h"

using namespace tsr;
using detail::FlatFn;

namespace {

std::vector<double> vec(const Array& a) { return a.to_vector<double>(); }

void expect_near(const std::vector<double>& want, const std::vector<double>& got, double tol,
                 const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(want[i], got[i], tol) << what << " element " << i;
}

// Deterministic values in [-2, 2).
std::vector<double> values(size_t n, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<double>((i * 7 + static_cast<size_t>(salt) * 5 + 3) % 16) * 0.25 - 2.0;
  return v;
}

// The tangent of f's output 0 along the unit tangent e_j of input `which` (others zero).
std::vector<double> jvp_column(const FlatFn& f, const std::vector<Array>& x, size_t which,
                               size_t j) {
  std::vector<Array> t(x.size());
  std::vector<double> e(static_cast<size_t>(x[which].size()), 0.0);
  e[j] = 1.0;
  t[which] = array<double>(e, x[which].shape());
  return vec(detail::jvp_flat(f, x, t).second[0]);
}

// ---- associative_scan vs a sequential loop ----------------------------------------

// Sequential inclusive scan of rows (axis 0) of a [n, m] row-major matrix.
std::vector<double> seq_scan(const std::vector<double>& x, size_t n, size_t m, bool reverse,
                             double (*op)(double, double)) {
  std::vector<double> r = x;
  for (size_t c = 0; c < m; ++c) {
    if (!reverse) {
      for (size_t i = 1; i < n; ++i) r[i * m + c] = op(r[(i - 1) * m + c], x[i * m + c]);
    } else {
      for (size_t i = n - 1; i-- > 0;) r[i * m + c] = op(r[(i + 1) * m + c], x[i * m + c]);
    }
  }
  return r;
}

TEST(AssociativeScan, SumAndMaxMatchASequentialLoop) {
  for (size_t n : {1, 2, 3, 4, 5, 8, 13}) {
    for (bool reverse : {false, true}) {
      std::vector<double> v = values(n * 3, static_cast<int>(n));
      Array x = array<double>(v, {static_cast<int64_t>(n), 3});
      std::string what = "n=" + std::to_string(n) + (reverse ? " reverse" : "");
      Array s = associative_scan([](const Array& a, const Array& b) { return a + b; }, x, reverse);
      expect_near(seq_scan(v, n, 3, reverse, [](double a, double b) { return a + b; }), vec(s),
                  1e-12, "sum " + what);
      Array m = associative_scan([](const Array& a, const Array& b) { return maximum(a, b); }, x,
                                 reverse);
      expect_near(seq_scan(v, n, 3, reverse, [](double a, double b) { return std::max(a, b); }),
                  vec(m), 0, "max " + what);
      // The same scan along axis 1 of the transpose.
      Array st = associative_scan([](const Array& a, const Array& b) { return a + b; },
                                  transpose(x), reverse, -1);
      expect_near(vec(s), vec(transpose(st)), 1e-12, "sum along axis 1 " + what);
    }
  }
}

TEST(AssociativeScan, NonCommutativeCombineKeepsTheOrder) {
  // Elements are affine maps z -> a z + b; combine(f, g) = g after f, which does not
  // commute, so a scan that swapped operands anywhere would differ from the loop.
  ScanFn compose = [](const std::vector<Array>& f, const std::vector<Array>& g) {
    return std::vector<Array>{f[0] * g[0], f[1] * g[0] + g[1]};
  };
  for (size_t n : {1, 2, 5, 6, 11}) {
    for (bool reverse : {false, true}) {
      std::vector<double> a = values(n, 1), b = values(n, 2);
      for (auto& v : a) v = 0.5 + 0.25 * v;  // keep the products tame
      std::vector<Array> r = associative_scan(compose,
                                              {array<double>(a, {static_cast<int64_t>(n)}),
                                               array<double>(b, {static_cast<int64_t>(n)})},
                                              reverse);
      // Sequential: forward R_k = e_k after R_{k-1}; reverse (JAX's documented
      // [..., f(f(z, y), x), f(z, y), z]) R_k = e_k after R_{k+1}.
      std::vector<double> ra = a, rb = b;
      if (!reverse) {
        for (size_t k = 1; k < n; ++k) {
          ra[k] = ra[k - 1] * a[k];
          rb[k] = rb[k - 1] * a[k] + b[k];
        }
      } else {
        for (size_t k = n - 1; k-- > 0;) {
          ra[k] = ra[k + 1] * a[k];
          rb[k] = rb[k + 1] * a[k] + b[k];
        }
      }
      std::string what = "n=" + std::to_string(n) + (reverse ? " reverse" : "");
      expect_near(ra, vec(r[0]), 1e-12, "a " + what);
      expect_near(rb, vec(r[1]), 1e-12, "b " + what);
    }
  }
}

TEST(AssociativeScan, OneRowShardedOverASizeOneAxis) {
  // Found by the fuzzer (through cummax's jvp): the first 1x1 slice comes back
  // replicated and was concatenated with the rest, still sharded: refused.
  Mesh mesh = make_mesh({1}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(array<float>({3, 1, 2, 3, 2.25f, -2.75f}, {1, 6}), P("x"));
  for (bool reverse : {false, true}) {
    Array m = associative_scan([](const Array& a, const Array& b) { return maximum(a, b); }, x,
                               reverse, 1);
    EXPECT_EQ(typeof(m).str(), "f32[1@x,6]");
    EXPECT_EQ(vec(m), vec(cummax(x, 1, {.reverse = reverse})));
  }
}

TEST(AssociativeScan, RefusesMismatchedLengthsAndScalars) {
  ScanFn add = [](const std::vector<Array>& a, const std::vector<Array>& b) {
    return std::vector<Array>{a[0] + b[0], a[1] + b[1]};
  };
  EXPECT_THROW(associative_scan(add, {zeros({4}), zeros({5})}), ValueError);
  EXPECT_THROW(associative_scan([](const Array& a, const Array&) { return a; }, zeros({})),
               ValueError);
  ScanFn bad = [](const std::vector<Array>& a, const std::vector<Array>&) {
    return std::vector<Array>{sum(a[0])};
  };
  EXPECT_THROW(associative_scan(bad, {zeros({4})}), ValueError);
}

// ---- cummax / cummin ties split as JAX's tree --------------------------------------

// JAX's _scan on [e0..e3] (loops.py): pairs (e0,e1), (e2,e3) -> m01, m23; their scan
// gives [m01, m0123 = max(m01, m23)]; the even positions are e0 and max(m01, e2).
// With every element equal, each max splits its tangent in halves (lax.max's jvp),
// so d m01 = (t0+t1)/2, d m012 = (t0+t1)/4 + t2/2, d m0123 = (t0+t1+t2+t3)/4. A
// left-to-right fold would give the last row (1,1,2,4)/8 instead.
const std::vector<std::vector<double>> kTies4 = {
    {1, 0, 0, 0}, {.5, .5, 0, 0}, {.25, .25, .5, 0}, {.25, .25, .25, .25}};
// Five equal elements: pairs m01, m23; odd results [m01, m0123]; even positions e0,
// max(m01, e2), max(m0123, e4), so the last row is (t0+t1+t2+t3)/8 + t4/2.
const std::vector<std::vector<double>> kTies5 = {{1, 0, 0, 0, 0},
                                                 {.5, .5, 0, 0, 0},
                                                 {.25, .25, .5, 0, 0},
                                                 {.25, .25, .25, .25, 0},
                                                 {.125, .125, .125, .125, .5}};

void expect_jacobian(const FlatFn& f, const Array& x, const std::vector<std::vector<double>>& J,
                     const std::string& what) {
  size_t n = J.size();
  for (size_t j = 0; j < n; ++j) {
    std::vector<double> col = jvp_column(f, {x}, 0, j), want(n);
    for (size_t i = 0; i < n; ++i) want[i] = J[i][j];
    expect_near(want, col, 1e-15, what + " column " + std::to_string(j));
  }
  // The vjp is the transposed Jacobian: a cotangent e_i gives row i.
  auto [out, f_vjp] = detail::vjp_flat(f, {x});
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> e(n, 0.0);
    e[i] = 1.0;
    expect_near(J[i], vec((*f_vjp)({array<double>(e, {static_cast<int64_t>(n)})})[0]), 1e-15,
                what + " vjp row " + std::to_string(i));
  }
}

TEST(CumulativeAd, CummaxTiesSplitAsJaxAssociativeScan) {
  FlatFn f = [](const std::vector<Array>& a) { return std::vector<Array>{cummax(a[0], 0)}; };
  expect_jacobian(f, full({4}, 2.0, float64), kTies4, "cummax of 4 ties");
  expect_jacobian(f, full({5}, -1.5, float64), kTies5, "cummax of 5 ties");
  FlatFn g = [](const std::vector<Array>& a) { return std::vector<Array>{cummin(a[0], 0)}; };
  expect_jacobian(g, full({4}, 0.5, float64), kTies4, "cummin of 4 ties");
}

TEST(CumulativeAd, ReverseCummaxTiesMirror) {
  // reverse = rev, scan, rev: the Jacobian with rows and columns reversed.
  FlatFn f = [](const std::vector<Array>& a) {
    return std::vector<Array>{cummax(a[0], 0, {.reverse = true})};
  };
  std::vector<std::vector<double>> J(4, std::vector<double>(4));
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) J[i][j] = kTies4[3 - i][3 - j];
  expect_jacobian(f, full({4}, 1.0, float64), J, "reverse cummax of 4 ties");
}

TEST(CumulativeAd, PartialTiesOnlySplitWhereEqual) {
  // x = [1, 3, 3, 2]: m01 = 3 from e1 alone; m23 = 3 from e2 alone; m0123 = max(m01,
  // m23) ties: (t1 + t2)/2; m012 = max(m01, e2) ties: (t1 + t2)/2.
  FlatFn f = [](const std::vector<Array>& a) { return std::vector<Array>{cummax(a[0], 0)}; };
  expect_jacobian(f, array<double>({1, 3, 3, 2}),
                  {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, .5, .5, 0}, {0, .5, .5, 0}}, "cummax [1,3,3,2]");
}

TEST(CumulativeAd, CumsumTransposesToTheReverseCumsum) {
  FlatFn f = [](const std::vector<Array>& a) { return std::vector<Array>{cumsum(a[0], 0)}; };
  auto t = detail::linear_transpose_flat(f, {typeof(zeros({4}, float64))});
  EXPECT_EQ(vec((*t)({array<double>({1, 2, 3, 4})})[0]), (std::vector<double>{10, 9, 7, 4}));
}

TEST(CumulativeAd, CumprodAndCumlogsumexpPassCheckGrads) {
  Array x = array<double>({0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 0.25}, {7});
  gradcheck::check_grads(
      [](const std::vector<Array>& a) { return std::vector<Array>{cumprod(a[0], 0)}; }, {x}, {},
      "cumprod");
  // A zero inside: the products after it keep a derivative in that element only.
  gradcheck::check_grads(
      [](const std::vector<Array>& a) { return std::vector<Array>{cumprod(a[0], 0)}; },
      {array<double>({0.5, 0.0, 2.0, 0.75})}, {}, "cumprod through a zero");
  gradcheck::check_grads(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{cumlogsumexp(a[0], 0, {.reverse = true})};
      },
      {x}, {}, "cumlogsumexp");
  // Equal elements: logaddexp(a, a) has derivative 1/2 in each (JAX's custom jvp).
  Array two = full({2}, 0.75, float64);
  std::vector<double> c0 = jvp_column(
      [](const std::vector<Array>& a) { return std::vector<Array>{cumlogsumexp(a[0], 0)}; }, {two},
      0, 0);
  expect_near({1.0, 0.5}, c0, 1e-15, "cumlogsumexp of a tie");
}

// ---- scatter family ----------------------------------------------------------------

ScatterDimensionNumbers rows_dn() {
  return {.update_window_dims = {},
          .inserted_window_dims = {0},
          .scatter_dims_to_operand_dims = {0},
          .operand_batching_dims = {},
          .scatter_indices_batching_dims = {}};
}

Array idx(std::vector<int32_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return array<int32_t>(v, {n, 1});
}

TEST(ScatterAd, SetGivesLosingUpdatesNoCotangent) {
  // x.at[[1, 1, 2]].set(u): the last update wins element 1, so u0 gets nothing, and
  // the operand's overwritten elements 1 and 2 get nothing.
  Array i = idx({1, 1, 2});
  FlatFn f = [i](const std::vector<Array>& a) {
    return std::vector<Array>{scatter(ScatterKind::Set, a[0], i, a[1], rows_dn())};
  };
  Array x = array<double>({1, 2, 3}), u = array<double>({4, 5, 6});
  auto [out, vjp] = detail::vjp_flat(f, {x, u});
  EXPECT_EQ(vec(out[0]), (std::vector<double>{1, 5, 6}));
  auto g = (*vjp)({array<double>({10, 20, 30})});
  EXPECT_EQ(vec(g[0]), (std::vector<double>{10, 0, 0}));
  EXPECT_EQ(vec(g[1]), (std::vector<double>{0, 20, 30}));
  // The jvp agrees: the tangent of element 1 is u1's.
  auto [o2, t] = detail::jvp_flat(f, {x, u}, {array<double>({1, 1, 1}), array<double>({7, 8, 9})});
  EXPECT_EQ(vec(t[0]), (std::vector<double>{1, 8, 9}));
  // Out of bounds (dropped, mode fill): the update gets nothing, the operand keeps all.
  Array oob = idx({5, 0, 0});
  FlatFn h = [oob](const std::vector<Array>& a) {
    return std::vector<Array>{scatter(ScatterKind::Set, a[0], oob, a[1], rows_dn())};
  };
  auto [o3, vjp3] = detail::vjp_flat(h, {x, u});
  auto g3 = (*vjp3)({array<double>({10, 20, 30})});
  EXPECT_EQ(vec(g3[0]), (std::vector<double>{0, 20, 30}));
  EXPECT_EQ(vec(g3[1]), (std::vector<double>{0, 0, 10}));
}

TEST(ScatterAd, ExtremalTiesSplitAsJax) {
  // _scatter_extremal_jvp: element 0 has the operand 1 and two updates 1, all equal
  // to the result: num_updates = 2, the operand is retained, so the updates and the
  // operand take 1/3 each. Element 1 keeps its operand 5 (the update 2 loses). Element
  // 2: the operand 0 loses to two tied updates 4: 1/2 each, the operand 0.
  Array i = idx({0, 0, 1, 2, 2});
  for (ScatterKind k : {ScatterKind::Max, ScatterKind::Min}) {
    double s = k == ScatterKind::Max ? 1 : -1;
    FlatFn f = [i, k](const std::vector<Array>& a) {
      return std::vector<Array>{scatter(k, a[0], i, a[1], rows_dn())};
    };
    Array x = array<double>({1 * s, 5 * s, 0});
    Array u = array<double>({1 * s, 1 * s, 2 * s, 4 * s, 4 * s});
    std::vector<std::vector<double>> Jx = {{1. / 3, 0, 0}, {0, 1, 0}, {0, 0, 0}};
    std::vector<std::vector<double>> Ju = {
        {1. / 3, 1. / 3, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, .5, .5}};
    const char* what = k == ScatterKind::Max ? "scatter_max" : "scatter_min";
    for (size_t j = 0; j < 3; ++j)
      expect_near({Jx[0][j], Jx[1][j], Jx[2][j]}, jvp_column(f, {x, u}, 0, j), 1e-15,
                  std::string(what) + " operand column " + std::to_string(j));
    for (size_t j = 0; j < 5; ++j)
      expect_near({Ju[0][j], Ju[1][j], Ju[2][j]}, jvp_column(f, {x, u}, 1, j), 1e-15,
                  std::string(what) + " updates column " + std::to_string(j));
  }
}

TEST(ScatterAd, MulIsExactWithDuplicatesAndZeros) {
  // out[p] = x[p] * prod of the updates at p. JAX refuses duplicates (it needs
  // unique_indices); the rule here differentiates the product exactly.
  Array i = idx({0, 0, 1, 1, 2, 0});
  FlatFn f = [i](const std::vector<Array>& a) {
    return std::vector<Array>{scatter(ScatterKind::Mul, a[0], i, a[1], rows_dn())};
  };
  Array x = array<double>({2, 3, 4});
  // Generic values (a polynomial, so finite differences are exact up to rounding).
  gradcheck::check_grads(f, {x, array<double>({1.5, -0.5, 2.0, 0.25, 7.0, 3.0})}, {},
                         "scatter_mul with duplicates");
  // One zero per element: exact to order 2 (the zero's derivative is the product of
  // the others; the others' derivatives vanish through it).
  gradcheck::check_grads(f, {x, array<double>({0.0, -0.5, 2.0, 0.0, 7.0, 3.0})}, {},
                         "scatter_mul with one zero per element");
  // Two zeros at element 1: still exact to order 2 (d2 out1 / du2 du3 = x1).
  gradcheck::check_grads(f, {x, array<double>({1.5, -0.5, 0.0, 0.0, 7.0, 3.0})}, {},
                         "scatter_mul with two zeros at one element");
  // Three zeros at element 0: exact at order 1 (every first derivative there vanishes).
  gradcheck::GradCheck first;
  first.order = 1;
  gradcheck::check_grads(f, {x, array<double>({0.0, 0.0, 2.0, 0.25, 7.0, 0.0})}, first,
                         "scatter_mul with three zeros at one element");
  // By hand at u = (0, -0.5, 2, 0, 7, 3): d out0 / d u0 = x0 * u1 * u5 = -3; the
  // other derivatives at element 0 vanish (u0 = 0); d out1 / d u3 = x1 * u2 = 6.
  Array u = array<double>({0.0, -0.5, 2.0, 0.0, 7.0, 3.0});
  expect_near({-3, 0, 0}, jvp_column(f, {x, u}, 1, 0), 1e-15, "d out / d u0");
  expect_near({0, 0, 0}, jvp_column(f, {x, u}, 1, 1), 1e-15, "d out / d u1");
  expect_near({0, 6, 0}, jvp_column(f, {x, u}, 1, 3), 1e-15, "d out / d u3");
  expect_near({0, 0, 4}, jvp_column(f, {x, u}, 1, 4), 1e-15, "d out / d u4");
}

TEST(ScatterAd, MulTransposesInTheOperandOnly) {
  Array i = idx({0, 0, 2});
  Array u = array<double>({2, 3, 5});
  FlatFn f = [i, u](const std::vector<Array>& a) {
    return std::vector<Array>{scatter(ScatterKind::Mul, a[0], i, u, rows_dn())};
  };
  auto t = detail::linear_transpose_flat(f, {typeof(zeros({3}, float64))});
  EXPECT_EQ(vec((*t)({array<double>({1, 1, 1})})[0]), (std::vector<double>{6, 1, 5}));
  FlatFn g = [i](const std::vector<Array>& a) {
    return std::vector<Array>{scatter(ScatterKind::Mul, ones({3}, float64), i, a[0], rows_dn())};
  };
  EXPECT_THROW(detail::linear_transpose_flat(g, {typeof(zeros({3}, float64))}), TypeError);
}

TEST(GatherAd, TransposeAddsDuplicatesAndFollowsTheMode) {
  // take([x0..x3], [1, 1, 9]) in fill mode: index 9 reads the fill (no cotangent),
  // index 1 twice accumulates; in clip mode 9 reads (and adds to) x3.
  Array i = array<int32_t>({1, 1, 9});
  for (IndexMode m : {IndexMode::FillOrDrop, IndexMode::Clip}) {
    FlatFn f = [i, m](const std::vector<Array>& a) {
      return std::vector<Array>{take(a[0], i, 0, {.mode = m, .fill_value = 0.0})};
    };
    auto [out, vjp] = detail::vjp_flat(f, {array<double>({1, 2, 3, 4})});
    auto g = (*vjp)({array<double>({10, 20, 30})});
    EXPECT_EQ(vec(g[0]), m == IndexMode::Clip ? (std::vector<double>{0, 30, 0, 30})
                                              : (std::vector<double>{0, 30, 0, 0}));
  }
}

// ---- sort and top_k ----------------------------------------------------------------

TEST(SortAd, TangentsFollowThePermutation) {
  Array x = array<double>({3, 1, 2}), v = array<double>({7, 8, 9});
  FlatFn f = [](const std::vector<Array>& a) { return sort(std::vector<Array>{a[0], a[1]}, 0); };
  auto [out, t] =
      detail::jvp_flat(f, {x, v}, {array<double>({10, 20, 30}), array<double>({1, 2, 3})});
  EXPECT_EQ(vec(out[0]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(vec(out[1]), (std::vector<double>{8, 9, 7}));
  EXPECT_EQ(vec(t[0]), (std::vector<double>{20, 30, 10}));
  EXPECT_EQ(vec(t[1]), (std::vector<double>{2, 3, 1}));
  // Integer keys carry no tangent; the float values still follow them.
  FlatFn g = [](const std::vector<Array>& a) { return sort(std::vector<Array>{a[0], a[1]}, 0); };
  auto [o2, t2] =
      detail::jvp_flat(g, {array<int32_t>({2, 0, 1}), v}, {Array(), array<double>({1, 2, 3})});
  EXPECT_EQ(vec(t2[1]), (std::vector<double>{2, 3, 1}));
  // top_k: values' tangents by the returned indices; the indices have none.
  FlatFn h = [](const std::vector<Array>& a) {
    auto [vals, ids] = top_k(a[0], 2);
    return std::vector<Array>{vals, ids};
  };
  auto [o3, t3] = detail::jvp_flat(h, {x}, {array<double>({10, 20, 30})});
  EXPECT_EQ(vec(o3[0]), (std::vector<double>{3, 2}));
  EXPECT_EQ(vec(t3[0]), (std::vector<double>{10, 30}));
  auto [o4, vjp] = detail::vjp_flat(h, {x});
  auto gx = (*vjp)({array<double>({1, 5}), zeros({2}, int32)});
  EXPECT_EQ(vec(gx[0]), (std::vector<double>{1, 0, 5}));
}

TEST(SortAd, SearchsortedHasNoTangent) {
  FlatFn f = [](const std::vector<Array>& a) {
    return std::vector<Array>{a[0] * 2.0, searchsorted(array<double>({0, 1, 2}), a[0])};
  };
  auto [out, t] = detail::jvp_flat(f, {array<double>({0.5, 1.5})}, {array<double>({1, 1})});
  EXPECT_EQ(vec(out[1]), (std::vector<double>{1, 2}));
  EXPECT_EQ(vec(t[0]), (std::vector<double>{2, 2}));
}

}  // namespace

namespace {

// ---- under jit, sharded --------------------------------------------------------------

// Cotangents of f's float inputs for an all-ones output cotangent.
std::vector<Array> grads_of(const FlatFn& f, const std::vector<Array>& args) {
  auto [out, vjp] = detail::vjp_flat(f, args);
  std::vector<Array> ct;
  for (const auto& o : out) ct.push_back(is_floating(o.dtype()) ? ones_like(o) : zeros_like(o));
  return (*vjp)(ct);
}

TEST(IndexScanAd, JitOfShardedGradsMatchesEager) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(array<double>(values(32, 3), {8, 4}), P("x"));
  Array u = device_put(array<double>(values(16, 4), {4, 4}), P());
  Array i = device_put(array<int32_t>({1, 0, 1, 3}), P());
  std::vector<std::pair<std::string, FlatFn>> fns = {
      {"set",
       [](const std::vector<Array>& a) { return std::vector<Array>{a[0].at(a[2]).set(a[1])}; }},
      {"max",
       [](const std::vector<Array>& a) { return std::vector<Array>{a[0].at(a[2]).max(a[1])}; }},
      {"mul",
       [](const std::vector<Array>& a) { return std::vector<Array>{a[0].at(a[2]).mul(a[1])}; }},
      {"cummax", [](const std::vector<Array>& a) { return std::vector<Array>{cummax(a[0], 1)}; }},
      {"cumlogsumexp",
       [](const std::vector<Array>& a) { return std::vector<Array>{cumlogsumexp(a[0], 1)}; }},
      {"sort",
       [](const std::vector<Array>& a) {
         return sort(std::vector<Array>{a[0], a[0] * 2.0}, 1);
       }},
      {"top_k",
       [](const std::vector<Array>& a) {
         auto [v, k] = top_k(a[0], 2);
         return std::vector<Array>{v, k};
       }},
  };
  for (const auto& [name, f] : fns) {
    std::vector<Array> eager = grads_of(f, {x, u, i});
    auto jitted = jit([f = f](const Array& a, const Array& b, const Array& c) {
      return grads_of(f, {a, b, c});
    });
    std::vector<Array> traced = jitted(x, u, i);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(typeof(traced[k]).str(), typeof(eager[k]).str()) << name << " input " << k;
      expect_near(vec(eager[k]), vec(traced[k]), 1e-12, name + " input " + std::to_string(k));
    }
  }
}

}  // namespace
