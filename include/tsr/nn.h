#pragma once
/** tsr::nn — Equinox-style layers as trees, logical-axis sharding rules, losses
 *  (docs/design/0017-training-stack.md). Built on the public headers only.
 *
 *  A layer is a TSR_TREE struct of `Param`s (an Array plus its logical axis names,
 *  a static of the tree) and static config; `X::init(..., key)` makes one and
 *  `apply(layer, inputs...)` is a pure function, usable inside jit / grad / vmap.
 *  `shard(model, rules_preset("dp+tp"), mesh)` lays out any tree of Params.
 *
 *  The Transformer, exactly (what a JAX reference must compute), for config
 *  {vocab V, d_model E, heads H, layers L, d_ff F, max_seq S, positions, dropout p}
 *  with D = E / H, on int32 tokens [B, T], T <= S, all math in float32:
 *
 *    x = embed.table[tokens]                                   [B, T, E]
 *    Learned: x = x + pos[:T]                                  (pos [S, E])
 *    x = dropout(x, fold_in(k, 0))
 *    for l in 0..L-1, block = blocks[l], kb = fold_in(k, l + 1):
 *      h = LN(x; ln1)
 *      q, k, v = einsum("bte,ehd->bthd", h, wq / wk / wv)      w* [E, H, D]
 *      Rotary: q, k = rope(q), rope(k)   (base 10000, non-interleaved rotate_half:
 *              out[:D/2] = x1 cos - x2 sin, out[D/2:] = x2 cos + x1 sin,
 *              angle(t, i) = t * 10000^(-2i/D), i < D/2, t = 0..T-1)
 *      q = q / sqrt(D)
 *      s = einsum("bthd,bshd->bhts", q, k)
 *      s = where(s_idx <= t_idx, s, -3.4028235e38)   (float32's lowest finite value)
 *      a = softmax(s, axis=-1)
 *      o = einsum("bhts,bshd->bhtd", a, v)
 *      x = x + dropout(einsum("bhtd,hde->bte", o, wo), fold_in(kb, 0))   wo [H, D, E]
 *      h = LN(x; ln2)
 *      m = gelu_tanh(h @ w1 + b1) @ w2 + b2                    w1 [E, F], w2 [F, E]
 *      x = x + dropout(m, fold_in(kb, 1))
 *    logits = LN(x; ln_f) @ head.w                             head.w [E, V], no bias
 *
 *  LN(x) = (x - mean) / sqrt(mean((x - mean)^2) + 1e-5) * scale + bias over the last
 *  dimension; gelu_tanh = jax.nn.gelu(approximate=True); dropout is inverted
 *  (where(bernoulli(key, 1 - p), x / (1 - p), 0)) and is on only when
 *  ApplyOptions::dropout_key is set (k above); attention has no bias and no
 *  dropout on its probabilities.
 *
 *  Init (Transformer::init(config, key)): ks = random::split_keys(key, L + 3);
 *  embed.table = 0.02 normal(ks[0], [V, E]); pos = 0.02 normal(ks[1], [S, E])
 *  (Learned only); head.w = 0.02 normal(ks[2], [E, V]); block l from ks[l + 3]:
 *  (ka, km) = split_keys(ks[l + 3], 2); wq, wk, wv, wo = 0.02 normal of
 *  split_keys(ka, 4)[0..3]; w1, w2 = 0.02 normal of split_keys(km, 2)[0..1]; biases
 *  0, LayerNorm scales 1 and biases 0. Parameter count: V E (embed) + E V (head) +
 *  2 E (ln_f) [+ S E learned] + L (4 E^2 + 2 E F + F + E + 4 E).
 *
 *  Parameter paths and logical names (for checkpoints and a reference's mapping):
 *    embed.table.value ("vocab", "embed");  pos.value ("", "embed");
 *    blocks[l].ln1|ln2.scale|bias.value ("embed",);
 *    blocks[l].attn.wq|wk|wv.value ("embed", "heads", "kv");
 *    blocks[l].attn.wo.value ("heads", "kv", "embed");
 *    blocks[l].mlp.w1.value ("embed", "mlp"), b1 ("mlp",), w2 ("mlp", "embed"),
 *    b2 ("embed",);  ln_f.scale|bias.value ("embed",);  head.w.value ("embed", "vocab").
 *
 *  With ApplyOptions::rules set, activations are pinned (with_sharding_constraint
 *  by logical names against the context mesh): the embeddings and every residual
 *  stream (batch, seq, embed); q, k, v (batch, seq, heads, kv); o (batch, heads,
 *  seq, kv); the MLP hidden (batch, seq, mlp); logits (batch, seq, vocab). */
#include "tsr/nn/attention.h"
#include "tsr/nn/layers.h"
#include "tsr/nn/losses.h"
#include "tsr/nn/rules.h"
#include "tsr/nn/transformer.h"
