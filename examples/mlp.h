#pragma once
// A three-layer relu MLP trained by plain SGD, shared by examples/mlp_train.cpp,
// bench/mlp_train_bench.cpp and the seed test, so all three run the same step.
//
//   logits = relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3
//   loss   = mean over the batch of softmax cross-entropy against integer labels
//
// The step is one jit of value_and_grad plus the SGD update: it takes the params
// and a batch and returns (new params, loss). With the batch sharded over a mesh
// axis and the params replicated, the gradients come back replicated (the
// partitioner all-reduces the per-device partial sums), so the same code runs
// data-parallel on any number of devices.
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>

#include <tsr/tsr.h>

namespace mlp {

/** The weights and biases of a din -> h1 -> h2 -> classes relu MLP. */
struct Params {
  tsr::Array w1, b1, w2, b2, w3, b3;
};

/** Layer widths. */
struct Sizes {
  int64_t in = 784, h1 = 1024, h2 = 1024, classes = 10; /**< widths, input first */
};

// In the struct's namespace: the tree traits are found by argument-dependent lookup.
TSR_TREE(Params, w1, b1, w2, b2, w3, b3)

/** How relu is differentiated. */
enum class ReluGrad {
  Mask,    /**< as jax.nn.relu (a custom_jvp): tangent where(x > 0, t, 0), 0 at x = 0 */
  Maximum, /**< plain maximum(x, 0): lax.max's JVP, which splits the tangent at ties */
};

/** relu(x) = max(x, 0) with the derivative chosen by `g`. Mask is what JAX users get
 *  from jax.nn.relu and PyTorch from F.relu; it also differentiates to a third of the
 *  elementwise passes of lax.max's rule (one compare and one select per layer). */
inline tsr::Array relu(const tsr::Array& x, ReluGrad g = ReluGrad::Mask) {
  using namespace tsr;
  if (g == ReluGrad::Maximum) return maximum(x, 0.0);
  static const auto masked =
      custom_jvp([](const Array& v) { return maximum(v, 0.0); },
                 [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                   const Array& v = std::get<0>(p);
                   return std::make_pair(maximum(v, 0.0), where(v > 0.0, std::get<0>(t), 0.0));
                 },
                 "relu");
  return masked(x);
}

/** He-normal weights (std sqrt(2 / fan_in)) and zero biases, from a seed; the same
 *  scale bench/mlp_train_torch.py uses. Laid out as `where` (P() replicates). */
inline Params init_params(const Sizes& s, int64_t seed, const tsr::Placement& where = {}) {
  using namespace tsr;
  Array k = random::key(seed);
  auto layer = [&](uint32_t i, int64_t fan_in, int64_t fan_out) {
    return random::normal(random::fold_in(k, i), {fan_in, fan_out}) *
           std::sqrt(2.0 / static_cast<double>(fan_in));
  };
  Params p{layer(1, s.in, s.h1),      zeros({s.h1}),     layer(2, s.h1, s.h2), zeros({s.h2}),
           layer(3, s.h2, s.classes), zeros({s.classes})};
  return shard(p, where);
}

/** The logits of a batch x: f32[batch, in] -> f32[batch, classes]. */
inline tsr::Array forward(const Params& p, const tsr::Array& x, ReluGrad g = ReluGrad::Mask) {
  using namespace tsr;
  Array h = relu(matmul(x, p.w1) + p.b1, g);
  h = relu(matmul(h, p.w2) + p.b2, g);
  return matmul(h, p.w3) + p.b3;
}

/** Mean softmax cross-entropy of the logits against int32 labels y (as
 *  torch.nn.functional.cross_entropy). */
inline tsr::Array loss(const Params& p, const tsr::Array& x, const tsr::Array& y,
                       ReluGrad g = ReluGrad::Mask) {
  using namespace tsr;
  Array logits = forward(p, x, g);
  int64_t classes = typeof(logits).shape.back();
  return -mean(sum(one_hot(y, classes) * log_softmax(logits), 1));
}

/** The jitted training step: (params, x, y) -> (params - lr * grad, loss). */
inline auto make_step(double lr, ReluGrad relu_grad = ReluGrad::Mask) {
  using namespace tsr;
  return jit([lr, relu_grad](const Params& p, const Array& x, const Array& y) {
    auto f = [relu_grad](const Params& q, const Array& a, const Array& b) {
      return loss(q, a, b, relu_grad);
    };
    auto [l, g] = value_and_grad(f)(p, x, y);
    Params next = tree::map2([lr](const Array& w, const Array& dw) { return w - lr * dw; }, p, g);
    return std::make_pair(next, l);
  });
}

/** The fraction of rows of x whose largest logit is the label. */
inline double accuracy(const Params& p, const tsr::Array& x, const tsr::Array& y) {
  using namespace tsr;
  Array hit = astype(equal(argmax(forward(p, x), 1), y), float32);
  return static_cast<double>(mean(hit).item<float>());
}

/** A learnable classification problem: labels are the argmax of a fixed random
 *  teacher MLP (in -> 32 -> classes, tanh) on Gaussian inputs. Returns (x, y) with
 *  x f32[n, in] and y int32[n], unsharded. */
inline std::pair<tsr::Array, tsr::Array> teacher_data(int64_t n, int64_t in, int64_t classes,
                                                      int64_t seed) {
  using namespace tsr;
  Array k = random::key(seed);
  Array x = random::normal(random::fold_in(k, 0), {n, in});
  Array t1 = random::normal(random::fold_in(k, 1), {in, 32}) / std::sqrt(static_cast<double>(in));
  Array t2 = random::normal(random::fold_in(k, 2), {32, classes});
  Array y = astype(argmax(matmul(tanh(matmul(x, t1) * 2.0), t2), 1), int32);
  return {x, y};
}

}  // namespace mlp
