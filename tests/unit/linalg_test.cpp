// tsr::linalg against NumPy's float64 results (tests/reference/linalg_fixtures.json,
// written by linalg_fixtures.py): in float64 and float32, on one device and with the
// batch sharded over a mesh of 2. Then the properties no fixture shows: reconstructions,
// orthogonality, the int promotion, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Case {
  std::string name;
  nlohmann::json params;
  std::vector<std::pair<Shape, std::vector<double>>> inputs, outputs;
};

// gtest prints a case by its name, not a byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load() {
  std::ifstream f(TSR_LINALG_FIXTURES);
  EXPECT_TRUE(f.good()) << "cannot open " << TSR_LINALG_FIXTURES;
  nlohmann::json j = nlohmann::json::parse(f);
  std::vector<Case> cases;
  auto read = [](const nlohmann::json& v) {
    std::vector<std::pair<Shape, std::vector<double>>> r;
    for (const auto& x : v)
      r.push_back({x["shape"].get<Shape>(), x["data"].get<std::vector<double>>()});
    return r;
  };
  for (const auto& c : j["cases"])
    cases.push_back({c["name"], c["params"], read(c["inputs"]), read(c["outputs"])});
  return cases;
}

Array mT(const Array& x) { return swapaxes(x, -1, -2); }

// Flips columns of u (and rows of vh) so each column's largest-|x| entry is >= 0, as the
// generator does (the decompositions are unique only up to these signs).
std::pair<Array, Array> sign_fix(const Array& u, const Array& vh) {
  Array col_max = max(abs(u), -2, ReduceOptions{true});
  Array at_max = astype(equal(abs(u), col_max), u.dtype());
  // The sign of the (first) largest entry: sum of sign(u) over the arg-max positions.
  Array s = sign(sum(multiply(at_max, u), -2, ReduceOptions{true}));
  s = where(equal(s, 0.0), 1.0, s);
  Array fu = multiply(u, s);
  Array fv = vh.valid() ? multiply(vh, mT(s)) : vh;
  return {fu, fv};
}

double parse_ord(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::stod(s);
}

// The function a case names, on inputs `in`.
std::vector<Array> run(const Case& c, const std::vector<Array>& in) {
  const std::string& n = c.name;
  if (n == "matrix_rank") return {linalg::matrix_rank(in[0])};
  if (n.rfind("cond_", 0) == 0) {
    std::string o = c.params["ord"].get<std::string>();
    if (o == "None") return {linalg::cond(in[0])};
    if (o == "fro") return {linalg::cond(in[0], "fro")};
    return {linalg::cond(in[0], parse_ord(o))};
  }
  if (n == "multi_dot") return {linalg::multi_dot(in)};
  if (n.rfind("cho_solve", 0) == 0) {
    bool lower = c.params["lower"].get<bool>();
    return {linalg::cho_solve(linalg::cho_factor(in[0], lower), in[1])};
  }
  if (n.rfind("lu_solve", 0) == 0)
    return {linalg::lu_solve(linalg::lu_factor(in[0]), in[1], c.params["trans"].get<int>())};
  if (n == "cholesky") return {linalg::cholesky(in[0])};
  if (n == "cholesky_upper") return {linalg::cholesky(in[0], true)};
  if (n == "solve_triangular_lower") return {linalg::solve_triangular(in[0], in[1], 0, true)};
  if (n == "solve_triangular_lower_trans") return {linalg::solve_triangular(in[0], in[1], 1, true)};
  if (n == "solve" || n == "solve_vector") return {linalg::solve(in[0], in[1])};
  if (n == "inv") return {linalg::inv(in[0])};
  if (n.rfind("det_", 0) == 0) return {linalg::det(in[0])};
  if (n == "slogdet") {
    auto r = linalg::slogdet(in[0]);
    return {r.sign, r.logabsdet};
  }
  if (n == "eigh") {
    auto r = linalg::eigh(in[0]);
    return {r.eigenvalues, sign_fix(r.eigenvectors, Array()).first};
  }
  if (n.rfind("svd_", 0) == 0) {
    auto r = linalg::svd(in[0], false);
    auto [u, vh] = sign_fix(r.U, r.Vh);
    return {u, r.S, vh};
  }
  if (n == "qr_reduced") {
    auto r = linalg::qr(in[0]);
    auto [q, rr] = sign_fix(r.Q, r.R);
    return {q, rr};
  }
  if (n.rfind("lu_", 0) == 0) {
    auto r = linalg::lu(in[0]);
    return {r.lu, r.pivots, r.permutation};
  }
  if (n == "lstsq") {
    auto r = linalg::lstsq(in[0], in[1]);
    return {r.x, r.residuals, r.rank, r.s};
  }
  if (n == "pinv") return {linalg::pinv(in[0])};
  if (n.rfind("norm_", 0) == 0) {
    std::string o = c.params["ord"].get<std::string>();
    if (o == "fro" || o == "nuc") return {linalg::norm(in[0], o)};
    return {linalg::norm(in[0], parse_ord(o))};
  }
  if (n.rfind("matrix_power_", 0) == 0)
    return {linalg::matrix_power(in[0], c.params["n"].get<int>())};
  ADD_FAILURE() << "no function for case " << n;
  return {};
}

