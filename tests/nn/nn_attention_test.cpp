// Causal multi-head attention and RoPE against host loops, a plain-ops reference
// (reshaped heads, rotate_half by concatenation, a tril mask) and finite differences.
#include <gtest/gtest.h>

#include <tsr/check_grads.h>
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

constexpr int64_t kB = 2, kT = 5, kE = 8, kH = 2, kD = 4;

nn::MultiHeadAttention make_attention(nn::Positions pos) {
  nn::MultiHeadAttention a = nn::MultiHeadAttention::init(kE, kH, kD, random::key(9), pos);
  // Larger weights than init's 0.02 so the softmax is far from uniform.
  a.wq.value = wavy({kE, kH, kD}, 0.6, 1);
  a.wk.value = wavy({kE, kH, kD}, 0.6, 2);
  a.wv.value = wavy({kE, kH, kD}, 0.6, 3);
  a.wo.value = wavy({kH, kD, kE}, 0.6, 4);
  return a;
}

// RoPE the textbook way: x * [cos, cos] + rotate_half(x) * [sin, sin], x [B, H, T, D].
Array rope_ref(const Array& x) {
  const int64_t t = x.shape()[2], d = x.shape()[3];
  Array inv = exp(arange(0, static_cast<double>(d / 2)) * (-2.0 * std::log(10000.0) / d));
  Array ang = outer(arange(0, static_cast<double>(t)), inv);  // [T, D/2]
  Array cs = concatenate({cos(ang), cos(ang)}, 1), sn = concatenate({sin(ang), sin(ang)}, 1);
  std::vector<Array> h = split(x, 2, 3);
  return x * cs.astype(x.dtype()) + concatenate({-h[1], h[0]}, 3) * sn.astype(x.dtype());
}

// Attention with heads as a reshape of [E, H*D] projections and a tril mask.
Array attention_ref(const Array& wq, const Array& wk, const Array& wv, const Array& wo,
                    const Array& x, bool rotary) {
  auto heads = [&](const Array& w) {
    Array p = matmul(x, reshape(w, {kE, kH * kD}));  // [B, T, H*D]
    return transpose(reshape(p, {kB, kT, kH, kD}), {0, 2, 1, 3});
  };
  Array q = heads(wq), k = heads(wk), v = heads(wv);
  if (rotary) q = rope_ref(q), k = rope_ref(k);
  Array s = matmul(q, swapaxes(k, 2, 3)) / std::sqrt(static_cast<double>(kD));
  s = where(tril(ones({kT, kT})) > 0.f, s, -1e9);
  Array o = matmul(softmax(s, -1), v);  // [B, H, T, D]
  o = reshape(transpose(o, {0, 2, 1, 3}), {kB, kT, kH * kD});
  return matmul(o, reshape(wo, {kH * kD, kE}));
}

}  // namespace

TEST(NnRope, MatchesHostRotation) {
  Array x = wavy({1, 4, 2, 6}, 1.0, 1);
  nnref::T xh = host(x), want = xh;
  for (int t = 0; t < 4; ++t)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 3; ++i) {
        double ang = t * std::pow(10000.0, -2.0 * i / 6);
        size_t a = static_cast<size_t>((t * 2 + h) * 6 + i), b = a + 3;
        want[a] = xh[a] * std::cos(ang) - xh[b] * std::sin(ang);
        want[b] = xh[b] * std::cos(ang) + xh[a] * std::sin(ang);
      }
  expect_close(want, nn::rope(x), 1e-6, 1e-5, "rope");
  EXPECT_HAS(
      error_of<ValueError>([] {
        (void)nn::rope(ones({1, 2, 1, 3}));
      }),
      "[nn.rope] rotary embeddings need x of shape [batch, seq, heads, dim] with an even dim");
  EXPECT_EQ(nn::mask_value(float32), -3.4028234663852886e38);
}

TEST(NnAttention, OutputMatchesHostLoops) {
  Array x = wavy({kB, kT, kE}, 1.0, 5);
  for (nn::Positions pos : {nn::Positions::Rotary, nn::Positions::Learned}) {
    nn::MultiHeadAttention a = make_attention(pos);
    bool rotary = pos == nn::Positions::Rotary;
    nnref::T want = nnref::attention(host(x), host(a.wq.value), host(a.wk.value), host(a.wv.value),
                                     host(a.wo.value), rotary);
    expect_close(want, nn::apply(a, x), 1e-5, 1e-4, rotary ? "rotary" : "no rope");
    expect_close(want, jit([](const nn::MultiHeadAttention& m, const Array& v) {
                   return nn::apply(m, v);
                 })(a, x),
                 1e-5, 1e-4, "under jit");
  }
}

