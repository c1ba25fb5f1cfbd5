// The building blocks of optax (transform.py, transforms/): each a GradientTransformation
// over flat leaves, with optax's update formulas, in optax's order of operations.
#include <tsr/error.h>
#include <tsr/ops.h>
#include <tsr/optim.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tsr/optim/common.h"

namespace tsr::optim {
namespace {

using Leaves = std::vector<Array>;
using Update = std::pair<Leaves, TxState>;

TxState no_state(const Leaves&, const Paths&) { return {}; }

// A stateless transform from a per-call function of the updates.
GradientTransformation stateless(std::string name,
                                 std::function<Leaves(const Leaves&, const Leaves&)> f) {
  GradientTransformation t;
  t.name = name;
  t.init = no_state;
  t.update = [f = std::move(f), name](const Leaves& u, const TxState& s, const Leaves& p,
                                      const Paths&) -> Update {
    detail::check_counts(u, p, name);
    return {f(u, p), s};
  };
  return t;
}

// A schedule's value, checked to be a scalar.
Array schedule_value(const Schedule& f, const Array& count, const std::string& api) {
  Array v = f(count);
  if (!v.valid() || v.ndim() != 0)
    throw ValueError("[" + api + "] the schedule must return a scalar. Got " +
                     (v.valid() ? typeof(v).str() : std::string("an invalid Array")) +
                     "; expected a rank-0 Array. Return e.g. full_like(count, 0.1, float32).");
  return v;
}

// The key prefix of each chain member: its name ('.' would split keys), unique.
std::vector<std::string> chain_prefixes(const std::vector<GradientTransformation>& txs) {
  std::vector<std::string> out;
  for (size_t i = 0; i < txs.size(); ++i) {
    std::string p = txs[i].name.empty() ? "transform" : txs[i].name;
    for (char& c : p)
      if (c == '.') c = '_';
    for (const auto& q : out)
      if (q == p) p += "_" + std::to_string(i);
    out.push_back(p);
  }
  return out;
}

TxState sub_state(const TxState& s, const std::string& prefix) {
  TxState r;
  const std::string pre = prefix + ".";
  for (const auto& [k, v] : s.slots)
    if (k.rfind(pre, 0) == 0) r.slots.emplace(k.substr(pre.size()), v);
  for (const auto& [k, v] : s.scalars)
    if (k.rfind(pre, 0) == 0) r.scalars.emplace(k.substr(pre.size()), v);
  return r;
}

void merge_state(TxState& into, const TxState& part, const std::string& prefix) {
  for (const auto& [k, v] : part.slots) into.slots[prefix + "." + k] = v;
  for (const auto& [k, v] : part.scalars) into.scalars[prefix + "." + k] = v;
}

}  // namespace

GradientTransformation identity() {
  return stateless("identity", [](const Leaves& u, const Leaves&) { return u; });
}

GradientTransformation chain(const std::vector<GradientTransformation>& transforms) {
  for (size_t i = 0; i < transforms.size(); ++i)
    if (!transforms[i].init || !transforms[i].update)
      throw ValueError("[optim.chain] transform " + std::to_string(i) + " ('" + transforms[i].name +
                       "') is empty. Got a GradientTransformation without init or update; "
                       "expected built transforms. Build each with optim::adam, optim::trace, ...");
  GradientTransformation t;
  t.name = "chain";
  auto prefixes = chain_prefixes(transforms);
  t.init = [transforms, prefixes](const Leaves& p, const Paths& paths) {
    TxState s;
    for (size_t i = 0; i < transforms.size(); ++i)
      merge_state(s, transforms[i].init(p, paths), prefixes[i]);
    return s;
  };
  t.update = [transforms, prefixes](const Leaves& u, const TxState& s, const Leaves& p,
                                    const Paths& paths) -> Update {
    Leaves cur = u;
    TxState next;
    for (size_t i = 0; i < transforms.size(); ++i) {
      auto [v, ns] = transforms[i].update(cur, sub_state(s, prefixes[i]), p, paths);
      cur = std::move(v);
      merge_state(next, ns, prefixes[i]);
    }
    return {cur, next};
  };
  return t;
}

GradientTransformation scale(double step_size) {
  detail::check_finite(step_size, "optim.scale", "step_size");
  return stateless("scale", [step_size](const Leaves& u, const Leaves&) {
    Leaves r;
    for (const Array& g : u) r.push_back(step_size * g);
    return r;
  });
}

GradientTransformation scale_by_schedule(Schedule step_size_fn) {
  static_cast<void>(ScalarOrSchedule(step_size_fn));  // ValueError when empty
  GradientTransformation t;
  t.name = "scale_by_schedule";
  t.init = [](const Leaves& p, const Paths&) {
    TxState s;
    s.scalars["count"] = detail::zero_count(p);
    return s;
  };
  t.update = [f = step_size_fn](const Leaves& u, const TxState& s, const Leaves& p,
                                const Paths&) -> Update {
    detail::check_counts(u, p, "scale_by_schedule");
    const Array& count = detail::scalar(s, "count", "scale_by_schedule");
    Array step = schedule_value(f, count, "optim.scale_by_schedule");
    Leaves r;
    for (const Array& g : u) r.push_back(astype(step, g.dtype()) * g);
    TxState n;
    n.scalars["count"] = detail::safe_increment(count);
    return {r, n};
  };
  return t;
}

GradientTransformation scale_by_learning_rate(const ScalarOrSchedule& learning_rate,
                                              bool flip_sign) {
  detail::check_rate(learning_rate, "optim.scale_by_learning_rate", "learning_rate");
  const double m = flip_sign ? -1.0 : 1.0;
  GradientTransformation t;
  if (learning_rate.is_schedule()) {
    Schedule lr = learning_rate.schedule();
    t = scale_by_schedule([lr, m](const Array& count) { return m * lr(count); });
  } else {
    t = scale(m * learning_rate.value());
  }
  t.name = "scale_by_learning_rate";
  return t;
}

GradientTransformation trace(double decay, bool nesterov) {
  detail::check_finite(decay, "optim.trace", "decay");
  GradientTransformation t;
  t.name = "trace";
  t.init = [](const Leaves& p, const Paths&) {
    TxState s;
    Leaves& tr = s.slots["trace"];
    for (const Array& x : p) tr.push_back(detail::zeros_like_param(x));
    return s;
  };
  t.update = [decay, nesterov](const Leaves& u, const TxState& s, const Leaves& p,
                               const Paths&) -> Update {
    detail::check_counts(u, p, "trace");
    const Leaves& tr = detail::slot(s, "trace", u.size(), "trace");
    Leaves r, nt;
    for (size_t i = 0; i < u.size(); ++i) {
      Array t1 = u[i] + decay * tr[i];
      r.push_back(nesterov ? u[i] + decay * t1 : t1);
      nt.push_back(astype(t1, tr[i].dtype()));
    }
    TxState n;
    n.slots["trace"] = nt;
    return {r, n};
  };
  return t;
}

GradientTransformation scale_by_adam(double b1, double b2, double eps, double eps_root) {
  detail::check_in(b1, 0, 1, false, "optim.scale_by_adam", "b1");
  detail::check_in(b2, 0, 1, false, "optim.scale_by_adam", "b2");
  detail::check_finite(eps, "optim.scale_by_adam", "eps");
  detail::check_finite(eps_root, "optim.scale_by_adam", "eps_root");
  detail::check_in(eps, 0, HUGE_VAL, false, "optim.scale_by_adam", "eps");
  detail::check_in(eps_root, 0, HUGE_VAL, false, "optim.scale_by_adam", "eps_root");
  GradientTransformation t;
  t.name = "scale_by_adam";
  t.init = [](const Leaves& p, const Paths&) {
    TxState s;
    Leaves &mu = s.slots["mu"], &nu = s.slots["nu"];
    for (const Array& x : p) {
      mu.push_back(detail::zeros_like_param(x));
      nu.push_back(detail::zeros_like_param(x));
    }
    s.scalars["count"] = detail::zero_count(p);
    return s;
  };
  t.update = [b1, b2, eps, eps_root](const Leaves& u, const TxState& s, const Leaves& p,
                                     const Paths&) -> Update {
    detail::check_counts(u, p, "scale_by_adam");
    const Leaves& mu = detail::slot(s, "mu", u.size(), "scale_by_adam");
    const Leaves& nu = detail::slot(s, "nu", u.size(), "scale_by_adam");
    Array count = detail::safe_increment(detail::scalar(s, "count", "scale_by_adam"));
    // Bias corrections in float32 (decay**count would round to 1 in bfloat16).
    Array c = astype(count, float32);
    Array bc1 = 1.0 - power(b1, c), bc2 = 1.0 - power(b2, c);
    Leaves r, m2, v2;
    for (size_t i = 0; i < u.size(); ++i) {
      Array m = (1.0 - b1) * u[i] + b1 * mu[i];
      Array v = (1.0 - b2) * square(u[i]) + b2 * nu[i];
      Array m_hat = m / astype(bc1, m.dtype());
      Array v_hat = v / astype(bc2, v.dtype());
      r.push_back(m_hat / (sqrt(v_hat + eps_root) + eps));
      m2.push_back(astype(m, mu[i].dtype()));
      v2.push_back(astype(v, nu[i].dtype()));
    }
    TxState n;
    n.slots["mu"] = m2;
    n.slots["nu"] = v2;
    n.scalars["count"] = count;
    return {r, n};
  };
  return t;
}

GradientTransformation scale_by_lion(double b1, double b2) {
  detail::check_in(b1, 0, 1, true, "optim.scale_by_lion", "b1");
  detail::check_in(b2, 0, 1, true, "optim.scale_by_lion", "b2");
  GradientTransformation t;
  t.name = "scale_by_lion";
  t.init = [](const Leaves& p, const Paths&) {
    TxState s;
    Leaves& mu = s.slots["mu"];
    for (const Array& x : p) mu.push_back(detail::zeros_like_param(x));
    s.scalars["count"] = detail::zero_count(p);
    return s;
  };
  t.update = [b1, b2](const Leaves& u, const TxState& s, const Leaves& p, const Paths&) -> Update {
    detail::check_counts(u, p, "scale_by_lion");
    const Leaves& mu = detail::slot(s, "mu", u.size(), "scale_by_lion");
    Leaves r, m2;
    for (size_t i = 0; i < u.size(); ++i) {
      r.push_back(sign((1.0 - b1) * u[i] + b1 * mu[i]));
      m2.push_back(astype((1.0 - b2) * u[i] + b2 * mu[i], mu[i].dtype()));
    }
    TxState n;
    n.slots["mu"] = m2;
    n.scalars["count"] = detail::safe_increment(detail::scalar(s, "count", "scale_by_lion"));
    return {r, n};
  };
  return t;
}

GradientTransformation add_decayed_weights(const ScalarOrSchedule& weight_decay, Mask mask) {
  detail::check_rate(weight_decay, "optim.add_decayed_weights", "weight_decay");
  GradientTransformation t;
  t.name = "add_decayed_weights";
  const bool sched = weight_decay.is_schedule();
  t.init = [sched](const Leaves& p, const Paths&) {
    TxState s;
    if (sched) s.scalars["count"] = detail::zero_count(p);
    return s;
  };
  t.update = [weight_decay, mask](const Leaves& u, const TxState& s, const Leaves& p,
                                  const Paths& paths) -> Update {
    const std::string api = "optim.add_decayed_weights";
    if (p.empty() && !u.empty())
      throw ValueError("[" + api +
                       "] weight decay needs the parameters. Got no params; expected one per "
                       "update. Pass params to optim::update (or to the transform's update).");
    detail::check_counts(u, p, "add_decayed_weights");
    if (mask && paths.size() != p.size())
      throw ValueError("[" + api + "] a mask selects parameters by key path. Got " +
                       std::to_string(paths.size()) + " paths; expected " +
                       std::to_string(p.size()) +
                       ". Call through optim::init / optim::update, which pass the paths.");
    TxState n;
    Array step;
    if (weight_decay.is_schedule()) {
      const Array& count = detail::scalar(s, "count", "add_decayed_weights");
      step = schedule_value(weight_decay.schedule(), count, api);
      n.scalars["count"] = detail::safe_increment(count);
    } else if (weight_decay.value() == 0.0) {
      return {u, n};  // as optax: a zero constant adds nothing
    }
    Leaves r;
    for (size_t i = 0; i < u.size(); ++i) {
      if (mask && !mask(paths[i], typeof(p[i]))) {
        r.push_back(u[i]);
      } else if (step.valid()) {
        r.push_back(u[i] + astype(step, p[i].dtype()) * p[i]);
      } else {
        r.push_back(u[i] + weight_decay.value() * p[i]);
      }
    }
    return {r, n};
  };
  return t;
}

GradientTransformation clip_by_global_norm(double max_norm) {
  detail::check_finite(max_norm, "optim.clip_by_global_norm", "max_norm");
  if (!(max_norm > 0))
    throw ValueError("[optim.clip_by_global_norm] max_norm must be positive. Got max_norm=" +
                     detail::num(max_norm) +
                     "; expected max_norm > 0. Pass the largest "
                     "global norm the updates may have, e.g. 1.0.");
  return stateless("clip_by_global_norm", [max_norm](const Leaves& u, const Leaves&) {
    Array norm = detail::global_norm_leaves(u);
    Array keep = norm < max_norm;
    Leaves r;
    for (const Array& g : u) r.push_back(where(keep, g, (g / astype(norm, g.dtype())) * max_norm));
    return r;
  });
}

}  // namespace tsr::optim
