// TransformerBlock and the decoder-only Transformer.
#include <string>

#include "tsr/error.h"
#include "tsr/nn/transformer.h"
#include "tsr/ops.h"
#include "tsr/random.h"

namespace tsr::nn {

namespace {

constexpr double kInitStd = 0.02;

void check_config(const TransformerConfig& c) {
  auto bad = [](const std::string& what, const std::string& got, const std::string& want) {
    throw ValueError("[nn.Transformer.init] " + what + ". Got " + got + "; expected " + want +
                     ". Fix the TransformerConfig.");
  };
  const std::pair<const char*, int64_t> sizes[] = {{"vocab", c.vocab}, {"d_model", c.d_model},
                                                   {"heads", c.heads}, {"layers", c.layers},
                                                   {"d_ff", c.d_ff},   {"max_seq", c.max_seq}};
  for (const auto& [name, v] : sizes)
    if (v < 1) bad(std::string(name) + " must be positive", std::to_string(v), ">= 1");
  if (c.d_model % c.heads != 0)
    bad("d_model must be a multiple of heads",
        "d_model " + std::to_string(c.d_model) + ", heads " + std::to_string(c.heads),
        "d_model % heads == 0");
  if (c.positions == Positions::Rotary && (c.d_model / c.heads) % 2 != 0)
    bad("rotary positions need an even head size d_model / heads",
        std::to_string(c.d_model / c.heads), "an even number");
  if (!(c.dropout >= 0.0 && c.dropout < 1.0))
    bad("dropout must lie in [0, 1)", std::to_string(c.dropout), "a rate in [0, 1)");
}

std::optional<Array> fold(const std::optional<Array>& key, uint32_t i) {
  return key ? std::optional<Array>(random::fold_in(*key, i)) : std::nullopt;
}

Array drop(const Dropout& d, const Array& x, const std::optional<Array>& key) {
  return apply(d, x, key ? *key : Array(), !key.has_value());
}

}  // namespace

TransformerConfig TransformerConfig::tiny(int64_t vocab) {
  return {vocab, 128, 4, 4, 512, 64, Positions::Rotary, 0.0};
}

TransformerConfig TransformerConfig::small(int64_t vocab) {
  return {vocab, 384, 6, 6, 1536, 64, Positions::Rotary, 0.0};
}

TransformerBlock TransformerBlock::init(int64_t embed, int64_t heads, int64_t d_ff,
                                        const Array& key, Positions positions, double dropout) {
  if (heads < 1 || embed % heads != 0)
    throw ValueError(
        "[nn.TransformerBlock.init] embed must be a positive multiple of heads. Got "
        "embed " +
        std::to_string(embed) + ", heads " + std::to_string(heads) +
        "; expected embed % heads == 0. Change one of them.");
  std::vector<Array> k = random::split_keys(key, 2);
  return {LayerNorm::init(embed),
          MultiHeadAttention::init(embed, heads, embed / heads, k[0], positions),
          LayerNorm::init(embed), MLP::init(embed, d_ff, k[1]), Dropout{dropout}};
}

Array apply(const TransformerBlock& b, const Array& x, const ApplyOptions& opts) {
  const Axes bse{"batch", "seq", "embed"};
  auto pin = [&](const Array& v) { return opts.rules ? constrain(v, bse, *opts.rules) : v; };
  Array h =
      x + drop(b.dropout, apply(b.attn, apply(b.ln1, x), opts.rules), fold(opts.dropout_key, 0));
  h = pin(h);
  return pin(h +
             drop(b.dropout, apply(b.mlp, apply(b.ln2, h), opts.rules), fold(opts.dropout_key, 1)));
}

Transformer Transformer::init(const TransformerConfig& c, const Array& key) {
  check_config(c);
  std::vector<Array> k = random::split_keys(key, c.layers + 3);
  Transformer m;
  m.config = c;
  m.embed = Embedding::init(c.vocab, c.d_model, k[0]);
  if (c.positions == Positions::Learned)
    m.pos = Param{random::normal(k[1], {c.max_seq, c.d_model}) * kInitStd, {"", "embed"}};
  m.head = Linear::init(c.d_model, c.vocab, k[2], {"embed", "vocab"}, false);
  m.blocks.reserve(static_cast<size_t>(c.layers));
  for (int64_t l = 0; l < c.layers; ++l)
    m.blocks.push_back(TransformerBlock::init(
        c.d_model, c.heads, c.d_ff, k[static_cast<size_t>(l + 3)], c.positions, c.dropout));
  m.ln_f = LayerNorm::init(c.d_model);
  return m;
}

Array apply(const Transformer& m, const Array& tokens, const ApplyOptions& opts) {
  if (!tokens.valid() || !is_integer(tokens.dtype()))
    throw TypeError("[nn.Transformer] tokens must be an integer array. Got " +
                    (tokens.valid() ? tokens.type().str() : std::string("an empty Array handle")) +
                    "; expected int32 token ids [batch, seq]. Convert with astype(tokens, int32).");
  if (tokens.ndim() != 2 || tokens.shape()[1] > m.config.max_seq)
    throw ValueError("[nn.Transformer] tokens must be [batch, seq] with seq <= max_seq = " +
                     std::to_string(m.config.max_seq) + ". Got " + tokens.type().str() +
                     "; expected rank 2 and at most that many positions. Cut the sequence, or "
                     "init with a larger max_seq.");
  // Explicit axes would need an out_sharding at the lookup, the row-parallel dots and
  // more; the layers leave those layouts to the propagation pass (Auto axes).
  AbstractMesh mesh = get_abstract_mesh();
  if (mesh.empty()) mesh = typeof(tokens).sharding.mesh();
  if (mesh.size() > 1 && !mesh.explicit_axes().empty())
    throw ValueError(
        "[nn.Transformer] the layers run on Auto mesh axes (the propagation pass "
        "lays out what the rules leave open). Got " +
        mesh.str() +
        "; expected every axis Auto. Build the mesh with "
        "make_mesh(sizes, names, {AxisType::Auto, ...}) (Mesh(...) defaults to "
        "Auto).");
  const Axes bse{"batch", "seq", "embed"};
  auto pin = [&](const Array& v, const Axes& n) {
    return opts.rules ? constrain(v, n, *opts.rules) : v;
  };
  Array x = apply(m.embed, tokens);
  if (m.pos) {
    const int64_t t = tokens.shape()[1], e = m.config.d_model;
    x = x + slice(m.pos->value, {0, 0}, {t, e});
  }
  x = pin(drop(Dropout{m.config.dropout}, x, fold(opts.dropout_key, 0)), bse);
  for (size_t l = 0; l < m.blocks.size(); ++l)
    x = apply(m.blocks[l], x, {opts.rules, fold(opts.dropout_key, static_cast<uint32_t>(l + 1))});
  x = apply(m.ln_f, x);
  return pin(apply(m.head, x), {"batch", "seq", "vocab"});
}

}  // namespace tsr::nn
