// Each nn layer's output and gradient against host loops or a plain-ops reference.
#include <gtest/gtest.h>

#include <tsr/nn.h>
#include <tsr/tsr.h>

#include <cmath>

#include "nn/nn_reference.h"
#include "support/error_of.h"

using namespace tsr;
using nnref::expect_close;
using nnref::host;
using nnref::wavy;

namespace {

constexpr double kAtol = 2e-5, kRtol = 1e-4;

// sum(y * c): a scalar whose gradient with respect to y is c.
Array dot_with(const Array& y, const Array& c) { return sum(y * c); }

}  // namespace

TEST(NnLinear, OutputAndGradientMatchHostLoops) {
  nn::Linear l = nn::Linear::init(4, 5, random::key(1), {"embed", "mlp"});
  EXPECT_EQ(l.w.value.shape(), (Shape{4, 5}));
  ASSERT_TRUE(l.b.has_value());
  EXPECT_EQ(l.b->names, (nn::Axes{"mlp"}));
  EXPECT_EQ(l.b->value.to_vector<float>(), std::vector<float>(5, 0.f));
  l.b->value = wavy({5}, 0.5, 3);
  Array x = wavy({3, 4}, 1.0, 1), c = wavy({3, 5}, 1.0, 2);
  nnref::T xh = host(x), wh = host(l.w.value), bh = host(l.b->value), ch = host(c);
  expect_close(nnref::linear(xh, wh, &bh), nn::apply(l, x), kAtol, kRtol, "y");
  auto [gl, gx] =
      grad([&](const nn::Linear& p, const Array& xx) { return dot_with(nn::apply(p, xx), c); },
           argnums<0, 1>)(l, x);
  nnref::T dw{{4, 5}, std::vector<double>(20, 0.0)}, db{{5}, std::vector<double>(5, 0.0)},
      dx{{3, 4}, std::vector<double>(12, 0.0)};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      db[static_cast<size_t>(j)] += ch[static_cast<size_t>(i * 5 + j)];
      for (int k = 0; k < 4; ++k) {
        dw[static_cast<size_t>(k * 5 + j)] +=
            xh[static_cast<size_t>(i * 4 + k)] * ch[static_cast<size_t>(i * 5 + j)];
        dx[static_cast<size_t>(i * 4 + k)] +=
            ch[static_cast<size_t>(i * 5 + j)] * wh[static_cast<size_t>(k * 5 + j)];
      }
    }
  expect_close(dw, gl.w.value, kAtol, kRtol, "dw");
  expect_close(db, gl.b->value, kAtol, kRtol, "db");
  expect_close(dx, gx, kAtol, kRtol, "dx");
  EXPECT_EQ(gl.w.names, (nn::Axes{"embed", "mlp"}));  // gradients keep the names
  // Without bias; a rank-3 input contracts its last dimension only.
  nn::Linear nb = nn::Linear::init(4, 2, random::key(2), {"", ""}, false);
  EXPECT_FALSE(nb.b.has_value());
  Array x3 = wavy({2, 3, 4}, 1.0, 4);
  expect_close(nnref::linear(nnref::rows(host(x3)), host(nb.w.value), nullptr),
               reshape(nn::apply(nb, x3), {6, 2}), kAtol, kRtol, "rank 3");
}

TEST(NnLinear, Errors) {
  std::string e = error_of<ValueError>([] { (void)nn::Linear::init(0, 3, random::key(0)); });
  EXPECT_HAS(e, "[nn.Linear.init] in must be positive. Got 0");
  e = error_of<ValueError>([] { (void)nn::Linear::init(2, 3, random::key(0), {"a"}); });
  EXPECT_HAS(e, "names must name w's two dimensions. Got 1 names; expected 2");
  nn::Linear l = nn::Linear::init(4, 3, random::key(0));
  e = error_of<ValueError>([&] { (void)nn::apply(l, ones({2, 5})); });
  EXPECT_HAS(e,
             "[nn.Linear] the input's last dimension does not match the layer. Got input "
             "f32[2,5]; expected a last dimension of 4 (parameter f32[4,3])");
}

