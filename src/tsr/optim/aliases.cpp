// The optimizers of optax/_src/alias.py: chains of the building blocks, same order.
#include <tsr/optim.h>

#include <optional>

#include "tsr/optim/common.h"

namespace tsr::optim {
namespace {
GradientTransformation named(GradientTransformation t, const char* name) {
  t.name = name;
  return t;
}
}  // namespace

GradientTransformation sgd(const ScalarOrSchedule& learning_rate, std::optional<double> momentum,
                           bool nesterov) {
  detail::check_rate(learning_rate, "optim.sgd", "learning_rate");
  if (momentum) detail::check_finite(*momentum, "optim.sgd", "momentum");
  return named(chain({momentum ? trace(*momentum, nesterov) : identity(),
                      scale_by_learning_rate(learning_rate)}),
               "sgd");
}

GradientTransformation adam(const ScalarOrSchedule& learning_rate, double b1, double b2, double eps,
                            double eps_root) {
  detail::check_rate(learning_rate, "optim.adam", "learning_rate");
  return named(chain({scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate)}),
               "adam");
}

GradientTransformation adamw(const ScalarOrSchedule& learning_rate, double b1, double b2,
                             double eps, double eps_root, const ScalarOrSchedule& weight_decay,
                             Mask mask) {
  detail::check_rate(learning_rate, "optim.adamw", "learning_rate");
  return named(chain({scale_by_adam(b1, b2, eps, eps_root),
                      add_decayed_weights(weight_decay, std::move(mask)),
                      scale_by_learning_rate(learning_rate)}),
               "adamw");
}

GradientTransformation lion(const ScalarOrSchedule& learning_rate, double b1, double b2,
                            const ScalarOrSchedule& weight_decay, Mask mask) {
  detail::check_rate(learning_rate, "optim.lion", "learning_rate");
  return named(chain({scale_by_lion(b1, b2), add_decayed_weights(weight_decay, std::move(mask)),
                      scale_by_learning_rate(learning_rate)}),
               "lion");
}

}  // namespace tsr::optim
