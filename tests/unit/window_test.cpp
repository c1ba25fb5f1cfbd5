// reduce_window and pooling against JAX's float64 values and gradients
// (tests/reference/window_fixtures.json, written by window_fixtures.py), on one device
// and with the leading dimension sharded over a mesh of 2; then the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Case {
  std::string name;
  Shape x_shape, y_shape;
  std::vector<double> x, y, grad;  // grad empty: JAX has none for this case
};

// gtest prints a case by its name, not a byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load() {
  std::ifstream f(TSR_WINDOW_FIXTURES);
  EXPECT_TRUE(f.good()) << "cannot open " << TSR_WINDOW_FIXTURES;
  nlohmann::json j = nlohmann::json::parse(f);
  std::vector<Case> cases;
  for (const auto& c : j["cases"]) {
    Case k{c["name"],
           c["x"]["shape"].get<Shape>(),
           c["y"]["shape"].get<Shape>(),
           c["x"]["data"].get<std::vector<double>>(),
           c["y"]["data"].get<std::vector<double>>(),
           {}};
    if (!c["grad"].is_null()) k.grad = c["grad"].get<std::vector<double>>();
    cases.push_back(k);
  }
  return cases;
}

const double inf = std::numeric_limits<double>::infinity();

// The tsr call each case names (the generator's lambda, argument for argument).
Array run(const std::string& n, const Array& x) {
  if (n == "max_pool_2x2") return max_pool(x, {2, 2}, {2, 2});
  if (n == "max_pool_3x3_same") return max_pool(x, {3, 3}, {1, 1}, "SAME");
  if (n == "min_pool_3x3_stride2_same") return min_pool(x, {3, 3}, {2, 2}, "SAME");
  if (n == "avg_pool_2x2") return avg_pool(x, {2, 2}, {2, 2});
  if (n == "avg_pool_3x3_same_exclude_pad") return avg_pool(x, {3, 3}, {1, 1}, "SAME", false);
  if (n == "avg_pool_explicit_padding") return avg_pool(x, {2, 3}, {2, 1}, Padding{{1, 1}, {0, 2}});
  if (n == "reduce_window_sum_dilated")
    return reduce_window(x, 0.0, WindowReducer::add, {2, 3},
                         {{2, 1}, Padding{{0, 0}, {1, 2}}, {1, 2}, {1, 2}});
  if (n == "reduce_window_max_dilated_same")
    return reduce_window(x, -inf, WindowReducer::max, {2, 3}, {{1, 2}, "SAME", {}, {1, 2}});
  if (n == "reduce_window_sum_init_one_same")
    return reduce_window(x, 1.0, WindowReducer::add, {3, 3}, {{1, 1}, "SAME"});
  if (n == "reduce_window_max_base_dilation")
    return reduce_window(x, -inf, WindowReducer::max, {3, 2},
                         {{1, 1}, Padding{{1, 0}, {0, 1}}, {2, 1}, {1, 1}});
  ADD_FAILURE() << "no function for case " << n;
  return x;
}

void expect_near_all(const std::vector<double>& want, const std::vector<double>& got,
                     const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << what << " element " << i;
}

void check(const Case& c, bool sharded) {
  Array x = array<double>(c.x, c.x_shape);
  // Sharded where both the operand's and the result's leading dims divide (else E9).
  if (sharded && c.x_shape[0] % 2 == 0 && c.y_shape[0] % 2 == 0)
    x = device_put(x, NamedSharding(make_mesh({2}, {"x"}), P("x")));
  const std::string what = c.name + (sharded ? " (sharded)" : "");
  Array y = run(c.name, x);
  ASSERT_EQ(y.shape(), c.y_shape) << what;
  expect_near_all(c.y, y.to_vector<double>(), what);
  if (c.grad.empty()) return;
  std::vector<double> wv(c.y.size());
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<double>(i % 7) - 3.0;
  Array w = array<double>(wv, c.y_shape);
  Array g = grad([&](const Array& a) { return sum(multiply(run(c.name, a), w)); })(x);
  expect_near_all(c.grad, g.to_vector<double>(), what + " gradient");
}