TEST(NnEmbedding, LookupAndScatterAddGradient) {
  nn::Embedding emb = nn::Embedding::init(6, 3, random::key(3));
  EXPECT_EQ(emb.table.names, (nn::Axes{"vocab", "embed"}));
  std::vector<int> ids = {0, 5, 2, 2, 5, 5, 1, 0};  // repeats accumulate in the gradient
  Array idx = array(ids, {2, 4});
  nnref::T tab = host(emb.table.value);
  nnref::T want{{2, 4, 3}, {}};
  for (int id : ids)
    for (int k = 0; k < 3; ++k) want.v.push_back(tab[static_cast<size_t>(id * 3 + k)]);
  expect_close(want, nn::apply(emb, idx), 0, 0, "rows");
  Array c = wavy({2, 4, 3}, 1.0, 5);
  nnref::T ch = host(c), dt{{6, 3}, std::vector<double>(18, 0.0)};
  for (size_t p = 0; p < ids.size(); ++p)
    for (int k = 0; k < 3; ++k)
      dt[static_cast<size_t>(ids[p] * 3 + k)] += ch[p * 3 + static_cast<size_t>(k)];
  nn::Embedding g =
      grad([&](const nn::Embedding& e) { return dot_with(nn::apply(e, idx), c); })(emb);
  expect_close(dt, g.table.value, kAtol, kRtol, "dtable");
  // Under jit too.
  nn::Embedding gj =
      jit(grad([&](const nn::Embedding& e) { return dot_with(nn::apply(e, idx), c); }))(emb);
  expect_close(dt, gj.table.value, kAtol, kRtol, "dtable (jit)");
  // An id outside [0, vocab) reads NaN, never another row.
  std::vector<float> out = nn::apply(emb, array(std::vector<int>{6}, {1})).to_vector<float>();
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  EXPECT_HAS(error_of<TypeError>([&] { (void)nn::apply(emb, ones({2})); }),
             "[nn.Embedding] ids must be an integer array. Got f32[2]");
}