void check_case(const Case& c, DType dtype, double tol, const std::optional<Mesh>& mesh) {
  std::vector<Array> in;
  for (const auto& [shape, data] : c.inputs) {
    Array x = astype(array<double>(data, shape), dtype);
    // The batch (every dimension before the matrix) sharded, when it divides.
    if (mesh && shape.size() >= 3 && shape[0] % mesh->size() == 0)
      x = device_put(x, NamedSharding(*mesh, P("x")));
    in.push_back(x);
  }
  std::vector<Array> out = run(c, in);
  ASSERT_EQ(out.size(), c.outputs.size()) << c.name;
  for (size_t k = 0; k < out.size(); ++k) {
    const auto& [shape, want] = c.outputs[k];
    ASSERT_EQ(out[k].shape(), shape) << c.name << " output " << k;
    std::vector<double> got = astype(out[k], float64).to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
          << c.name << " output " << k << " element " << i << " (" << dtype_name(dtype)
          << (mesh ? ", batch sharded" : "") << ")";
  }
}

class LinalgVsNumpy : public ::testing::TestWithParam<Case> {};

TEST_P(LinalgVsNumpy, Float64) { check_case(GetParam(), float64, 1e-9, std::nullopt); }
TEST_P(LinalgVsNumpy, Float32) { check_case(GetParam(), float32, 2e-4, std::nullopt); }
TEST_P(LinalgVsNumpy, Float64BatchSharded) {
  check_case(GetParam(), float64, 1e-9, make_mesh({2}, {"x"}));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LinalgVsNumpy, ::testing::ValuesIn(load()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;  // "norm_matrix_-1" -> "..._m1"
                           for (char& ch : n)
                             if (ch == '-') ch = 'm';
                           return n;
                         });

Array rand_matrix(const Shape& s, uint32_t seed) {
  return random::normal(random::key(seed), s, float64);
}

double max_abs(const Array& x) { return max(abs(x)).item<double>(); }

TEST(Linalg, Reconstructions) {
  Array a = rand_matrix({3, 6, 4}, 1);
  auto s = linalg::svd(a, false);
  EXPECT_LT(max_abs(subtract(matmul(multiply(s.U, expand_dims(s.S, -2)), s.Vh), a)), 1e-12);
  auto full = linalg::svd(a);
  EXPECT_EQ(full.U.shape(), (Shape{3, 6, 6}));
  EXPECT_LT(max_abs(subtract(matmul(mT(full.U), full.U), eye(6, -1, 0, float64))), 1e-12);
  auto q = linalg::qr(a, "complete");
  EXPECT_EQ(q.R.shape(), (Shape{3, 6, 4}));
  EXPECT_LT(max_abs(subtract(matmul(q.Q, q.R), a)), 1e-12);
  EXPECT_EQ(max_abs(subtract(q.R, triu(q.R))), 0.0);
  auto f = linalg::lu(a);
  EXPECT_EQ(f.pivots.dtype(), int32);
  EXPECT_EQ(f.permutation.shape(), (Shape{3, 6}));
  Array l =
      add(tril(slice(f.lu, {0, 0, 0}, {3, 6, 4}), -1), eye(6, 4, 0, float64));  // (6, 4) unit lower
  Array u = triu(slice(f.lu, {0, 0, 0}, {3, 4, 4}));
  Array pa = take_along_axis(a, broadcast_to(expand_dims(f.permutation, -1), a.shape()), 1);
  EXPECT_LT(max_abs(subtract(matmul(l, u), pa)), 1e-12);
}

