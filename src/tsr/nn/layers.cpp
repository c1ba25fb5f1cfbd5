// Linear, Embedding, LayerNorm, RMSNorm, Dropout, MLP and gelu.
#include <cmath>
#include <numbers>

#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/nn/layers.h"
#include "tsr/nn/rules.h"
#include "tsr/ops.h"
#include "tsr/random.h"

namespace tsr::nn {

namespace {

constexpr double kInitStd = 0.02;

void check_size(int64_t n, const char* api, const char* what) {
  if (n < 1)
    throw ValueError(std::string("[") + api + "] " + what + " must be positive. Got " +
                     std::to_string(n) + "; expected >= 1. Pass a positive size.");
}

Param normal_param(const Array& key, const Shape& shape, Axes names) {
  return {random::normal(key, shape) * kInitStd, std::move(names)};
}

// The last dimension of x must be n (what the layer's parameter expects).
void check_last(const Array& x, int64_t n, const char* api, const Array& param) {
  if (!x.valid())
    throw ValueError(std::string("[") + api +
                     "] the input is an empty Array handle. Got a default-constructed Array; "
                     "expected an array. Pass the layer's input.");
  if (x.ndim() == 0 || x.shape().back() != n)
    throw ValueError(std::string("[") + api + "] the input's last dimension does not match " +
                     "the layer. Got input " + x.type().str() + "; expected a last dimension of " +
                     std::to_string(n) + " (parameter " + param.type().str() +
                     "). Pass an input of that width, or init the layer for this one.");
}

}  // namespace

Axes activation_names(int rank, const std::string& last) {
  if (rank <= 0) return {};
  if (rank == 1) return {last};
  Axes n(static_cast<size_t>(rank), "");
  n.front() = "batch";
  if (rank >= 3) n[static_cast<size_t>(rank) - 2] = "seq";
  n.back() = last;
  return n;
}

Array gelu(const Array& x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return x * (0.5 * (1.0 + tanh(c * (x + 0.044715 * integer_pow(x, 3)))));
}

// ---- Linear ----------------------------------------------------------------------

Linear Linear::init(int64_t in, int64_t out, const Array& key, const Axes& names, bool bias) {
  check_size(in, "nn.Linear.init", "in");
  check_size(out, "nn.Linear.init", "out");
  if (names.size() != 2)
    throw ValueError("[nn.Linear.init] names must name w's two dimensions. Got " +
                     std::to_string(names.size()) +
                     " names; expected 2 ({in, out}). Pass e.g. {\"embed\", \"mlp\"} or "
                     "{\"\", \"\"}.");
  Linear l{normal_param(key, {in, out}, names), std::nullopt};
  if (bias) l.b = Param{zeros({out}), {names[1]}};
  return l;
}

Array apply(const Linear& l, const Array& x) {
  check_last(x, l.w.value.shape()[0], "nn.Linear", l.w.value);
  // dot_general gives (x's free dims, out) directly: no broadcast of w, no transpose.
  Array y = dot_general(x, l.w.value, {{x.ndim() - 1}, {0}});
  return l.b ? y + l.b->value : y;
}

// ---- Embedding -------------------------------------------------------------------

Embedding Embedding::init(int64_t vocab, int64_t embed, const Array& key) {
  check_size(vocab, "nn.Embedding.init", "vocab");
  check_size(embed, "nn.Embedding.init", "embed");
  return {normal_param(key, {vocab, embed}, {"vocab", "embed"})};
}

Array apply(const Embedding& e, const Array& ids) {
  if (!ids.valid() || !is_integer(ids.dtype()))
    throw TypeError("[nn.Embedding] ids must be an integer array. Got " +
                    (ids.valid() ? ids.type().str() : std::string("an empty Array handle")) +
                    "; expected int32 (or another integer dtype) token ids. Convert with "
                    "astype(ids, int32).");
  return take(e.table.value, ids, 0);
}

// ---- LayerNorm / RMSNorm ---------------------------------------------------------

LayerNorm LayerNorm::init(int64_t dim, double eps, const std::string& name) {
  check_size(dim, "nn.LayerNorm.init", "dim");
  return {{ones({dim}), {name}}, {zeros({dim}), {name}}, eps};
}

Array apply(const LayerNorm& n, const Array& x) {
  check_last(x, n.scale.value.shape()[0], "nn.LayerNorm", n.scale.value);
  Array mu = mean(x, -1, {.keepdims = true});
  Array xc = x - mu;
  Array var = mean(square(xc), -1, {.keepdims = true});
  return xc * rsqrt(var + n.eps) * n.scale.value + n.bias.value;
}

RMSNorm RMSNorm::init(int64_t dim, double eps, const std::string& name) {
  check_size(dim, "nn.RMSNorm.init", "dim");
  return {{ones({dim}), {name}}, eps};
}

Array apply(const RMSNorm& n, const Array& x) {
  check_last(x, n.scale.value.shape()[0], "nn.RMSNorm", n.scale.value);
  Array ms = mean(square(x), -1, {.keepdims = true});
  return x * rsqrt(ms + n.eps) * n.scale.value;
}

// ---- Dropout ---------------------------------------------------------------------

Array apply(const Dropout& d, const Array& x, const Array& key, bool deterministic) {
  if (!(d.rate >= 0.0 && d.rate <= 1.0))
    throw ValueError("[nn.Dropout] rate must lie in [0, 1]. Got " + std::to_string(d.rate) +
                     "; expected a probability of dropping an element. Pass a rate in [0, 1].");
  if (deterministic || d.rate == 0.0) return x;
  if (!key.valid())
    throw ValueError(
        "[nn.Dropout] a non-deterministic dropout needs a PRNG key. Got an empty "
        "Array handle; expected a key from random::key / random::split. Pass a "
        "key, or deterministic = true for evaluation.");
  if (d.rate == 1.0) return zeros_like(x);
  Array keep = random::bernoulli(key, 1.0 - d.rate, x.shape());
  return where(keep, x / (1.0 - d.rate), 0.0);
}

// ---- MLP -------------------------------------------------------------------------

MLP MLP::init(int64_t embed, int64_t hidden, const Array& key) {
  check_size(embed, "nn.MLP.init", "embed");
  check_size(hidden, "nn.MLP.init", "hidden");
  std::vector<Array> k = random::split_keys(key, 2);
  return {normal_param(k[0], {embed, hidden}, {"embed", "mlp"}),
          {zeros({hidden}), {"mlp"}},
          normal_param(k[1], {hidden, embed}, {"mlp", "embed"}),
          {zeros({embed}), {"embed"}}};
}

Array apply(const MLP& m, const Array& x, const std::optional<Rules>& rules) {
  check_last(x, m.w1.value.shape()[0], "nn.MLP", m.w1.value);
  Array h = dot_general(x, m.w1.value, {{x.ndim() - 1}, {0}}) + m.b1.value;
  if (rules) h = constrain(h, activation_names(h.ndim(), "mlp"), *rules);  // column-parallel
  h = gelu(h);
  Array y = dot_general(h, m.w2.value, {{h.ndim() - 1}, {0}});
  // Pinned before the bias: the row-parallel partial sums are reduced here, once.
  if (rules) y = constrain(y, activation_names(y.ndim(), "embed"), *rules);
  return y + m.b2.value;
}

}  // namespace tsr::nn