TEST(NnNorms, LayerNormMatchesHostLoopsWithAnalyticGradient) {
  nn::LayerNorm n = nn::LayerNorm::init(6);
  EXPECT_EQ(n.scale.value.to_vector<float>(), std::vector<float>(6, 1.f));
  EXPECT_EQ(n.bias.value.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(n.eps, 1e-5);
  n.scale.value = 1.f + wavy({6}, 0.3, 1);
  n.bias.value = wavy({6}, 0.2, 2);
  Array x = wavy({2, 2, 6}, 2.0, 3) + 0.5f, c = wavy({2, 2, 6}, 1.0, 4);
  nnref::T xh = nnref::rows(host(x)), sh = host(n.scale.value), bh = host(n.bias.value),
           ch = nnref::rows(host(c));
  nnref::T want = nnref::layer_norm(xh, sh, bh, 1e-5);
  expect_close(want, reshape(nn::apply(n, x), {4, 6}), kAtol, kRtol, "y");
  // dx = r (g - mean(g) - xhat mean(g xhat)), g = c * scale; dscale = sum c xhat; dbias = sum c.
  nnref::T dx = xh, ds{{6}, std::vector<double>(6, 0.0)}, db = ds;
  for (size_t i = 0; i < 4; ++i) {
    double mu = 0, var = 0;
    for (size_t k = 0; k < 6; ++k) mu += xh[i * 6 + k] / 6;
    for (size_t k = 0; k < 6; ++k) var += std::pow(xh[i * 6 + k] - mu, 2) / 6;
    double r = 1 / std::sqrt(var + 1e-5), mg = 0, mgx = 0;
    std::vector<double> xhat(6), g(6);
    for (size_t k = 0; k < 6; ++k) {
      xhat[k] = (xh[i * 6 + k] - mu) * r;
      g[k] = ch[i * 6 + k] * sh[k];
      mg += g[k] / 6;
      mgx += g[k] * xhat[k] / 6;
      ds[k] += ch[i * 6 + k] * xhat[k];
      db[k] += ch[i * 6 + k];
    }
    for (size_t k = 0; k < 6; ++k) dx[i * 6 + k] = r * (g[k] - mg - xhat[k] * mgx);
  }
  auto [gn, gx] =
      grad([&](const nn::LayerNorm& p, const Array& xx) { return dot_with(nn::apply(p, xx), c); },
           argnums<0, 1>)(n, x);
  expect_close(dx, reshape(gx, {4, 6}), 1e-4, 1e-3, "dx");
  expect_close(ds, gn.scale.value, kAtol, kRtol, "dscale");
  expect_close(db, gn.bias.value, kAtol, kRtol, "dbias");
}

TEST(NnNorms, RMSNormMatchesHostLoopsWithAnalyticGradient) {
  nn::RMSNorm n = nn::RMSNorm::init(5);
  EXPECT_EQ(n.eps, 1e-6);
  EXPECT_EQ(n.scale.names, (nn::Axes{"embed"}));
  n.scale.value = 1.f + wavy({5}, 0.3, 1);
  Array x = wavy({3, 5}, 2.0, 7), c = wavy({3, 5}, 1.0, 8);
  nnref::T xh = host(x), sh = host(n.scale.value), ch = host(c), y = xh, dx = xh,
           ds{{5}, std::vector<double>(5, 0.0)};
  // y = x r s, r = (mean(x^2) + eps)^-1/2; dx_i = r s_i c_i - x_i r^3 mean_j(c_j s_j x_j).
  for (size_t i = 0; i < 3; ++i) {
    double ms = 0, m = 0;
    for (size_t k = 0; k < 5; ++k) ms += xh[i * 5 + k] * xh[i * 5 + k] / 5;
    double r = 1 / std::sqrt(ms + 1e-6);
    for (size_t k = 0; k < 5; ++k) m += ch[i * 5 + k] * sh[k] * xh[i * 5 + k] / 5;
    for (size_t k = 0; k < 5; ++k) {
      y[i * 5 + k] = xh[i * 5 + k] * r * sh[k];
      dx[i * 5 + k] = r * sh[k] * ch[i * 5 + k] - xh[i * 5 + k] * r * r * r * m;
      ds[k] += ch[i * 5 + k] * xh[i * 5 + k] * r;
    }
  }
  expect_close(y, nn::apply(n, x), kAtol, kRtol, "y");
  auto [gn, gx] =
      grad([&](const nn::RMSNorm& p, const Array& xx) { return dot_with(nn::apply(p, xx), c); },
           argnums<0, 1>)(n, x);
  expect_close(dx, gx, 1e-4, 1e-3, "dx");
  expect_close(ds, gn.scale.value, kAtol, kRtol, "dscale");
  EXPECT_HAS(error_of<ValueError>([&] {
               (void)nn::apply(n, ones({3, 4}));
             }),
             "[nn.RMSNorm] the input's last dimension does not match the layer");
}

TEST(NnGelu, TanhApproximationAndItsDerivative) {
  Array x = linspace(-4, 4, 17);
  nnref::T xh = host(x), y = xh, dy = xh;
  const double c = std::sqrt(2.0 / std::numbers::pi);
  for (size_t i = 0; i < xh.v.size(); ++i) {
    double v = xh[i], u = c * (v + 0.044715 * v * v * v), t = std::tanh(u);
    y[i] = nnref::gelu(v);
    dy[i] = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v);
  }
  expect_close(y, nn::gelu(x), kAtol, kRtol, "gelu");
  expect_close(dy, grad([](const Array& a) { return sum(nn::gelu(a)); })(x), kAtol, kRtol, "gelu'");
  // Known values of jax.nn.gelu(approximate=True).
  EXPECT_NEAR(nn::gelu(scalar(1.0f)).item<float>(), 0.8411920070648193, 1e-6);
  EXPECT_NEAR(nn::gelu(scalar(-2.0f)).item<float>(), -0.04540228843688965, 1e-6);
}