class WindowVsJax : public ::testing::TestWithParam<Case> {};
TEST_P(WindowVsJax, OneDevice) { check(GetParam(), false); }
TEST_P(WindowVsJax, LeadingDimSharded) { check(GetParam(), true); }
INSTANTIATE_TEST_SUITE_P(Fixtures, WindowVsJax, ::testing::ValuesIn(load()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(Window, ErrorsNameTheFix) {
  Mesh m = make_mesh({2}, {"x"});
  Array x = device_put(zeros({8, 8}), NamedSharding(m, P("x")));
  // E9: the windowed sharded dim's output (5) does not divide over x (2).
  EXPECT_HAS(error_of<ShardingTypeError>([&] {
               reduce_window(x, 0.0, WindowReducer::add, {4, 1});
             }),
             "[reduce_window_sum] reduce_window on sharded dims where out dim (5) is not "
             "divisible by mesh axes (2) with spec (x) is not implemented.");
  EXPECT_HAS(error_of<TypeError>([&] { reduce_window(x, 0.0, WindowReducer::add, {2}); }),
             "reduce_window got the wrong number of window_dimensions for operand array with 2 "
             "dimensions");
  EXPECT_HAS(error_of<TypeError>([&] {
               reduce_window(x, 0.0, WindowReducer::add, {0, 1});
             }),
             "window_dimensions must have every element be positive");
  EXPECT_HAS(error_of<ValueError>([&] {
               reduce_window(x, 0.0, WindowReducer::add, {2, 2}, {{1, 1}, "FULL"});
             }),
             "Unrecognized padding type");
  EXPECT_HAS(error_of<TypeError>([&] {
               reduce_window(zeros({4, 4}, bool_), false, WindowReducer::add, {2, 2});
             }),
             "reduce_window_sum does not accept dtype bool");
  EXPECT_HAS(error_of<ValueError>([&] {
               max_pool(zeros({4, 4}), {2, 2});
             }),
             "the input needs (batch..., spatial..., features) dimensions");
}

TEST(Window, WindowedShardedDimKeepsItsSharding) {
  Mesh m = make_mesh({2}, {"x"});
  Array x = device_put(reshape(arange(0, 64), {8, 8}), NamedSharding(m, P("x")));
  Array y = reduce_window(x, 0.0, WindowReducer::add, {2, 1}, {{2, 1}});
  EXPECT_EQ(typeof(y).str(), "f32[4@x,8]");
  EXPECT_EQ(y.to_vector<float>()[0], 0.0f + 8.0f);
}

// A spatial dimension sharded over 2 devices: SAME 3x3 windows take one row from each
// neighbour (ppermute) instead of gathering the image; values and gradients equal the
// one-device run.
TEST(Window, ShardedSpatialDimExchangesHalos) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x0 = random::normal(random::key(7), {2, 8, 8, 3}, float64);
  Array x = device_put(x0, P(nullptr, "x"));
  for (bool max : {true, false}) {
    auto pool_fn = [max](const Array& a) {
      return max ? max_pool(a, {3, 3}, {1, 1}, "SAME") : avg_pool(a, {3, 3}, {1, 1}, "SAME");
    };
    auto f = jit(pool_fn);
    std::string text = f.lower(x).local;
    EXPECT_NE(text.find("ppermute"), std::string::npos) << text;
    EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
    Array y = f(x);
    EXPECT_EQ(typeof(y).str(), "f64[2,8@x,8,3]");
    Array want = pool_fn(device_put(x0, local_devices()[0]));
    std::vector<double> a = want.to_vector<double>(), b = y.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
    auto loss = [&](const Array& v) { return sum(multiply(pool_fn(v), pool_fn(v))); };
    std::vector<double> ga = grad(loss)(device_put(x0, local_devices()[0])).to_vector<double>();
    std::vector<double> gb = jit(grad(loss))(x).to_vector<double>();
    for (size_t i = 0; i < ga.size(); ++i) EXPECT_NEAR(ga[i], gb[i], 1e-10) << i;
  }
}

// The mesh's ends are padded with the monoid's identity in the operand's dtype: for a
// bool max that is false (the fuzzer found -inf converted to bool, which is true).
TEST(Window, HaloPaddingOfBoolIsTheIdentity) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  std::vector<bool> v(32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i * 7 + 3) % 5 == 0;
  Array x0 = array(v, {4, 8});
  for (auto op : {WindowReducer::max, WindowReducer::min}) {
    const double init = op == WindowReducer::max ? -inf : inf;
    auto f = [&](const Array& a) { return reduce_window(a, init, op, {3, 2}, {{1, 1}, "SAME"}); };
    std::vector<bool> want = f(x0).to_vector<bool>();
    EXPECT_EQ(f(device_put(x0, P("x"))).to_vector<bool>(), want);
    EXPECT_EQ(jit(f)(device_put(x0, P("x"))).to_vector<bool>(), want);
  }
}

}  // namespace
