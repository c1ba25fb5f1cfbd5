#pragma once
// tsr-train's training step, shared with bench/train_bench.cpp so the benchmark
// measures exactly what the program runs: AdamW (optax's) with warmup + cosine
// decay and global-norm clipping, one jit of value_and_grad + update.
#include <cstdint>
#include <utility>

#include <tsr/nn.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

namespace train {

/** Everything a resumed run needs, as one tree (saved whole by checkpoints). */
struct TrainState {
  tsr::nn::Transformer model;                  /**< parameters */
  tsr::optim::State<tsr::nn::Transformer> opt; /**< AdamW moments and counters */
  tsr::Array step;                             /**< int32: optimizer steps done */
  tsr::Array data_pos;                         /**< int32: batches consumed */
};
TSR_TREE(TrainState, model, opt, step, data_pos)

/** The optimizer's settings. */
struct OptimizerConfig {
  double lr = 3e-3;                       /**< peak learning rate */
  int64_t warmup = 1;                     /**< linear warmup steps from 0 */
  int64_t steps = 1;                      /**< cosine decay ends here, at lr / 10 */
  double weight_decay = 0.1;              /**< decoupled, on rank >= 2 parameters only */
  double clip = 1.0;                      /**< global-norm clipping (0: off) */
  double b1 = 0.9, b2 = 0.99, eps = 1e-8; /**< Adam's moments */
};

/** chain(clip_by_global_norm, adamw(warmup_cosine_decay_schedule(0, lr, warmup, steps,
 *  lr / 10), b1, b2, eps, weight_decay, mask: ndim >= 2)). */
tsr::optim::GradientTransformation make_optimizer(const OptimizerConfig& c);

/** A fresh state: the model (already laid out), zero moments, counters 0. */
TrainState init_state(const tsr::nn::Transformer& model,
                      const tsr::optim::GradientTransformation& tx);

/** Mean next-token cross-entropy of the model on a batch. */
tsr::Array loss(const tsr::nn::Transformer& m, const tsr::Array& inputs, const tsr::Array& targets,
                const tsr::nn::Rules& rules);

/** The jitted step (state, inputs, targets) -> (next state, loss); donates the state.
 *  With micro > 1 the batch's gradient is accumulated over `micro` micro-batches
 *  (optim::accumulate_gradients, a scan): the same update in less activation memory. */
inline auto make_step(const tsr::optim::GradientTransformation& tx, const tsr::nn::Rules& rules,
                      int micro = 1) {
  using namespace tsr;
  return jit(
      [tx, rules, micro](const TrainState& s, const Array& x, const Array& y) {
        auto vg = [&rules](const nn::Transformer& m, const std::pair<Array, Array>& b) {
          return value_and_grad([&rules](const nn::Transformer& p, const Array& a, const Array& t) {
            return loss(p, a, t, rules);
          })(m, b.first, b.second);
        };
        auto [l, g] = micro > 1 ? optim::accumulate_gradients(vg, s.model, std::pair(x, y), micro)
                                : vg(s.model, {x, y});
        auto [updates, opt] = optim::update(tx, g, s.opt, s.model);
        TrainState next{optim::apply_updates(s.model, updates), opt, s.step + 1, s.data_pos + 1};
        return std::make_pair(next, l);
      },
      {.donate_argnums = {0}, .name = "train_step"});
}

}  // namespace train
