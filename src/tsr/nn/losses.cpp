// Cross-entropy with a hand-written backward, and the mean squared error.
#include <tuple>
#include <utility>

#include "tsr/ad.h"
#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/nn/losses.h"
#include "tsr/ops.h"

namespace tsr::nn {

namespace {

void check_xent(const Array& logits, const Array& labels) {
  const char* api = "[nn.softmax_cross_entropy_with_integer_labels] ";
  if (!logits.valid() || !labels.valid())
    throw ValueError(std::string(api) +
                     "an argument is an empty Array handle. Got a default-constructed Array; "
                     "expected logits [..., V] and labels [...]. Pass both arrays.");
  if (!is_floating(logits.dtype()))
    throw TypeError(std::string(api) + "logits must be floating point. Got " + logits.type().str() +
                    "; expected a float dtype. Convert with astype.");
  if (!is_integer(labels.dtype()))
    throw TypeError(std::string(api) + "labels must be integers. Got " + labels.type().str() +
                    "; expected int32 class ids (optax's integer labels). Convert with "
                    "astype(labels, int32), or use a one-hot loss for soft labels.");
  Shape want(logits.shape().begin(), logits.shape().end() - (logits.ndim() > 0 ? 1 : 0));
  if (logits.ndim() == 0 || labels.shape() != want)
    throw ValueError(std::string(api) +
                     "labels must have logits' shape without its last (class) dimension. Got "
                     "logits " +
                     logits.type().str() + " and labels " + labels.type().str() +
                     "; expected labels of shape logits.shape[:-1]. Reshape one of them.");
}

// (loss, logsumexp): the label's logit through a one-hot product keeps a vocab-sharded
// logits local (a partial sum) instead of gathering it.
std::pair<Array, Array> xent_forward(const Array& logits, const Array& labels) {
  const int64_t v = logits.shape().back();
  Array lse = logsumexp(logits, -1);
  Array picked = sum(logits * one_hot(labels, v, logits.dtype()), -1);
  return {lse - picked, lse};
}

const auto& xent() {
  static const auto f = custom_vjp(
      [](const Array& logits, const Array& labels) { return xent_forward(logits, labels).first; },
      [](const Array& logits, const Array& labels) {
        auto [loss, lse] = xent_forward(logits, labels);
        return std::make_pair(loss, std::make_pair(logits, lse));
      },
      [](const Array& labels, const std::pair<Array, Array>& res, const Array& ct) {
        const auto& [logits, lse] = res;
        const int64_t v = logits.shape().back();
        Array p = exp(logits - expand_dims(lse, -1));
        return (p - one_hot(labels, v, logits.dtype())) * expand_dims(ct, -1);
      },
      nondiff_argnums<1>);
  return f;
}

}  // namespace

Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels) {
  check_xent(logits, labels);
  return xent()(logits, labels);
}

Array mse(const Array& pred, const Array& target) {
  if (!pred.valid() || !target.valid() || pred.shape() != target.shape())
    throw ValueError("[nn.mse] pred and target must have the same shape. Got " +
                     (pred.valid() ? pred.type().str() : std::string("<empty>")) + " and " +
                     (target.valid() ? target.type().str() : std::string("<empty>")) +
                     "; expected equal shapes. Reshape one of them (mse does not broadcast).");
  return mean(square(pred - target));
}

}  // namespace tsr::nn
