// The flat AD core: jvp, linearize, vjp and linear_transpose over lists of arrays,
// sharded and unsharded, eager and under jit.
#include <gtest/gtest.h>

#include <cmath>

#include "support/arrays.h"
#include "tsr/ad_core.h"
#include "tsr/tsr.h"

using namespace tsr;
using detail::FlatFn;

namespace {

std::vector<float> vec(const Array& a) { return test::values<float>(a); }

TEST(AdCore, JvpOfSin) {
  Array x = array<float>({0.f, 1.f, 2.f});
  Array t = array<float>({1.f, 1.f, 2.f});
  auto [o, to] = detail::jvp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{sin(a[0])}; }, {x}, {t});
  auto w = vec(to[0]);
  EXPECT_NEAR(w[0], 1.0, 1e-6);
  EXPECT_NEAR(w[1], std::cos(1.0), 1e-6);
  EXPECT_NEAR(w[2], 2 * std::cos(2.0), 1e-6);
}

TEST(AdCore, VjpOfSumOfSquares) {
  Array x = array<float>({1.f, 2.f, 3.f});
  auto [o, f] = detail::vjp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{sum(a[0] * a[0])}; }, {x});
  EXPECT_FLOAT_EQ(test::item<float>(o[0]), 14.f);
  auto g = (*f)({ones({}, float32)});
  EXPECT_EQ(vec(g[0]), (std::vector<float>{2, 4, 6}));
}

TEST(AdCore, ShardedGradOfMatmulLoss) {
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(arange(32.f).reshape({8, 4}) / 10.0, P("x"));
  Array w = device_put(arange(8.f).reshape({4, 2}) / 7.0, P());
  FlatFn loss = [](const std::vector<Array>& a) {
    return std::vector<Array>{sum(tanh(matmul(a[0], a[1])))};
  };
  auto [o, f] = detail::vjp_flat(loss, {x, w});
  auto g = (*f)({ones({}, float32)});
  EXPECT_EQ(typeof(g[1]).str(), "f32[4,2]");
  EXPECT_EQ(typeof(g[0]).str(), "f32[8@x,4]");
  // Oracle on one device.
  Array x1 = array<float>(test::values<float>(x), {8, 4});
  Array w1 = array<float>(test::values<float>(w), {4, 2});
  auto [o1, f1] = detail::vjp_flat(loss, {x1, w1});
  auto g1 = (*f1)({ones({}, float32)});
  auto a = vec(g[1]), b = vec(g1[1]);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
  a = vec(g[0]), b = vec(g1[0]);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(AdCore, LinearizePrintsAndTransposes) {
  Array x = array<float>({1.f, 2.f});
  FlatFn f = [](const std::vector<Array>& a) { return std::vector<Array>{mean(a[0] * a[0])}; };
  auto [o, lin] = detail::linearize_flat(f, {x});
  EXPECT_FLOAT_EQ(test::item<float>(o[0]), 2.5f);
  auto t = (*lin)({array<float>({1.f, 0.f})});
  EXPECT_FLOAT_EQ(test::item<float>(t[0]), 1.f);
  std::cout << lin->str() << "\n";
  auto tr = detail::linear_transpose_flat([&](const std::vector<Array>& a) { return (*lin)(a); },
                                          {typeof(x)});
  auto ct = (*tr)({scalar(1.f)});
  EXPECT_EQ(vec(ct[0]), (std::vector<float>{1.f, 2.f}));
}

}  // namespace
