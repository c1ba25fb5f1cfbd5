#pragma once
/** Causal multi-head self-attention with per-head projection tensors (Flax's
 *  DenseGeneral layout: no reshapes, so the heads dimension is a logical axis that
 *  tensor parallelism shards), and rotary position embeddings. */
#include <cstdint>
#include <optional>

#include "tsr/array.h"
#include "tsr/nn/rules.h"
#include "tsr/tree.h"

namespace tsr::nn {

/** How token positions enter the model. */
enum class Positions : uint8_t {
  Rotary, /**< RoPE on q and k in every attention layer (no position parameters) */
  Learned /**< a [max_seq, embed] table added to the token embeddings (GPT-2) */
};

/** RoPE, non-interleaved (GPT-NeoX / LLaMA's rotate_half): x [B, T, H, D] with D even;
 *  for i < D/2, angle(t, i) = t * base^(-2i/D), and
 *  out[..., i] = x_i cos - x_{i+D/2} sin, out[..., i+D/2] = x_{i+D/2} cos + x_i sin,
 *  for positions t = 0..T-1. ValueError for an odd D or a rank other than 4. */
Array rope(const Array& x, double base = 10000.0);

/** The value masked scores take: the dtype's lowest finite value (Flax's big_neg,
 *  -3.4028235e38 in float32); exp of it minus the row max is exactly 0. */
double mask_value(DType dtype);

/** Causal self-attention: q, k, v = x @ wq, wk, wv per head; scores softmax-ed over
 *  positions s <= t; y = attention @ wo. No biases. */
struct MultiHeadAttention {
  Param wq;                                /**< [embed, heads, kv] */
  Param wk;                                /**< [embed, heads, kv] */
  Param wv;                                /**< [embed, heads, kv] */
  Param wo;                                /**< [heads, kv, embed] */
  Positions positions = Positions::Rotary; /**< Rotary: RoPE on q and k */
  double rope_base = 10000.0;              /**< RoPE's base */
  /** wq, wk, wv, wo from split_keys(key, 4), each normal(0, 0.02). ValueError for
   *  sizes < 1 or an odd kv with Rotary positions. */
  static MultiHeadAttention init(int64_t embed, int64_t heads, int64_t kv, const Array& key,
                                 Positions positions = Positions::Rotary);
};
TSR_TREE(MultiHeadAttention, wq, wk, wv, wo, positions, rope_base)

/** x [B, T, embed] -> [B, T, embed]:
 *    q, k, v = einsum("bte,ehd->bthd", x, w{q,k,v}); RoPE on q, k when Rotary;
 *    q = q / sqrt(kv)                                   (Flax scales the query);
 *    s = einsum("bthd,bshd->bhts", q, k); s = where(s_pos <= t_pos, s, mask_value);
 *    a = softmax(s, over s);  o = einsum("bhts,bshd->bhtd", a, v);
 *    y = einsum("bhtd,hde->bte", o, wo).
 *  With rules: q, k, v constrained to (batch, seq, heads, kv), o to (batch, heads,
 *  seq, kv) and y to (batch, seq, embed): with tp, heads stay split and y is one
 *  all-reduce (Megatron). ValueError for another input rank or width. */
Array apply(const MultiHeadAttention& a, const Array& x,
            const std::optional<Rules>& rules = std::nullopt);

}  // namespace tsr::nn
