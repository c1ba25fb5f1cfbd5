// Schedules at several steps against values derived from optax's formulas, eagerly
// and under jit, and their argument errors.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "support/error_of.h"

namespace {

namespace optim = tsr::optim;
constexpr double kPi = std::numbers::pi;

double at(const optim::Schedule& s, int32_t count) {
  tsr::Array v = s(tsr::scalar<int32_t>(count));
  EXPECT_EQ(v.ndim(), 0);
  EXPECT_EQ(v.dtype(), tsr::float32);
  return v.item<double>();
}

void expect_schedule(const optim::Schedule& s, const std::vector<std::pair<int32_t, double>>& want,
                     const std::string& what) {
  for (auto [count, value] : want)
    EXPECT_NEAR(at(s, count), value, 1e-6 * (1 + std::abs(value))) << what << " at " << count;
}

TEST(OptimSchedule, ConstantIsTheValueAtEveryStep) {
  expect_schedule(optim::constant_schedule(0.25), {{0, 0.25}, {1, 0.25}, {1000000, 0.25}},
                  "constant");
}

TEST(OptimSchedule, LinearHoldsThenInterpolatesThenHolds) {
  // optax: count' = clip(count - begin, 0, steps); (init - end) (1 - count' / steps) + end.
  auto lin = [](double c) { return (1.0 - 0.1) * (1 - std::clamp(c - 5, 0.0, 10.0) / 10) + 0.1; };
  expect_schedule(
      optim::linear_schedule(1.0, 0.1, 10, 5),
      {{0, lin(0)}, {5, lin(5)}, {7, lin(7)}, {12, lin(12)}, {15, lin(15)}, {40, lin(40)}},
      "linear");
  EXPECT_NEAR(lin(7), 0.82, 1e-12);  // the reference itself, by hand
  expect_schedule(optim::linear_schedule(0.0, 2.0, 4), {{0, 0.0}, {1, 0.5}, {3, 1.5}, {9, 2.0}},
                  "linear from 0");
}

TEST(OptimSchedule, LinearWithZeroTransitionStepsIsConstant) {
  expect_schedule(optim::linear_schedule(0.3, 1.0, 0), {{0, 0.3}, {5, 0.3}}, "linear 0 steps");
}

TEST(OptimSchedule, CosineDecayFollowsOptaxFormula) {
  auto cosd = [](double init, double steps, double alpha, double expo, double c) {
    c = std::min(c, steps);
    double cosine = 0.5 * (1 + std::cos(kPi * c / steps));
    return init * ((1 - alpha) * std::pow(cosine, expo) + alpha);
  };
  std::vector<std::pair<int32_t, double>> want;
  for (int32_t c : {0, 25, 50, 99, 100, 150}) want.push_back({c, cosd(2.0, 100, 0.1, 1, c)});
  expect_schedule(optim::cosine_decay_schedule(2.0, 100, 0.1), want, "cosine alpha=0.1");
  EXPECT_NEAR(cosd(2.0, 100, 0.1, 1, 50), 1.1, 1e-12);
  want.clear();
  for (int32_t c : {0, 3, 7, 10}) want.push_back({c, cosd(1.0, 10, 0.0, 2.0, c)});
  expect_schedule(optim::cosine_decay_schedule(1.0, 10, 0.0, 2.0), want, "cosine exponent=2");
}

TEST(OptimSchedule, WarmupCosineCountsWarmupInDecaySteps) {
  // optax: linear(init -> peak over warmup) joined at `warmup` with
  // cosine(peak, decay_steps - warmup, alpha = end / peak) of (count - warmup).
  const double init = 0.0, peak = 1.0, end = 0.1;
  const int warmup = 10, decay = 110;
  auto ref = [&](double c) {
    if (c < warmup) return init + (peak - init) * c / warmup;
    double k = std::min(c - warmup, double(decay - warmup));
    double alpha = end / peak;
    return peak * ((1 - alpha) * 0.5 * (1 + std::cos(kPi * k / (decay - warmup))) + alpha);
  };
  std::vector<std::pair<int32_t, double>> want;
  for (int32_t c : {0, 5, 9, 10, 11, 60, 109, 110, 500}) want.push_back({c, ref(c)});
  auto s = optim::warmup_cosine_decay_schedule(init, peak, warmup, decay, end);
  expect_schedule(s, want, "warmup cosine");
  EXPECT_NEAR(at(s, 60), 0.55, 1e-6);  // half-way through the decay, by hand
  EXPECT_NEAR(at(s, 5), 0.5, 1e-6);
}

TEST(OptimSchedule, WarmupCosineWithoutWarmupIsCosine) {
  auto a = optim::warmup_cosine_decay_schedule(0.7, 2.0, 0, 20);
  auto b = optim::cosine_decay_schedule(2.0, 20);
  for (int32_t c : {0, 1, 10, 19, 20, 30}) EXPECT_NEAR(at(a, c), at(b, c), 1e-7) << c;
}

TEST(OptimSchedule, JoinSchedulesShiftsTheCount) {
  auto s =
      optim::join_schedules({optim::constant_schedule(1.0), optim::linear_schedule(2.0, 0.0, 4),
                             optim::constant_schedule(5.0)},
                            {3, 7});
  expect_schedule(s, {{0, 1.0}, {2, 1.0}, {3, 2.0}, {5, 1.0}, {7, 5.0}, {100, 5.0}}, "join");
}

TEST(OptimSchedule, JitEqualsEager) {
  auto s = optim::warmup_cosine_decay_schedule(1e-4, 1e-2, 5, 50, 1e-3);
  auto js = tsr::jit([s](const tsr::Array& c) { return s(c); });
  for (int32_t c : {0, 3, 5, 20, 49, 80}) {
    tsr::Array count = tsr::scalar<int32_t>(c);
    EXPECT_FLOAT_EQ(js(count).item<float>(), s(count).item<float>()) << c;
  }
  EXPECT_EQ(js.trace_count(), 1);
}

TEST(OptimSchedule, BadArgumentsAreValueErrors) {
  auto e = error_of<tsr::ValueError>([] { optim::cosine_decay_schedule(1.0, 0); });
  EXPECT_HAS(e, "[optim.cosine_decay_schedule] decay_steps must be positive");
  EXPECT_HAS(e, "Got decay_steps=0");
  e = error_of<tsr::ValueError>([] { optim::cosine_decay_schedule(1.0, -5); });
  EXPECT_HAS(e, "Got decay_steps=-5; expected decay_steps > 0");
  e = error_of<tsr::ValueError>([] { optim::warmup_cosine_decay_schedule(0, 1, 10, 10); });
  EXPECT_HAS(e, "decay_steps counts the warmup steps too");
  EXPECT_HAS(e, "Got decay_steps=10, warmup_steps=10");
  e = error_of<tsr::ValueError>([] { optim::warmup_cosine_decay_schedule(0, 1, -1, 10); });
  EXPECT_HAS(e, "warmup_steps must be non-negative");
  e = error_of<tsr::ValueError>([] { optim::linear_schedule(1, 0, -3); });
  EXPECT_HAS(e, "[optim.linear_schedule] transition_steps must be non-negative");
  e = error_of<tsr::ValueError>([] { optim::linear_schedule(1, 0, 3, -1); });
  EXPECT_HAS(e, "transition_begin must be non-negative. Got transition_begin=-1");
  e = error_of<tsr::ValueError>([] { optim::constant_schedule(NAN); });
  EXPECT_HAS(e, "value must be a finite number");
  e = error_of<tsr::ValueError>(
      [] { optim::join_schedules({optim::constant_schedule(1.0)}, {3}); });
  EXPECT_HAS(e, "one boundary fewer than schedules. Got 1 schedules and 1 boundaries");
  e = error_of<tsr::ValueError>([] { optim::adam(optim::Schedule{}); });
  EXPECT_HAS(e, "schedule is empty");
}

TEST(OptimSchedule, ANonScalarScheduleIsAnError) {
  optim::Schedule bad = [](const tsr::Array&) { return tsr::zeros({2}); };
  auto tx = optim::sgd(bad);
  tsr::Array p = tsr::ones({2});
  auto s = optim::init(tx, p);
  auto e = error_of<tsr::ValueError>([&] { optim::update(tx, p, s, p); });
  EXPECT_HAS(e, "the schedule must return a scalar. Got f32[2]");
}

}  // namespace
