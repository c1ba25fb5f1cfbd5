// Causal multi-head attention and rotary position embeddings.
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "tsr/error.h"
#include "tsr/nn/attention.h"
#include "tsr/ops.h"
#include "tsr/random.h"

namespace tsr::nn {

namespace {

constexpr double kInitStd = 0.02;

void check_size(int64_t n, const char* what) {
  if (n < 1)
    throw ValueError(std::string("[nn.MultiHeadAttention.init] ") + what +
                     " must be positive. Got " + std::to_string(n) +
                     "; expected >= 1. Pass a positive size.");
}

}  // namespace

double mask_value(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return std::numeric_limits<double>::lowest();
    case DType::Float16:
      return -65504.0;
    case DType::BFloat16:
      return -3.3895313892515355e38;
    default:
      return static_cast<double>(std::numeric_limits<float>::lowest());
  }
}

namespace {

// cos and sin of RoPE's angles as [T, 1, D/2] host constants in `dtype`, times `scale`
// (the attention folds 1/sqrt(D) into q's tables: one elementwise pass less).
std::pair<Array, Array> rope_tables(int64_t t, int64_t d, double base, DType dtype, double scale) {
  const int64_t half = d / 2;
  std::vector<double> c(static_cast<size_t>(t * half)), s(c.size());
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double ang = static_cast<double>(p) *
                   std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      c[static_cast<size_t>(p * half + i)] = scale * std::cos(ang);
      s[static_cast<size_t>(p * half + i)] = scale * std::sin(ang);
    }
  const Shape shape{t, 1, half};
  if (dtype == DType::Float64) return {array(c, shape), array(s, shape)};
  // Rounded on the host, so no conversion runs in the program (float32, the usual case).
  Array cf = array(std::vector<float>(c.begin(), c.end()), shape);
  Array sf = array(std::vector<float>(s.begin(), s.end()), shape);
  if (dtype == DType::Float32) return {cf, sf};
  return {cf.astype(dtype), sf.astype(dtype)};
}

// x [B, T, H, D] rotated by the tables (rotate_half: the halves, not interleaved pairs).
Array rotate(const Array& x, const std::pair<Array, Array>& tables) {
  const Shape& sh = x.shape();
  const int64_t half = sh[3] / 2;
  const auto& [cs, sn] = tables;
  Array x1 = slice(x, {0, 0, 0, 0}, {sh[0], sh[1], sh[2], half});
  Array x2 = slice(x, {0, 0, 0, half}, sh);
  return concatenate({x1 * cs - x2 * sn, x2 * cs + x1 * sn}, 3);
}

}  // namespace

Array rope(const Array& x, double base) {
  if (!x.valid() || x.ndim() != 4 || x.shape()[3] % 2 != 0)
    throw ValueError(
        "[nn.rope] rotary embeddings need x of shape [batch, seq, heads, dim] "
        "with an even dim. Got " +
        (x.valid() ? x.type().str() : std::string("an empty Array handle")) +
        "; expected rank 4 and an even last dimension. Use an even head size.");
  return rotate(x, rope_tables(x.shape()[1], x.shape()[3], base, x.dtype(), 1.0));
}

MultiHeadAttention MultiHeadAttention::init(int64_t embed, int64_t heads, int64_t kv,
                                            const Array& key, Positions positions) {
  check_size(embed, "embed");
  check_size(heads, "heads");
  check_size(kv, "kv");
  if (positions == Positions::Rotary && kv % 2 != 0)
    throw ValueError(
        "[nn.MultiHeadAttention.init] rotary positions need an even head size. "
        "Got kv = " +
        std::to_string(kv) +
        "; expected an even kv. Pick heads so that embed / heads is even, or "
        "use Positions::Learned.");
  std::vector<Array> k = random::split_keys(key, 4);
  auto w = [&](int i, const Shape& s, Axes n) {
    return Param{random::normal(k[static_cast<size_t>(i)], s) * kInitStd, std::move(n)};
  };
  return {w(0, {embed, heads, kv}, {"embed", "heads", "kv"}),
          w(1, {embed, heads, kv}, {"embed", "heads", "kv"}),
          w(2, {embed, heads, kv}, {"embed", "heads", "kv"}),
          w(3, {heads, kv, embed}, {"heads", "kv", "embed"}),
          positions,
          10000.0};
}

Array apply(const MultiHeadAttention& a, const Array& x, const std::optional<Rules>& rules) {
  const Array& wq = a.wq.value;
  if (!x.valid() || x.ndim() != 3 || x.shape()[2] != wq.shape()[0])
    throw ValueError(
        "[nn.MultiHeadAttention] the input must be [batch, seq, embed] with embed "
        "= " +
        std::to_string(wq.shape()[0]) + ". Got " +
        (x.valid() ? x.type().str() : std::string("an empty Array handle")) +
        "; expected rank 3 and that width. Pass token activations [B, T, E].");
  auto pin = [&](const Array& v, const Axes& names) {
    return rules ? constrain(v, names, *rules) : v;
  };
  const Axes bthd{"batch", "seq", "heads", "kv"};
  Array q = pin(einsum("bte,ehd->bthd", {x, wq}), bthd);
  Array k = pin(einsum("bte,ehd->bthd", {x, a.wk.value}), bthd);
  Array v = pin(einsum("bte,ehd->bthd", {x, a.wv.value}), bthd);
  const int64_t t = x.shape()[1], kv = wq.shape()[2];
  const double scale = 1.0 / std::sqrt(static_cast<double>(kv));
  if (a.positions == Positions::Rotary) {
    q = rotate(q, rope_tables(t, kv, a.rope_base, q.dtype(), scale));  // q / sqrt(kv), rotated
    k = rotate(k, rope_tables(t, kv, a.rope_base, k.dtype(), 1.0));
  } else {
    q = q * scale;
  }
  Array s = einsum("bthd,bshd->bhts", {q, k});
  // Causal: position t sees s <= t (a [T, T] bool, broadcast over batch and heads).
  Array mask = less_equal(broadcasted_iota(DType::Int32, {t, t}, 1),
                          broadcasted_iota(DType::Int32, {t, t}, 0));
  s = where(mask, s, mask_value(s.dtype()));
  Array p = softmax(s, -1);
  // "bhtd" keeps the heads-major order the scores have: no transpose before wo.
  Array o = pin(einsum("bhts,bshd->bhtd", {p, v}), {"batch", "heads", "seq", "kv"});
  return pin(einsum("bhtd,hde->bte", {o, a.wo.value}), {"batch", "seq", "embed"});
}

}  // namespace tsr::nn
