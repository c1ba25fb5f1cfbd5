// Learning-rate schedules with optax's formulas (optax/schedules/_schedule.py, _join.py):
// traceable functions of the int32 step count returning float32 scalars.
#include <tsr/error.h>
#include <tsr/ops.h>
#include <tsr/optim.h>

#include <cstdint>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "tsr/optim/common.h"

namespace tsr::optim {
namespace {

void check_steps(int64_t v, bool positive, const std::string& api, const char* what,
                 const char* fix) {
  if (positive ? v > 0 : v >= 0) return;
  throw ValueError("[" + api + "] " + what + " must be " +
                   (positive ? "positive" : "non-negative") + ". Got " + what + "=" +
                   std::to_string(v) + "; expected " + what + (positive ? " > 0" : " >= 0") + ". " +
                   fix);
}

}  // namespace

Schedule constant_schedule(double value) {
  detail::check_finite(value, "optim.constant_schedule", "value");
  return [value](const Array& count) { return full_like(count, value, float32); };
}

Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps,
                         int64_t transition_begin) {
  const std::string api = "optim.linear_schedule";
  detail::check_finite(init_value, api, "init_value");
  detail::check_finite(end_value, api, "end_value");
  check_steps(transition_steps, false, api, "transition_steps",
              "Pass the number of steps from init_value to end_value (0: init_value forever).");
  check_steps(transition_begin, false, api, "transition_begin",
              "Pass the step at which the transition starts.");
  if (transition_steps == 0) return constant_schedule(init_value);  // as optax
  return [=](const Array& count) {
    Array c = clip(count - transition_begin, int64_t{0}, transition_steps);
    Array frac = 1 - c / transition_steps;
    return (init_value - end_value) * astype(frac, float32) + end_value;
  };
}

Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha,
                               double exponent) {
  const std::string api = "optim.cosine_decay_schedule";
  detail::check_finite(init_value, api, "init_value");
  detail::check_finite(alpha, api, "alpha");
  detail::check_finite(exponent, api, "exponent");
  check_steps(decay_steps, true, api, "decay_steps",
              "Pass the number of steps over which to decay.");
  const double steps = static_cast<double>(decay_steps);
  return [=](const Array& count) {
    Array c = minimum(astype(count, float32), steps);
    Array cosine = 0.5 * (1 + cos(std::numbers::pi * c / steps));
    if (exponent != 1.0) cosine = power(cosine, exponent);
    return init_value * ((1 - alpha) * cosine + alpha);
  };
}

Schedule warmup_cosine_decay_schedule(double init_value, double peak_value, int64_t warmup_steps,
                                      int64_t decay_steps, double end_value, double exponent) {
  const std::string api = "optim.warmup_cosine_decay_schedule";
  detail::check_finite(peak_value, api, "peak_value");
  detail::check_finite(end_value, api, "end_value");
  check_steps(warmup_steps, false, api, "warmup_steps", "Pass 0 for no warmup.");
  if (decay_steps <= warmup_steps)
    throw ValueError("[" + api +
                     "] decay_steps counts the warmup steps too, so it must exceed "
                     "warmup_steps. Got decay_steps=" +
                     std::to_string(decay_steps) +
                     ", warmup_steps=" + std::to_string(warmup_steps) +
                     "; expected decay_steps > warmup_steps. Pass the total length of the "
                     "schedule (warmup included) as decay_steps.");
  const double alpha = peak_value == 0.0 ? 0.0 : end_value / peak_value;
  return join_schedules(
      {linear_schedule(init_value, peak_value, warmup_steps),
       cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)},
      {warmup_steps});
}

Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries) {
  const std::string api = "optim.join_schedules";
  if (schedules.empty() || boundaries.size() + 1 != schedules.size())
    throw ValueError("[" + api + "] there must be one boundary fewer than schedules. Got " +
                     std::to_string(schedules.size()) + " schedules and " +
                     std::to_string(boundaries.size()) + " boundaries; expected " +
                     std::to_string(boundaries.size() + 1) +
                     " schedules. Pass the step at which each next schedule starts.");
  for (const Schedule& s : schedules) static_cast<void>(ScalarOrSchedule(s));  // empty: error
  return [schedules = std::move(schedules), boundaries = std::move(boundaries)](const Array& step) {
    Array out = schedules[0](step);
    for (size_t i = 0; i < boundaries.size(); ++i)
      out = where(step < boundaries[i], out, schedules[i + 1](step - boundaries[i]));
    return out;
  };
}

}  // namespace tsr::optim
