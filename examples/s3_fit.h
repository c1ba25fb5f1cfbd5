#pragma once
// Scenario S3 (SCENARIOS.md): one logistic regression per individual, fitted by a
// few gradient steps, written for ONE individual and vmapped over all of them.
// Shared by examples/s3_vmap_then_shard.cpp and tests/seeds/s3_vmap_then_shard_test.cpp.
//
// vmap says what is computed (one model per individual); sharding says where (which
// devices hold which individuals). Sharding the inputs never changes the results.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include <tsr/tsr.h>

namespace s3 {

/** One individual's model; `link` is a non-array leaf that passes through vmap,
 *  shard and jit untouched. */
struct Model {
  tsr::Array w;                  /**< f32[features] */
  tsr::Array b;                  /**< f32[] */
  std::string link = "logistic"; /**< static: part of jit's cache key */
};
TSR_TREE(Model, w, b, link)

/** Mean logistic loss of one individual's data: x f32[n, d], y f32[n] in {-1, +1}. */
inline tsr::Array loss(const Model& m, const tsr::Array& x, const tsr::Array& y) {
  using namespace tsr;
  Array z = matmul(x, m.w) + m.b;
  return mean(log1p(exp(-y * z)));
}

/** `steps` steps of gradient descent on one individual. */
inline Model fit_one(Model m, const tsr::Array& x, const tsr::Array& y, int steps = 25,
                     double lr = 0.5) {
  using namespace tsr;
  for (int s = 0; s < steps; ++s) {
    Model g = grad(loss)(m, x, y);
    m = tree::map2([lr](const Array& p, const Array& dp) { return p - lr * dp; }, m, g);
  }
  return m;
}

/** Every individual at once: vmap of fit_one over the leading dimension of every leaf,
 *  jitted. The same function runs on any mesh; only the inputs' placement changes. */
inline auto fit_all() {
  return tsr::jit(tsr::vmap(
      [](const Model& m, const tsr::Array& x, const tsr::Array& y) { return fit_one(m, x, y); }));
}

/** Synthetic data: `people` individuals with `n` points of `d` features each, whose
 *  labels come from each individual's own true weights. Returns (x, y), unsharded:
 *  x f32[people, n, d], y f32[people, n]. */
inline std::pair<tsr::Array, tsr::Array> data(int64_t people, int64_t n, int64_t d, int64_t seed) {
  using namespace tsr;
  Array k = random::key(seed);
  Array x = random::normal(random::fold_in(k, 0), {people, n, d});
  Array w_true = random::normal(random::fold_in(k, 1), {people, d, 1}) * 2.0;
  Array logits = matmul(x, w_true).reshape({people, n});
  Array noise = random::normal(random::fold_in(k, 2), {people, n}) * 0.5;
  Array y = where(logits + noise > 0.0, 1.0f, -1.0f);
  return {x, astype(y, float32)};
}

/** Zero-initialised models for `people` individuals of `d` features (one batch). */
inline Model init(int64_t people, int64_t d) {
  return {tsr::zeros({people, d}), tsr::zeros({people}), "logistic"};
}

}  // namespace s3
