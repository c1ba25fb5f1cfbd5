#pragma once
// Host-loop references (double precision) of the nn layers and the Transformer: the
// oracles the nn tests compare with. Written from the formulas in tsr/nn.h, never
// through the layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "tsr/tsr.h"

namespace nnref {

/** A row-major host tensor. */
struct T {
  std::vector<int64_t> shape;
  std::vector<double> v;
  double& operator[](size_t i) { return v[i]; }
  double operator[](size_t i) const { return v[i]; }
};

/** The array's values as a host tensor. */
inline T host(const tsr::Array& a) {
  return {std::vector<int64_t>(a.shape().begin(), a.shape().end()), a.to_vector<double>()};
}

/** A float32 array of shape s with smooth pseudo-random values in about [-scale, scale]. */
inline tsr::Array wavy(const tsr::Shape& s, double scale, double salt) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(
        scale * std::sin(0.7 * static_cast<double>(i) * (1.0 + 0.13 * salt) + salt));
  return tsr::array(v, s);
}

/** EXPECTs equal shapes and |want - got| <= atol + rtol |want| everywhere. */
inline void expect_close(const T& want, const tsr::Array& got, double atol, double rtol,
                         const std::string& what) {
  ASSERT_EQ(want.shape, std::vector<int64_t>(got.shape().begin(), got.shape().end())) << what;
  std::vector<double> g = got.to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::fabs(want[i] - g[i]) <= atol + rtol * std::fabs(want[i]))) {
      ADD_FAILURE() << what << " at " << i << ": want " << want[i] << ", got " << g[i];
      ++bad;
    }
}

/** EXPECTs two arrays equal within atol + rtol |a|. */
inline void expect_close(const tsr::Array& want, const tsr::Array& got, double atol, double rtol,
                         const std::string& what) {
  expect_close(host(want), got, atol, rtol, what);
}

/** x [N, in] @ w [in, out] (+ b [out]). */
inline T linear(const T& x, const T& w, const T* b) {
  int64_t n = x.shape[0], in = w.shape[0], out = w.shape[1];
  T y{{n, out}, std::vector<double>(static_cast<size_t>(n * out))};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = b ? (*b)[static_cast<size_t>(j)] : 0.0;
      for (int64_t k = 0; k < in; ++k)
        s += x[static_cast<size_t>(i * in + k)] * w[static_cast<size_t>(k * out + j)];
      y[static_cast<size_t>(i * out + j)] = s;
    }
  return y;
}

/** LayerNorm over the last dimension of x [N, E]. */
inline T layer_norm(const T& x, const T& scale, const T& bias, double eps) {
  int64_t e = x.shape.back(), n = static_cast<int64_t>(x.v.size()) / e;
  T y = x;
  for (int64_t i = 0; i < n; ++i) {
    double mu = 0, var = 0;
    for (int64_t k = 0; k < e; ++k) mu += x[static_cast<size_t>(i * e + k)];
    mu /= static_cast<double>(e);
    for (int64_t k = 0; k < e; ++k) var += std::pow(x[static_cast<size_t>(i * e + k)] - mu, 2);
    var /= static_cast<double>(e);
    for (int64_t k = 0; k < e; ++k)
      y[static_cast<size_t>(i * e + k)] = (x[static_cast<size_t>(i * e + k)] - mu) /
                                              std::sqrt(var + eps) * scale[static_cast<size_t>(k)] +
                                          bias[static_cast<size_t>(k)];
  }
  return y;
}

