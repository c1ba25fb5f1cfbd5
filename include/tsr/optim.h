#pragma once
/** Optimizers with optax's names, update formulas and defaults (tsr::optim).
 *
 *  A GradientTransformation works on flat leaves, so one implementation serves
 *  every model; the typed State<P> rebuilds each per-parameter slot with the
 *  parameters' tree Structure (statics included), so the state shards, jits and
 *  checkpoints like the parameters. Everything is traceable: the step count is an
 *  int32 scalar Array in the state and schedules are Array(count) functions.
 *
 *    auto tx = optim::adamw(optim::warmup_cosine_decay_schedule(0, 1e-3, 100, 1000));
 *    auto state = optim::init(tx, params);
 *    auto step = jit([tx](const Params& p, const optim::State<Params>& s, const Batch& b) {
 *      auto [loss, g] = value_and_grad(loss_fn)(p, b);
 *      auto [u, s2] = optim::update(tx, g, s, p);
 *      return std::make_tuple(optim::apply_updates(p, u), s2, loss);
 *    });
 *
 *  See docs/design/0017-training-stack.md. */
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/array.h"
#include "tsr/control_flow.h"
#include "tsr/ops.h"
#include "tsr/tree.h"

namespace tsr::optim {

/** A value of the step count (an int32 scalar Array, traceable): a learning rate
 *  or a decay that changes during training. Returns a float32 scalar. */
using Schedule = std::function<Array(const Array& count)>;

/** optax's ScalarOrSchedule: a constant (`1e-3`) or a Schedule (`cosine_decay_schedule(...)`). */
class ScalarOrSchedule {
 public:
  /** A constant. */
  ScalarOrSchedule(double value) : value_(value) {}  // NOLINT: implicit by design
  /** A schedule: any callable Array(const Array& count). */
  template <class F>
  requires(std::is_invocable_r_v<Array, const F&, const Array&> && !std::is_arithmetic_v<F>)
      ScalarOrSchedule(F f)  // NOLINT: implicit by design
      : schedule_(Schedule(std::move(f))) {
    check_schedule();
  }
  /** True for a schedule. */
  bool is_schedule() const { return static_cast<bool>(schedule_); }
  /** The constant (0 for a schedule). */
  double value() const { return value_; }
  /** The schedule (empty for a constant). */
  const Schedule& schedule() const { return schedule_; }

 private:
  void check_schedule() const;
  double value_ = 0;
  Schedule schedule_;
};

/** Key paths of the parameter leaves, one per leaf ("layers[0].w.value"). */
using Paths = std::vector<std::string>;

/** Chooses the parameters a transform applies to (e.g. weight decay on matrices
 *  only): `[](const std::string& path, const ArrayType& t) { return t.ndim() >= 2; }`.
 *  An empty Mask selects every parameter. */
using Mask = std::function<bool(const std::string& path, const ArrayType& type)>;

/** A transform's state over flat leaves: per-parameter slots (one Array per
 *  parameter leaf, e.g. Adam's "mu") and scalars (e.g. "count"). A chain prefixes
 *  each member's keys with its name: "scale_by_adam.mu". */
struct TxState {
  std::map<std::string, std::vector<Array>> slots; /**< slot name -> one Array per leaf */
  std::map<std::string, Array> scalars;            /**< scalar name -> Array */
};
TSR_TREE(TxState, slots, scalars);

/** optax.GradientTransformation over flat leaves. `params` may be empty for
 *  transforms that do not read them; `paths` names the leaves (for masks). */
struct GradientTransformation {
  /** The state for these parameters. */
  std::function<TxState(const std::vector<Array>& params, const Paths& paths)> init;
  /** (transformed updates, next state). */
  std::function<std::pair<std::vector<Array>, TxState>(
      const std::vector<Array>& updates, const TxState& state, const std::vector<Array>& params,
      const Paths& paths)>
      update;
  /** Names the transform in state keys and errors ("scale_by_adam"). */
  std::string name;
};

// ---- building blocks (optax/_src/transform.py, transforms/) ------------------------

/** Leaves updates unchanged; no state. */
GradientTransformation identity();
/** Applies each transform in turn (optax.chain); the state holds every member's
 *  keys under "<member name>." ("<name>_<i>." for a repeated name). */
GradientTransformation chain(const std::vector<GradientTransformation>& transforms);
/** updates * step_size; no state. */
GradientTransformation scale(double step_size);
/** updates * step_size_fn(count); state: scalar "count". */
GradientTransformation scale_by_schedule(Schedule step_size_fn);
/** updates * -lr (flip_sign) or * lr; a Schedule keeps a scalar "count". */
GradientTransformation scale_by_learning_rate(const ScalarOrSchedule& learning_rate,
                                              bool flip_sign = true);
/** Momentum: t = g + decay * t; updates t (nesterov: g + decay * t). Slot "trace". */
GradientTransformation trace(double decay, bool nesterov = false);
/** Adam's scaling: bias-corrected mu / (sqrt(nu + eps_root) + eps). Slots "mu",
 *  "nu", scalar "count". */
GradientTransformation scale_by_adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                                     double eps_root = 0.0);
/** Lion's scaling: sign((1 - b1) g + b1 mu), then mu = (1 - b2) g + b2 mu. Slot "mu",
 *  scalar "count". */
