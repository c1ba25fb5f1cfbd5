// An MLP with softmax cross-entropy: value_and_grad equals the hand-derived
// gradients on one device, and the same numbers with the batch sharded over 8
// devices and over a (4,2) mesh with the hidden dimension sharded over its second
// axis, each gradient with its parameter's sharding.
#include <gtest/gtest.h>

#include <cmath>

#include "support/arrays.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Mlp {
  Array w1, b1, w2, b2;
};
TSR_TREE(Mlp, w1, b1, w2, b2)

constexpr int kB = 16, kIn = 8, kH = 12, kOut = 5;

Array loss(const Mlp& p, const Array& x, const Array& y) {
  Array h = tanh(matmul(x, p.w1) + p.b1);
  Array logits = matmul(h, p.w2) + p.b2;
  return -mean(sum(log_softmax(logits) * y, -1));
}

// The gradients by hand (float64 on the host): dlogits = (softmax - y) / B, then
// the chain rule through the dense layers and tanh.
struct Host {
  std::vector<double> w1, b1, w2, b2, x, y;
};

Mlp hand_grads(const Host& m) {
  std::vector<double> z1(kB * kH), h(kB * kH), lg(kB * kOut), dlg(kB * kOut);
  for (int b = 0; b < kB; ++b)
    for (int j = 0; j < kH; ++j) {
      double s = m.b1[j];
      for (int i = 0; i < kIn; ++i) s += m.x[b * kIn + i] * m.w1[i * kH + j];
      z1[b * kH + j] = s;
      h[b * kH + j] = std::tanh(s);
    }
  for (int b = 0; b < kB; ++b) {
    double mx = -1e300;
    for (int k = 0; k < kOut; ++k) {
      double s = m.b2[k];
      for (int j = 0; j < kH; ++j) s += h[b * kH + j] * m.w2[j * kOut + k];
      lg[b * kOut + k] = s;
      mx = std::max(mx, s);
    }
    double z = 0;
    for (int k = 0; k < kOut; ++k) z += std::exp(lg[b * kOut + k] - mx);
    for (int k = 0; k < kOut; ++k)
      dlg[b * kOut + k] = (std::exp(lg[b * kOut + k] - mx) / z - m.y[b * kOut + k]) / kB;
  }
  std::vector<double> gw2(kH * kOut, 0), gb2(kOut, 0), gw1(kIn * kH, 0), gb1(kH, 0);
  for (int b = 0; b < kB; ++b)
    for (int k = 0; k < kOut; ++k) {
      gb2[k] += dlg[b * kOut + k];
      for (int j = 0; j < kH; ++j) gw2[j * kOut + k] += h[b * kH + j] * dlg[b * kOut + k];
    }
  for (int b = 0; b < kB; ++b)
    for (int j = 0; j < kH; ++j) {
      double dh = 0;
      for (int k = 0; k < kOut; ++k) dh += dlg[b * kOut + k] * m.w2[j * kOut + k];
      double dz = dh * (1 - h[b * kH + j] * h[b * kH + j]);
      gb1[j] += dz;
      for (int i = 0; i < kIn; ++i) gw1[i * kH + j] += m.x[b * kIn + i] * dz;
    }
  return {array<double>(gw1, {kIn, kH}), array<double>(gb1, {kH}), array<double>(gw2, {kH, kOut}),
          array<double>(gb2, {kOut})};
}

Host host_data() {
  Host m;
  auto fill = [](int n, double scale, int salt) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v[i] = scale * std::sin(0.7 * i + salt);
    return v;
  };
  m.w1 = fill(kIn * kH, 0.5, 1);
  m.b1 = fill(kH, 0.1, 2);
  m.w2 = fill(kH * kOut, 0.5, 3);
  m.b2 = fill(kOut, 0.1, 4);
  m.x = fill(kB * kIn, 1.0, 5);
  m.y.assign(kB * kOut, 0.0);
  for (int b = 0; b < kB; ++b) m.y[b * kOut + (b * 3) % kOut] = 1.0;
  return m;
}