/** jax.nn.gelu(approximate=True). */
inline double gelu(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

/** gelu(x @ w1 + b1) @ w2 + b2 on x [N, E]. */
inline T mlp(const T& x, const T& w1, const T& b1, const T& w2, const T& b2) {
  T h = linear(x, w1, &b1);
  for (double& v : h.v) v = gelu(v);
  return linear(h, w2, &b2);
}

/** Causal attention of x [B, T, E] with w* [E, H, D], wo [H, D, E]; RoPE when rotary. */
inline T attention(const T& x, const T& wq, const T& wk, const T& wv, const T& wo, bool rotary) {
  const int64_t b = x.shape[0], t = x.shape[1], e = x.shape[2], h = wq.shape[1], d = wq.shape[2];
  auto at = [](const T& a, std::initializer_list<int64_t> idx) {
    size_t off = 0, k = 0;
    for (int64_t i : idx) off = off * static_cast<size_t>(a.shape[k++]) + static_cast<size_t>(i);
    return off;
  };
  // q, k, v [B, T, H, D]
  auto proj = [&](const T& w) {
    T r{{b, t, h, d}, std::vector<double>(static_cast<size_t>(b * t * h * d))};
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ti = 0; ti < t; ++ti)
        for (int64_t hi = 0; hi < h; ++hi)
          for (int64_t di = 0; di < d; ++di) {
            double s = 0;
            for (int64_t ei = 0; ei < e; ++ei) s += x[at(x, {bi, ti, ei})] * w[at(w, {ei, hi, di})];
            r[at(r, {bi, ti, hi, di})] = s;
          }
    return r;
  };
  T q = proj(wq), k = proj(wk), v = proj(wv);
  if (rotary) {
    auto rot = [&](T& a) {
      T o = a;
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t ti = 0; ti < t; ++ti)
          for (int64_t hi = 0; hi < h; ++hi)
            for (int64_t i = 0; i < d / 2; ++i) {
              double ang =
                  static_cast<double>(ti) *
                  std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
              double x1 = a[at(a, {bi, ti, hi, i})], x2 = a[at(a, {bi, ti, hi, i + d / 2})];
              o[at(o, {bi, ti, hi, i})] = x1 * std::cos(ang) - x2 * std::sin(ang);
              o[at(o, {bi, ti, hi, i + d / 2})] = x2 * std::cos(ang) + x1 * std::sin(ang);
            }
      a = o;
    };
    rot(q);
    rot(k);
  }
  T y{{b, t, e}, std::vector<double>(static_cast<size_t>(b * t * e), 0.0)};
  std::vector<double> p(static_cast<size_t>(t));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t ti = 0; ti < t; ++ti) {
        double mx = -1e300, z = 0;
        for (int64_t si = 0; si <= ti; ++si) {
          double s = 0;
          for (int64_t di = 0; di < d; ++di)
            s += q[at(q, {bi, ti, hi, di})] * k[at(k, {bi, si, hi, di})];
          p[static_cast<size_t>(si)] = s / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, p[static_cast<size_t>(si)]);
        }
        for (int64_t si = 0; si <= ti; ++si)
          z += (p[static_cast<size_t>(si)] = std::exp(p[static_cast<size_t>(si)] - mx));
        for (int64_t di = 0; di < d; ++di) {
          double o = 0;
          for (int64_t si = 0; si <= ti; ++si)
            o += p[static_cast<size_t>(si)] / z * v[at(v, {bi, si, hi, di})];
          for (int64_t ei = 0; ei < e; ++ei) y[at(y, {bi, ti, ei})] += o * wo[at(wo, {hi, di, ei})];
        }
      }
  return y;
}

/** Per-position cross-entropy of logits [N, V] at labels [N]. */
inline std::vector<double> xent(const T& logits, const std::vector<int>& labels) {
  int64_t v = logits.shape.back(), n = static_cast<int64_t>(logits.v.size()) / v;
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double mx = -1e300, z = 0;
    for (int64_t j = 0; j < v; ++j) mx = std::max(mx, logits[static_cast<size_t>(i * v + j)]);
    for (int64_t j = 0; j < v; ++j) z += std::exp(logits[static_cast<size_t>(i * v + j)] - mx);
    out[static_cast<size_t>(i)] =
        std::log(z) + mx - logits[static_cast<size_t>(i * v + labels[static_cast<size_t>(i)])];
  }
  return out;
}

/** The tensor with its leading dimensions merged: [A, B, ..., E] -> [A*B*..., E]. */
inline T rows(T a) {
  int64_t e = a.shape.back();
  a.shape = {static_cast<int64_t>(a.v.size()) / e, e};
  return a;
}

}  // namespace nnref