GradientTransformation scale_by_lion(double b1 = 0.9, double b2 = 0.99);
/** updates + weight_decay * params on the masked leaves (decoupled weight decay);
 *  a Schedule keeps a scalar "count". Needs params. */
GradientTransformation add_decayed_weights(const ScalarOrSchedule& weight_decay = 0.0,
                                           Mask mask = {});
/** Scales all updates by max_norm / global_norm when the global norm exceeds max_norm. */
GradientTransformation clip_by_global_norm(double max_norm);

// ---- optimizers (optax/_src/alias.py) ----------------------------------------------

/** chain(trace(momentum, nesterov) when momentum is given, scale_by_learning_rate(lr)). */
GradientTransformation sgd(const ScalarOrSchedule& learning_rate,
                           std::optional<double> momentum = {}, bool nesterov = false);
/** chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(lr)). */
GradientTransformation adam(const ScalarOrSchedule& learning_rate, double b1 = 0.9,
                            double b2 = 0.999, double eps = 1e-8, double eps_root = 0.0);
/** chain(scale_by_adam, add_decayed_weights(weight_decay, mask), scale_by_learning_rate). */
GradientTransformation adamw(const ScalarOrSchedule& learning_rate, double b1 = 0.9,
                             double b2 = 0.999, double eps = 1e-8, double eps_root = 0.0,
                             const ScalarOrSchedule& weight_decay = 1e-4, Mask mask = {});
/** chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay, mask),
 *  scale_by_learning_rate(lr)). */
GradientTransformation lion(const ScalarOrSchedule& learning_rate, double b1 = 0.9,
                            double b2 = 0.99, const ScalarOrSchedule& weight_decay = 1e-3,
                            Mask mask = {});

// ---- schedules (optax/schedules/) --------------------------------------------------

/** value at every step. */
Schedule constant_schedule(double value);
/** init_value to end_value linearly over transition_steps, starting at
 *  transition_begin (transition_steps == 0: init_value forever, as optax). */
Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps,
                         int64_t transition_begin = 0);
/** init_value * ((1 - alpha) * (0.5 (1 + cos(pi min(count, decay_steps) / decay_steps)))^exponent
 *  + alpha); decay_steps > 0. */
Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha = 0.0,
                               double exponent = 1.0);
/** Linear warmup from init_value to peak_value over warmup_steps, then cosine decay
 *  to end_value; decay_steps counts the warmup too (as optax). */
Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps,
                                      int64_t decay_steps, double end_value = 0.0,
                                      double exponent = 1.0);
/** schedules[i](count - boundaries[i-1]) from boundaries[i-1] on (optax.join_schedules). */
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries);