void expect_close(const Array& want, const Array& got, double tol, const std::string& what) {
  auto a = test::values<double>(want), b = test::values<double>(got);
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

void expect_grads(const Mlp& want, const Mlp& got, double tol, const std::string& what) {
  expect_close(want.w1, got.w1, tol, what + " w1");
  expect_close(want.b1, got.b1, tol, what + " b1");
  expect_close(want.w2, got.w2, tol, what + " w2");
  expect_close(want.b2, got.b2, tol, what + " b2");
}

TEST(MlpGrad, OneDeviceEqualsHandDerivedGradients) {
  Host m = host_data();
  Mlp p{array<double>(m.w1, {kIn, kH}), array<double>(m.b1, {kH}), array<double>(m.w2, {kH, kOut}),
        array<double>(m.b2, {kOut})};
  Array x = array<double>(m.x, {kB, kIn}), y = array<double>(m.y, {kB, kOut});
  auto [l, g] = value_and_grad(loss)(p, x, y);
  expect_grads(hand_grads(m), g, 1e-12, "eager");
  auto [lj, gj] = jit(value_and_grad(loss))(p, x, y);
  expect_grads(hand_grads(m), gj, 1e-12, "jit");
  EXPECT_NEAR(test::item<double>(l), test::item<double>(lj), 1e-14);
}

// The sharded runs in float32 against the one-device float32 run.
Mlp f32(const Host& m) {
  return {array<double>(m.w1, {kIn, kH}).astype(float32), array<double>(m.b1, {kH}).astype(float32),
          array<double>(m.w2, {kH, kOut}).astype(float32),
          array<double>(m.b2, {kOut}).astype(float32)};
}

TEST(MlpGrad, BatchShardedOverEightDevices) {
  Host m = host_data();
  Mlp p1 = f32(m);
  Array x1 = array<double>(m.x, {kB, kIn}).astype(float32);
  Array y1 = array<double>(m.y, {kB, kOut}).astype(float32);
  auto [l1, g1] = value_and_grad(loss)(p1, x1, y1);
  Mesh mesh = make_mesh({8}, {"data"});
  MeshScope scope(mesh);
  Mlp p = shard(p1, P());
  Array x = device_put(x1, P("data")), y = device_put(y1, P("data"));
  for (bool jitted : {false, true}) {
    auto [l, g] = jitted ? jit(value_and_grad(loss))(p, x, y) : value_and_grad(loss)(p, x, y);
    std::string what = jitted ? "jit" : "eager";
    EXPECT_NEAR(test::item<float>(l1), test::item<float>(l), 1e-6) << what;
    expect_grads(g1, g, 1e-6, what);
    EXPECT_EQ(typeof(g.w1).str(), "f32[8,12]") << what;
    EXPECT_EQ(typeof(g.b2).str(), "f32[5]") << what;
  }
}

TEST(MlpGrad, BatchAndHiddenShardedOnATwoDimensionalMesh) {
  Host m = host_data();
  Mlp p1 = f32(m);
  Array x1 = array<double>(m.x, {kB, kIn}).astype(float32);
  Array y1 = array<double>(m.y, {kB, kOut}).astype(float32);
  auto [l1, g1] = value_and_grad(loss)(p1, x1, y1);
  Mesh mesh = make_mesh({4, 2}, {"data", "model"});
  MeshScope scope(mesh);
  // Megatron-style: w1 column-sharded, w2 row-sharded over "model"; the second matmul
  // contracts the sharded hidden dim, so it names its output sharding.
  Mlp p{device_put(p1.w1, P(nullptr, "model")), device_put(p1.b1, P("model")),
        device_put(p1.w2, P("model", nullptr)), device_put(p1.b2, P())};
  auto sharded_loss = [](const Mlp& p, const Array& x, const Array& y) {
    Array h = tanh(matmul(x, p.w1) + p.b1);
    Array logits = matmul(h, p.w2, {.out_sharding = P("data", nullptr)}) + p.b2;
    return -mean(sum(log_softmax(logits) * y, -1));
  };
  Array x = device_put(x1, P("data")), y = device_put(y1, P("data"));
  for (bool jitted : {false, true}) {
    auto [l, g] =
        jitted ? jit(value_and_grad(sharded_loss))(p, x, y) : value_and_grad(sharded_loss)(p, x, y);
    std::string what = jitted ? "jit" : "eager";
    EXPECT_NEAR(test::item<float>(l1), test::item<float>(l), 1e-6) << what;
    expect_grads(g1, g, 1e-6, what);
    EXPECT_EQ(typeof(g.w1).str(), "f32[8,12@model]") << what;
    EXPECT_EQ(typeof(g.b1).str(), "f32[12@model]") << what;
    EXPECT_EQ(typeof(g.w2).str(), "f32[12@model,5]") << what;
    EXPECT_EQ(typeof(g.b2).str(), "f32[5]") << what;
  }
}

}  // namespace