TEST(NnAttention, CausalPrefixIgnoresLaterTokens) {
  // The output at t depends on x[:t+1] only: changing the last token leaves the rest.
  nn::MultiHeadAttention a = make_attention(nn::Positions::Rotary);
  Array x = wavy({kB, kT, kE}, 1.0, 5);
  Array x2 = x.at(all, kT - 1).set(7.f);
  std::vector<float> y = nn::apply(a, x).to_vector<float>(),
                     y2 = nn::apply(a, x2).to_vector<float>();
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t e = 0; e < kE; ++e) {
        size_t i = static_cast<size_t>((b * kT + t) * kE + e);
        if (t < kT - 1) {
          EXPECT_EQ(y[i], y2[i]) << b << "," << t << "," << e;
        }
      }
}

TEST(NnAttention, GradientMatchesPlainOpsReference) {
  Array x = wavy({kB, kT, kE}, 1.0, 5), c = wavy({kB, kT, kE}, 1.0, 6);
  for (nn::Positions pos : {nn::Positions::Rotary, nn::Positions::Learned}) {
    nn::MultiHeadAttention a = make_attention(pos);
    bool rotary = pos == nn::Positions::Rotary;
    auto [ga, gx] = grad(
        [&](const nn::MultiHeadAttention& m, const Array& v) { return sum(nn::apply(m, v) * c); },
        argnums<0, 1>)(a, x);
    auto gr =
        grad([&](const Array& wq, const Array& wk, const Array& wv, const Array& wo,
                 const Array& v) { return sum(attention_ref(wq, wk, wv, wo, v, rotary) * c); },
             argnums<0, 1, 2, 3, 4>)(a.wq.value, a.wk.value, a.wv.value, a.wo.value, x);
    std::string w = rotary ? " (rotary)" : " (no rope)";
    expect_close(std::get<0>(gr), ga.wq.value, 1e-5, 1e-4, "dwq" + w);
    expect_close(std::get<1>(gr), ga.wk.value, 1e-5, 1e-4, "dwk" + w);
    expect_close(std::get<2>(gr), ga.wv.value, 1e-5, 1e-4, "dwv" + w);
    expect_close(std::get<3>(gr), ga.wo.value, 1e-5, 1e-4, "dwo" + w);
    expect_close(std::get<4>(gr), gx, 1e-5, 1e-4, "dx" + w);
  }
}

TEST(NnAttention, FiniteDifferencesInFloat64) {
  nn::MultiHeadAttention a = make_attention(nn::Positions::Rotary);
  a = tree::map([](const Array& w) { return w.astype(float64); }, a);
  Array x = wavy({kB, kT, kE}, 1.0, 5).astype(float64);
  check_grads([](const nn::MultiHeadAttention& m, const Array& v) { return nn::apply(m, v); },
              std::make_tuple(a, x), 1, {.modes = {GradMode::Rev}, .atol = 1e-6, .rtol = 1e-5});
}

TEST(NnAttention, InitAndErrors) {
  nn::MultiHeadAttention a = nn::MultiHeadAttention::init(8, 2, 4, random::key(0));
  EXPECT_EQ(a.wq.names, (nn::Axes{"embed", "heads", "kv"}));
  EXPECT_EQ(a.wo.names, (nn::Axes{"heads", "kv", "embed"}));
  EXPECT_EQ(a.wo.value.shape(), (Shape{2, 4, 8}));
  EXPECT_EQ(a.positions, nn::Positions::Rotary);
  // Init draws normal(0, 0.02): the sample's spread says so.
  Array big = nn::MultiHeadAttention::init(64, 4, 16, random::key(1)).wq.value;
  EXPECT_NEAR(std::sqrt(mean(square(big)).item<float>()), 0.02, 0.001);
  EXPECT_NEAR(mean(big).item<float>(), 0.0, 0.001);
  EXPECT_HAS(
      error_of<ValueError>([] { (void)nn::MultiHeadAttention::init(9, 3, 3, random::key(0)); }),
      "rotary positions need an even head size. Got kv = 3");
  EXPECT_HAS(error_of<ValueError>([&] {
               (void)nn::apply(a, ones({2, 8}));
             }),
             "[nn.MultiHeadAttention] the input must be [batch, seq, embed] with embed = 8. Got "
             "f32[2,8]");
}