// ---- the typed state and the calls over trees --------------------------------------

/** The state of a transform for parameters of type P: each slot is a tree like the
 *  parameters (same Structure and statics), so it shards and checkpoints like them.
 *  Key paths: `slots['scale_by_adam.mu'].layers[0].w.value`, `scalars['scale_by_adam.count']`. */
template <class P>
struct State {
  std::map<std::string, P> slots;       /**< per-parameter slots, each shaped like the params */
  std::map<std::string, Array> scalars; /**< step counts and other scalars */
};
/** Makes State<P> a tree node (TSR_TREE for a template). */
template <class P>
constexpr auto tsr_tree_describe(tree::detail::Tag<State<P>>) {
  return tree::detail::struct_info<State<P>>("optim::State",
                                             tree::detail::field("slots", &State<P>::slots),
                                             tree::detail::field("scalars", &State<P>::scalars));
}

namespace detail {
/** tx.init over leaves, checked: a non-empty transform, one Array per leaf in every slot. */
TxState call_init(const GradientTransformation& tx, const std::vector<Array>& params,
                  const Paths& paths);
/** tx.update over leaves, checked as call_init plus the updates' count. */
std::pair<std::vector<Array>, TxState> call_update(const GradientTransformation& tx,
                                                   const std::vector<Array>& updates,
                                                   const TxState& state,
                                                   const std::vector<Array>& params,
                                                   const Paths& paths);
/** ValueError unless `got` (the tree named `what`, its paths written from `root`) has
 *  the params' structure `want` and, leaf by leaf, their shapes (`got_leaves` may be
 *  empty to skip shapes). */
void check_like_params(const tree::Structure& want, const std::vector<Array>& want_leaves,
                       const tree::Structure& got, const std::vector<Array>& got_leaves,
                       const char* api, const std::string& what, const std::string& root);
/** sqrt of the sum of squares of every element (float32; float64 stays float64). */
Array global_norm_leaves(const std::vector<Array>& leaves);
/** (p + u).astype(p.dtype) per leaf. */
std::vector<Array> add_leaves(const std::vector<Array>& params, const std::vector<Array>& updates);
/** Every leaf (n, ...) as (num_micro, n / num_micro, ...), micro-batch k holding rows
 *  k, k + num_micro, ...; ValueError naming the leaf (by `paths`) when num_micro does
 *  not divide n. */
std::vector<Array> split_micro_batches(const std::vector<Array>& leaves, const Paths& paths,
                                       int64_t num_micro);
/** Micro-batch k of split leaves (dim 0 removed). */
std::vector<Array> micro_batch(const std::vector<Array>& split, int64_t k);
/** Micro-batches 1, 2, ... of split leaves (dim 0 kept): what the scan runs over. */
std::vector<Array> micro_batches_after_first(const std::vector<Array>& split);
/** The TxState of a typed state, each slot checked against the params' structure. */
template <class P>
TxState flat_state(const State<P>& s, const tree::Structure& params, const char* api) {
  TxState f;
  for (const auto& [k, t] : s.slots) {
    auto [l, st] = tree::flatten(t);
    check_like_params(params, {}, st, {}, api, "state slot '" + k + "'",
                      "state.slots['" + k + "']");
    f.slots.emplace(k, std::move(l));
  }
  f.scalars = s.scalars;
  return f;
}
/** The typed state of a TxState: every slot rebuilt with the params' structure. */
template <class P>
State<P> typed_state(const TxState& f, const tree::Structure& params) {
  State<P> s;
  for (const auto& [k, l] : f.slots) s.slots.emplace(k, tree::unflatten<P>(params, l));
  s.scalars = f.scalars;
  return s;
}
}  // namespace detail

/** The transform's state for these parameters (optax: tx.init(params)). Slots take
 *  each parameter's sharding. */
template <class P>
State<P> init(const GradientTransformation& tx, const P& params) {
  auto [leaves, s] = tree::flatten(params);
  return detail::typed_state<P>(detail::call_init(tx, leaves, s.paths()), s);
}