TEST(Linalg, IntegersPromoteToFloat32) {
  Array a = array<int32_t>({4, 1, 1, 3}, {2, 2});
  EXPECT_EQ(linalg::cholesky(a).dtype(), float32);
  EXPECT_EQ(linalg::inv(a).dtype(), float32);
  EXPECT_NEAR(linalg::det(a).item<float>(), 11.0f, 1e-5);
}

TEST(Linalg, NotPositiveDefiniteIsNaNBelowAndZeroAbove) {
  Array l = linalg::cholesky(array<double>({1, 2, 2, 1}, {2, 2}));
  std::vector<double> v = l.to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[2]) && std::isnan(v[3]));
  EXPECT_EQ(v[1], 0.0);
}

// NaN inputs go through LAPACK and come out NaN (LAPACKE's NaN pre-check would refuse
// without factoring and leave lu's pivots unset: the fuzzer found the out-of-range row).
TEST(Linalg, NaNInputsPropagate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Array a = array<double>({nan, 1, 2, 3}, {2, 2});
  auto f = linalg::lu(a);
  for (int32_t p : f.permutation.to_vector<int32_t>()) EXPECT_TRUE(p == 0 || p == 1);
  for (int32_t p : f.pivots.to_vector<int32_t>()) EXPECT_TRUE(p == 0 || p == 1);
  EXPECT_TRUE(std::isnan(linalg::svdvals(a).to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(linalg::eigvalsh(a).to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(linalg::qr(a).R.to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(linalg::cholesky(a).to_vector<double>()[0]));
}

TEST(Linalg, SingularMatrices) {
  Array s = array<double>({1, 2, 2, 4, 1, 1, 1, 1, 1}, {3, 3});
  auto r = linalg::slogdet(slice(concatenate({s, s}, 0), {0, 0}, {3, 3}));
  EXPECT_EQ(r.sign.item<double>(), 0.0);
  EXPECT_EQ(r.logabsdet.item<double>(), -std::numeric_limits<double>::infinity());
}

TEST(Linalg, ErrorsNameTheFix) {
  Mesh m = make_mesh({2}, {"x"});
  Array x = device_put(rand_matrix({4, 4}, 2), NamedSharding(m, P("x")));
  EXPECT_HAS(error_of<ShardingTypeError>([&] { linalg::cholesky(x, false, false); }),
             "[cholesky] Input 0 to cholesky must be unsharded on non-batch dimensions, but got "
             "P('x', None). Reshard the matrix dimensions to unsharded first");
  EXPECT_HAS(error_of<ValueError>([&] {
               linalg::cholesky(rand_matrix({3, 4}, 3));
             }),
             "must be a square matrix");
  EXPECT_HAS(error_of<ValueError>([&] {
               linalg::qr(rand_matrix({3, 4}, 3), "full");
             }),
             "Unsupported QR decomposition mode 'full'");
  EXPECT_HAS(error_of<NotImplementedError>([&] {
               linalg::svd(astype(rand_matrix({3, 4}, 3), float16));
             }),
             "[svd] Unsupported dtype float16");
  EXPECT_HAS(error_of<ValueError>([&] {
               linalg::solve(rand_matrix({2, 4, 4}, 3), rand_matrix({2, 4}, 4));
             }),
             "Invalid shapes for solve");
  EXPECT_HAS(error_of<ValueError>([&] {
               linalg::norm(rand_matrix({3, 4}, 3), "nuc", std::vector<int>{0});
             }),
             "Invalid order 'nuc' for vector norm");
  // JAX's derivative limits, as typed errors.
  EXPECT_HAS(error_of<NotImplementedError>([&] {
               grad([](const Array& a) { return sum(linalg::qr(a).R); })(rand_matrix({3, 4}, 5));
             }),
             "[qr] Unimplemented case of QR decomposition derivative");
  EXPECT_HAS(error_of<NotImplementedError>([&] {
               grad([](const Array& a) { return sum(linalg::svd(a).S); })(rand_matrix({3, 4}, 5));
             }),
             "not implemented for full matrices");
}

}  // namespace
