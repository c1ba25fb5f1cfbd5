#include "step.h"

namespace train {

using namespace tsr;

optim::GradientTransformation make_optimizer(const OptimizerConfig& c) {
  auto schedule = optim::warmup_cosine_decay_schedule(0.0, c.lr, c.warmup, c.steps, c.lr / 10);
  // Decay matrices and embeddings, not biases or norm scales (as nanoGPT does).
  auto decay_mask = [](const std::string&, const ArrayType& t) { return t.ndim() >= 2; };
  std::vector<optim::GradientTransformation> parts;
  if (c.clip > 0) parts.push_back(optim::clip_by_global_norm(c.clip));
  parts.push_back(optim::adamw(schedule, c.b1, c.b2, c.eps, 0.0, c.weight_decay, decay_mask));
  return optim::chain(parts);
}

TrainState init_state(const nn::Transformer& model, const optim::GradientTransformation& tx) {
  return {model, optim::init(tx, model), scalar<int32_t>(0, P()), scalar<int32_t>(0, P())};
}

Array loss(const nn::Transformer& m, const Array& inputs, const Array& targets,
           const nn::Rules& rules) {
  Array logits = nn::apply(m, inputs, {.rules = rules});
  return mean(nn::softmax_cross_entropy_with_integer_labels(logits, targets));
}

}  // namespace train