/** (updates, next state) for these gradients (optax: tx.update(grads, state,
 *  params)). grads, every state slot and params must share a structure (statics
 *  may differ) and leaf shapes; the results take params' structure and statics. */
template <class P>
std::pair<P, State<P>> update(const GradientTransformation& tx, const P& grads,
                              const State<P>& state, const P& params) {
  auto [pl, ps] = tree::flatten(params);
  auto [gl, gs] = tree::flatten(grads);
  detail::check_like_params(ps, pl, gs, gl, "optim.update", "grads", "grads");
  Paths paths = ps.paths();
  auto [ul, next] =
      detail::call_update(tx, gl, detail::flat_state(state, ps, "optim.update"), pl, paths);
  return {tree::unflatten<P>(ps, ul), detail::typed_state<P>(next, ps)};
}

/** params + updates, leaf by leaf, in each parameter's dtype (optax.apply_updates). */
template <class P>
P apply_updates(const P& params, const P& updates) {
  auto [pl, ps] = tree::flatten(params);
  auto [ul, us] = tree::flatten(updates);
  detail::check_like_params(ps, pl, us, ul, "optim.apply_updates", "updates", "updates");
  return tree::unflatten<P>(ps, detail::add_leaves(pl, ul));
}

/** sqrt(sum of x^2 over every element of every leaf), a float32 scalar (optax.global_norm). */
template <class T>
Array global_norm(const T& tree) {
  return detail::global_norm_leaves(tree::leaves(tree));
}

/** Gradient accumulation: splits the leading dim of every batch leaf into
 *  num_micro micro-batches (micro-batch k holds rows k, k + num_micro, ..., so a
 *  data-sharded batch stays spread over the devices), runs value_and_grad_fn(params,
 *  micro_batch) -> (loss, grads) on each under one scan, and returns the mean loss
 *  and mean grads: for a mean loss, the full batch's (loss, grads). ValueError when
 *  num_micro < 1 or does not divide a leaf's leading dim. */
template <class F, class P, class B>
auto accumulate_gradients(const F& value_and_grad_fn, const P& params, const B& batch,
                          int64_t num_micro) {
  using R = std::decay_t<decltype(value_and_grad_fn(params, batch))>;
  using G = std::decay_t<std::tuple_element_t<1, R>>;
  static_assert(std::is_same_v<std::decay_t<std::tuple_element_t<0, R>>, Array>,
                "accumulate_gradients: value_and_grad_fn must return (loss Array, grads)");
  auto [bl, bs] = tree::flatten(batch);
  std::vector<Array> split = detail::split_micro_batches(bl, bs.paths("batch"), num_micro);
  // The first micro-batch seeds the carry, so the carry has exactly the types
  // (shardings included) that value_and_grad_fn returns.
  R first = value_and_grad_fn(params, tree::unflatten<B>(bs, detail::micro_batch(split, 0)));
  std::pair<Array, G> total(std::get<0>(first), std::get<1>(first));
  if (num_micro > 1) {
    B rest = tree::unflatten<B>(bs, detail::micro_batches_after_first(split));
    auto body = [&](const std::pair<Array, G>& c, const B& micro) {
      R r = value_and_grad_fn(params, micro);
      // Leaf by leaf (tree::map2 over a bare Array finds tsr::flatten by ADL).
      auto [acc, st] = tree::flatten(c.second);
      std::vector<Array> more = tree::leaves(static_cast<const G&>(std::get<1>(r)));
      for (size_t i = 0; i < acc.size(); ++i) acc[i] = acc[i] + more[i];
      return std::pair<std::pair<Array, G>, std::tuple<>>(
          {c.first + std::get<0>(r), tree::unflatten<G>(st, acc)}, {});
    };
    total = scan(body, total, rest).first;
  }
  const double n = static_cast<double>(num_micro);
  G mean = tree::map([n](const Array& g) { return g / n; }, total.second);
  return std::pair<Array, G>(total.first / n, mean);
}

}  // namespace tsr::optim
