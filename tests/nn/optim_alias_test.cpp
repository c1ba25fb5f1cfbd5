// sgd, adam, adamw and lion: three steps each against optax's update formulas
// written out in doubles on the host.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/optim_test_util.h"

namespace {

using namespace optim_test;
namespace optim = tsr::optim;

// One host step: the expected updates for grads g at params p and step t (1-based),
// advancing the host copy of the optimizer's state.
using HostStep = std::function<Host(const Host& g, const Host& p, int t)>;

// Runs three steps on device and host, comparing updates and parameters each step.
void run_three_steps(const optim::GradientTransformation& tx, const HostStep& host_step,
                     const std::string& what, double rtol = 2e-6) {
  Model params = model_of(params0());
  Host hp = params0();
  auto state = optim::init(tx, params);
  for (int t = 1; t <= 3; ++t) {
    Host g = grads_at(t);
    auto [u, next] = optim::update(tx, model_of(g), state, params);
    Host want_u = host_step(g, hp, t);
    expect_near(want_u, host_of(u), what + " updates at step " + std::to_string(t), rtol);
    params = optim::apply_updates(params, u);
    for (size_t l = 0; l < hp.size(); ++l)
      for (size_t j = 0; j < hp[l].size(); ++j) hp[l][j] += want_u[l][j];
    expect_near(hp, host_of(params), what + " params at step " + std::to_string(t), rtol);
    state = next;
  }
  EXPECT_EQ(params.w.names, (std::vector<std::string>{"embed", "mlp"}));
  EXPECT_EQ(params.width, 7);
}

// Elementwise helper over two host trees.
Host zip(const Host& a, const Host& b, const std::function<double(double, double)>& f) {
  Host r = a;
  for (size_t l = 0; l < a.size(); ++l)
    for (size_t j = 0; j < a[l].size(); ++j) r[l][j] = f(a[l][j], b[l][j]);
  return r;
}
Host zeros_like_host(const Host& a) {
  return zip(a, a, [](double, double) { return 0.0; });
}
double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

TEST(OptimAlias, SgdIsMinusLearningRateTimesGrad) {
  const double lr = 0.1;
  run_three_steps(
      optim::sgd(lr),
      [&](const Host& g, const Host&, int) {
        return zip(g, g, [&](double x, double) { return -lr * x; });
      },
      "sgd");
}

TEST(OptimAlias, SgdMomentumTracesGrads) {
  const double lr = 0.05, mom = 0.9;
  Host tr = zeros_like_host(params0());
  run_three_steps(
      optim::sgd(lr, mom),
      [&](const Host& g, const Host&, int) {
        tr = zip(g, tr, [&](double x, double t) { return x + mom * t; });
        return zip(tr, tr, [&](double t, double) { return -lr * t; });
      },
      "sgd momentum");
}

TEST(OptimAlias, SgdNesterovLooksAhead) {
  const double lr = 0.05, mom = 0.8;
  Host tr = zeros_like_host(params0());
  run_three_steps(
      optim::sgd(lr, mom, /*nesterov=*/true),
      [&](const Host& g, const Host&, int) {
        tr = zip(g, tr, [&](double x, double t) { return x + mom * t; });
        return zip(g, tr, [&](double x, double t) { return -lr * (x + mom * t); });
      },
      "sgd nesterov");
}

// The value a C++ (or Python) double constant has in float32 math (a weak scalar).
double f32(double x) { return static_cast<double>(static_cast<float>(x)); }

// One float32 ulp of Adam's bias correction 1 - b2^t is ~3e-5 of it at t = 2 (halved
// by the square root): Adam's updates are compared to 1e-5 relative.
constexpr double kAdamRtol = 1e-5;

// Adam's host step; wd and mask add the decoupled weight decay of adamw. Constants
// are rounded to float32 as optax's are on float32 parameters: 1 - 0.999^t is
// ~1.3e-5 off otherwise, which the bias correction magnifies a thousandfold.
HostStep adam_host(double lr, double b1, double b2, double eps, double eps_root, double wd,
                   std::vector<bool> decayed, Host& mu, Host& nu) {
  return [=, &mu, &nu](const Host& g, const Host& p, int t) {
    mu = zip(g, mu, [&](double x, double m) { return f32(1 - b1) * x + f32(b1) * m; });
    nu = zip(g, nu, [&](double x, double v) { return f32(1 - b2) * x * x + f32(b2) * v; });
    Host u = g;
    for (size_t l = 0; l < g.size(); ++l)
      for (size_t j = 0; j < g[l].size(); ++j) {
        double m_hat = mu[l][j] / (1 - f32(std::pow(f32(b1), t)));
        double v_hat = nu[l][j] / (1 - f32(std::pow(f32(b2), t)));
        double step = m_hat / (std::sqrt(v_hat + f32(eps_root)) + f32(eps));
        if (decayed[l]) step += f32(wd) * p[l][j];
        u[l][j] = -f32(lr) * step;
      }
    return u;
  };
}

TEST(OptimAlias, AdamMatchesBiasCorrectedMoments) {
  Host mu = zeros_like_host(params0()), nu = mu;
  run_three_steps(optim::adam(0.1),
                  adam_host(0.1, 0.9, 0.999, 1e-8, 0.0, 0.0, {false, false}, mu, nu), "adam",
                  kAdamRtol);
}

TEST(OptimAlias, AdamWithOtherBetasAndEpsRoot) {
  Host mu = zeros_like_host(params0()), nu = mu;
  run_three_steps(optim::adam(0.01, 0.5, 0.75, 1e-3, 1e-2),
                  adam_host(0.01, 0.5, 0.75, 1e-3, 1e-2, 0.0, {false, false}, mu, nu),
                  "adam (b1=0.5, b2=0.75, eps=1e-3, eps_root=1e-2)", kAdamRtol);
}

TEST(OptimAlias, AdamwDecaysEveryParameterByDefault) {
  Host mu = zeros_like_host(params0()), nu = mu;
  run_three_steps(optim::adamw(0.1, 0.9, 0.999, 1e-8, 0.0, 0.5),
                  adam_host(0.1, 0.9, 0.999, 1e-8, 0.0, 0.5, {true, true}, mu, nu), "adamw",
                  kAdamRtol);
}

TEST(OptimAlias, AdamwMaskSkipsUnselectedParameters) {
  // Decay matrices only: w is (2, 2), b is a vector.
  optim::Mask matrices = [](const std::string&, const tsr::ArrayType& t) { return t.ndim() >= 2; };
  Host mu = zeros_like_host(params0()), nu = mu;
  run_three_steps(optim::adamw(0.1, 0.9, 0.999, 1e-8, 0.0, 0.5, matrices),
                  adam_host(0.1, 0.9, 0.999, 1e-8, 0.0, 0.5, {true, false}, mu, nu), "adamw masked",
                  kAdamRtol);
}

TEST(OptimAlias, AdamwDefaultWeightDecayIsOneInTenThousand) {
  Host mu = zeros_like_host(params0()), nu = mu;
  run_three_steps(optim::adamw(0.1),
                  adam_host(0.1, 0.9, 0.999, 1e-8, 0.0, 1e-4, {true, true}, mu, nu),
                  "adamw defaults", kAdamRtol);
}

HostStep lion_host(double lr, double b1, double b2, double wd, std::vector<bool> decayed,
                   Host& mu) {
  return [=, &mu](const Host& g, const Host& p, int) {
    Host u = g;
    for (size_t l = 0; l < g.size(); ++l)
      for (size_t j = 0; j < g[l].size(); ++j) {
        double step = sgn((1 - b1) * g[l][j] + b1 * mu[l][j]);
        if (decayed[l]) step += wd * p[l][j];
        u[l][j] = -lr * step;
      }
    mu = zip(g, mu, [&](double x, double m) { return (1 - b2) * x + b2 * m; });
    return u;
  };
}

TEST(OptimAlias, LionTakesSignedSteps) {
  Host mu = zeros_like_host(params0());
  run_three_steps(optim::lion(0.01), lion_host(0.01, 0.9, 0.99, 1e-3, {true, true}, mu), "lion");
}

TEST(OptimAlias, LionMaskByPath) {
  // Select by key path: decay b only.
  optim::Mask only_b = [](const std::string& path, const tsr::ArrayType&) {
    return path.rfind("b.", 0) == 0;
  };
  Host mu = zeros_like_host(params0());
  run_three_steps(optim::lion(0.02, 0.5, 0.8, 0.25, only_b),
                  lion_host(0.02, 0.5, 0.8, 0.25, {false, true}, mu), "lion masked");
}

TEST(OptimAlias, AdamWithScheduleUsesTheStepCount) {
  // lr(count) = 0.1 * (count + 1): the k-th update (count k-1) uses 0.1 k.
  optim::Schedule lr = [](const tsr::Array& c) { return 0.1 * (c + 1).astype(tsr::float32); };
  Host mu = zeros_like_host(params0()), nu = mu;
  HostStep base = adam_host(1.0, 0.9, 0.999, 1e-8, 0.0, 0.0, {false, false}, mu, nu);
  run_three_steps(
      optim::adam(lr),
      [&](const Host& g, const Host& p, int t) {
        Host u = base(g, p, t);
        return zip(u, u, [&](double x, double) { return 0.1 * t * x; });
      },
      "adam with schedule", kAdamRtol);
}

TEST(OptimAlias, StateCountsSteps) {
  Model params = model_of(params0());
  auto tx = optim::adamw(optim::constant_schedule(0.1));
  auto state = optim::init(tx, params);
  ASSERT_EQ(state.scalars.size(), 2u);
  for (int t = 0; t < 3; ++t)
    state = optim::update(tx, model_of(grads_at(t)), state, params).second;
  EXPECT_EQ(state.scalars.at("scale_by_adam.count").item<int>(), 3);
  EXPECT_EQ(state.scalars.at("scale_by_learning_rate.count").item<int>(), 3);
  EXPECT_EQ(state.scalars.at("scale_by_adam.count").dtype(), tsr::int32);
}

}  // namespace
