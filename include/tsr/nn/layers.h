#pragma once
/** Equinox-style layers: each is a TSR_TREE struct of Params and static config, made
 *  by a static `init(..., key)` (the norms take no key: nothing in them is random)
 *  and applied by a pure `apply(layer, x, ...)` that may be called inside jit and grad.
 * Initialisation: weights and embeddings normal(0, 0.02) (GPT-2), biases zero, norm scales one. */
#include <cstdint>
#include <optional>
#include <string>

#include "tsr/array.h"
#include "tsr/nn/rules.h"
#include "tsr/tree.h"

namespace tsr::nn {

/** jax.nn.gelu(approximate=True): x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
Array gelu(const Array& x);

/** Dense layer over the last dimension: y = x @ w (+ b), w stored [in, out]. */
struct Linear {
  Param w;                /**< [in, out] */
  std::optional<Param> b; /**< [out]; absent without bias */
  /** w ~ normal(0, 0.02) from key, b = 0; `names` are w's logical names (b takes
   *  names[1]). ValueError for sizes < 1 or names not of length 2. */
  static Linear init(int64_t in, int64_t out, const Array& key, const Axes& names = {"", ""},
                     bool bias = true);
};
TSR_TREE(Linear, w, b)
/** x [..., in] -> [..., out]; ValueError when x's last dimension is not `in`. */
Array apply(const Linear& l, const Array& x);

/** A lookup table [vocab, embed] with names {"vocab", "embed"}. */
struct Embedding {
  Param table; /**< [vocab, embed] */
  /** table ~ normal(0, 0.02) from key. */
  static Embedding init(int64_t vocab, int64_t embed, const Array& key);
};
TSR_TREE(Embedding, table)
/** Rows of the table at integer ids [...] -> [..., embed] (a gather; its gradient
 *  scatter-adds into the table). TypeError for non-integer ids; an id outside
 *  [0, vocab) reads NaN (jnp.take's fill mode), never another row. */
Array apply(const Embedding& e, const Array& ids);

/** Layer normalisation over the last dimension (Equinox/Flax LayerNorm). */
struct LayerNorm {
  Param scale;       /**< [dim], ones */
  Param bias;        /**< [dim], zeros */
  double eps = 1e-5; /**< added to the variance */
  /** scale = 1, bias = 0, both named {name}. */
  static LayerNorm init(int64_t dim, double eps = 1e-5, const std::string& name = "embed");
};
TSR_TREE(LayerNorm, scale, bias, eps)
/** (x - mean) * rsqrt(var + eps) * scale + bias, with mean and the two-pass variance
 *  mean((x - mean)^2) over the last dimension. */
Array apply(const LayerNorm& n, const Array& x);

/** Root-mean-square normalisation over the last dimension (LLaMA's RMSNorm). */
struct RMSNorm {
  Param scale;       /**< [dim], ones */
  double eps = 1e-6; /**< added to the mean square */
  /** scale = 1, named {name}. */
  static RMSNorm init(int64_t dim, double eps = 1e-6, const std::string& name = "embed");
};
TSR_TREE(RMSNorm, scale, eps)
/** x * rsqrt(mean(x^2) + eps) * scale over the last dimension. */
Array apply(const RMSNorm& n, const Array& x);

/** Inverted dropout: keeps each element with probability 1 - rate, scaled by
 *  1 / (1 - rate), so evaluation needs no rescaling. No parameters. */
struct Dropout {
  double rate = 0.0; /**< probability of zeroing an element, in [0, 1] */
};
TSR_TREE(Dropout, rate)
/** x unchanged when deterministic or rate == 0; else where(bernoulli(key, 1 - rate),
 *  x / (1 - rate), 0) (rate == 1: zeros). ValueError for a rate outside [0, 1] or a
 *  missing key when not deterministic. */
Array apply(const Dropout& d, const Array& x, const Array& key, bool deterministic);

/** GPT-2's feed-forward block: gelu(x @ w1 + b1) @ w2 + b2. */
struct MLP {
  Param w1; /**< [embed, mlp] */
  Param b1; /**< [mlp] */
  Param w2; /**< [mlp, embed] */
  Param b2; /**< [embed] */
  /** w1, w2 from split_keys(key, 2) (normal(0, 0.02)), biases zero. */
  static MLP init(int64_t embed, int64_t hidden, const Array& key);
};
TSR_TREE(MLP, w1, b1, w2, b2)
/** x [..., embed] -> [..., embed] (gelu: the tanh approximation). With rules, the
 *  hidden activation is constrained to (batch, [seq,] mlp) and the output to
 *  (batch, [seq,] embed): with tp's rules one all-reduce after w2 (Megatron). */
Array apply(const MLP& m, const Array& x, const std::optional<Rules>& rules = std::nullopt);

/** Logical names of a rank-`rank` activation ending in `last`: (batch, last),
 *  (batch, seq, last), (batch, "", ..., seq, last); rank 1 is (last). */
Axes activation_names(int rank, const std::string& last);

}  // namespace tsr::nn