TEST(NnDropout, InvertedKeyedMask) {
  Array x = wavy({64, 32}, 1.0, 1) + 2.f, key = random::key(42);
  nn::Dropout d{0.25};
  // The mask is random::bernoulli(key, 1 - rate, shape): the reference.
  std::vector<bool> keep = random::bernoulli(key, 0.75, {64, 32}).to_vector<bool>();
  Array y = nn::apply(d, x, key, false);
  std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  int kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    kept += keep[i];
    EXPECT_FLOAT_EQ(yv[i], keep[i] ? xv[i] / 0.75f : 0.f) << i;
  }
  EXPECT_NEAR(kept / 2048.0, 0.75, 0.03);
  // Gradient: mask / (1 - rate).
  std::vector<float> g =
      grad([&](const Array& a) { return sum(nn::apply(d, a, key, false)); })(x).to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(g[i], keep[i] ? 1 / 0.75f : 0.f);
  // Deterministic, rate 0: the identity (no key needed); rate 1: zeros.
  EXPECT_EQ(nn::apply(d, x, Array(), true).to_vector<float>(), xv);
  EXPECT_EQ(nn::apply(nn::Dropout{0.0}, x, key, false).to_vector<float>(), xv);
  EXPECT_EQ(nn::apply(nn::Dropout{1.0}, x, key, false).to_vector<float>(),
            std::vector<float>(xv.size(), 0.f));
  // Another key, another mask.
  EXPECT_NE(nn::apply(d, x, random::key(43), false).to_vector<float>(), yv);
  EXPECT_HAS(error_of<ValueError>([&] { (void)nn::apply(nn::Dropout{1.5}, x, key, false); }),
             "[nn.Dropout] rate must lie in [0, 1]. Got 1.5");
  EXPECT_HAS(error_of<ValueError>([&] { (void)nn::apply(d, x, Array(), false); }),
             "[nn.Dropout] a non-deterministic dropout needs a PRNG key");
}

namespace {

// The MLP written with plain ops (matmul, the gelu formula inline).
Array mlp_ref(const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x) {
  Array h = matmul(x, w1) + b1;
  Array g = 0.5f * h * (1.f + tanh(0.7978845608028654f * (h + 0.044715f * h * h * h)));
  return matmul(g, w2) + b2;
}

}  // namespace

TEST(NnMlp, MatchesHostLoopsAndPlainOpsGradient) {
  nn::MLP m = nn::MLP::init(4, 8, random::key(5));
  EXPECT_EQ(m.w1.names, (nn::Axes{"embed", "mlp"}));
  EXPECT_EQ(m.w2.names, (nn::Axes{"mlp", "embed"}));
  EXPECT_EQ(m.b1.names, (nn::Axes{"mlp"}));
  EXPECT_EQ(m.b2.names, (nn::Axes{"embed"}));
  m.w1.value = wavy({4, 8}, 0.5, 1);
  m.w2.value = wavy({8, 4}, 0.5, 2);
  m.b1.value = wavy({8}, 0.1, 3);
  m.b2.value = wavy({4}, 0.1, 4);
  Array x = wavy({2, 3, 4}, 1.0, 5), c = wavy({2, 3, 4}, 1.0, 6);
  nnref::T want = nnref::mlp(nnref::rows(host(x)), host(m.w1.value), host(m.b1.value),
                             host(m.w2.value), host(m.b2.value));
  expect_close(want, reshape(nn::apply(m, x), {6, 4}), kAtol, kRtol, "y");
  auto [gm, gx] =
      grad([&](const nn::MLP& p, const Array& xx) { return dot_with(nn::apply(p, xx), c); },
           argnums<0, 1>)(m, x);
  auto gr = grad([&](const Array& w1, const Array& b1, const Array& w2, const Array& b2,
                     const Array& xx) { return dot_with(mlp_ref(w1, b1, w2, b2, xx), c); },
                 argnums<0, 1, 2, 3, 4>)(m.w1.value, m.b1.value, m.w2.value, m.b2.value, x);
  expect_close(std::get<0>(gr), gm.w1.value, kAtol, kRtol, "dw1");
  expect_close(std::get<1>(gr), gm.b1.value, kAtol, kRtol, "db1");
  expect_close(std::get<2>(gr), gm.w2.value, kAtol, kRtol, "dw2");
  expect_close(std::get<3>(gr), gm.b2.value, kAtol, kRtol, "db2");
  expect_close(std::get<4>(gr), gx, kAtol, kRtol, "dx");
}
