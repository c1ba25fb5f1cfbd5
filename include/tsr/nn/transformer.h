#pragma once
/** A decoder-only, pre-LayerNorm (GPT-2) Transformer over the nn layers; the exact
 *  architecture is spelled out in tsr/nn.h's header comment. */
#include <cstdint>
#include <optional>
#include <vector>

#include "tsr/array.h"
#include "tsr/nn/attention.h"
#include "tsr/nn/layers.h"
#include "tsr/nn/rules.h"
#include "tsr/tree.h"

namespace tsr::nn {

/** Options of the Transformer's (and a block's) apply. */
struct ApplyOptions {
  /** When set, activations are constrained by logical names (batch, seq, embed, heads,
   *  kv, mlp, vocab) against the context mesh. */
  std::optional<Rules> rules = std::nullopt;
  /** When set (and the dropout rate > 0), dropout is on (training); unset: off. */
  std::optional<Array> dropout_key = std::nullopt;
};

/** GPT-2's block: x += attn(ln1(x)); x += mlp(ln2(x)) (dropout on each branch). */
struct TransformerBlock {
  LayerNorm ln1;           /**< before attention */
  MultiHeadAttention attn; /**< causal self-attention */
  LayerNorm ln2;           /**< before the MLP */
  MLP mlp;                 /**< feed-forward */
  Dropout dropout;         /**< on the attention and MLP outputs, before each residual add */
  /** attn, mlp from split_keys(key, 2); kv = embed / heads. */
  static TransformerBlock init(int64_t embed, int64_t heads, int64_t d_ff, const Array& key,
                               Positions positions = Positions::Rotary, double dropout = 0.0);
};
TSR_TREE(TransformerBlock, ln1, attn, ln2, mlp, dropout)
/** x [B, T, embed] -> [B, T, embed]. Dropout keys: fold_in(opts.dropout_key, 0) for the
 *  attention branch and fold_in(opts.dropout_key, 1) for the MLP branch. */
Array apply(const TransformerBlock& b, const Array& x, const ApplyOptions& opts = {});

/** The Transformer's sizes. */
struct TransformerConfig {
  int64_t vocab = 256;                     /**< token ids in [0, vocab) */
  int64_t d_model = 128;                   /**< embedding width (embed) */
  int64_t heads = 4;                       /**< attention heads; kv = d_model / heads */
  int64_t layers = 4;                      /**< TransformerBlocks */
  int64_t d_ff = 512;                      /**< MLP hidden width (mlp) */
  int64_t max_seq = 64;                    /**< longest sequence apply accepts */
  Positions positions = Positions::Rotary; /**< RoPE or learned positions */
  double dropout = 0.0;                    /**< dropout rate in [0, 1) */
  /** ~1 M parameters at vocab 256: d_model 128, 4 heads, 4 layers, d_ff 512, max_seq 64. */
  static TransformerConfig tiny(int64_t vocab);
  /** ~10.8 M parameters at vocab 256: d_model 384, 6 heads, 6 layers, d_ff 1536, max_seq 64. */
  static TransformerConfig small(int64_t vocab);
  /** Field-wise equality (jit's cache key compares statics with it). */
  bool operator==(const TransformerConfig&) const = default;
};

/** Decoder-only language model: tokens [B, T] -> logits [B, T, vocab]. */
struct Transformer {
  TransformerConfig config;             /**< sizes (static) */
  Embedding embed;                      /**< token table [vocab, embed] */
  std::optional<Param> pos;             /**< [max_seq, embed] ("", "embed"); Learned only */
  std::vector<TransformerBlock> blocks; /**< config.layers blocks */
  LayerNorm ln_f;                       /**< final LayerNorm */
  Linear head;                          /**< untied [embed, vocab], no bias */
  /** Parameters from key (see nn.h: keys split_keys(key, layers + 3)). ValueError for
   *  a config that cannot build (sizes < 1, d_model not a multiple of heads, an odd head
   *  size with Rotary, dropout outside [0, 1)). */
  static Transformer init(const TransformerConfig& config, const Array& key);
};
TSR_TREE(Transformer, config, embed, pos, blocks, ln_f, head)

/** Logits [B, T, vocab] of integer tokens [B, T] (T <= max_seq). ValueError for
 *  tokens of another rank or a longer sequence, or a mesh (the context's, else the
 *  tokens') with Explicit axes; TypeError for non-integer tokens. */
Array apply(const Transformer& m, const Array& tokens, const ApplyOptions& opts = {});

}  // namespace tsr::nn
