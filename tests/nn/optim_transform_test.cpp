// The building blocks (chain, scale, trace, clipping, weight decay), the typed
// State<P> as a tree (statics, key paths, tree::map), apply_updates and global_norm.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/optim_test_util.h"

namespace {

using namespace optim_test;
namespace optim = tsr::optim;

double host_norm(const Host& h) {
  double s = 0;
  for (const auto& l : h)
    for (double x : l) s += x * x;
  return std::sqrt(s);
}

TEST(OptimTransform, GlobalNormIsTheNormOfAllLeaves) {
  Host g = grads_at(0);
  tsr::Array n = optim::global_norm(model_of(g));
  EXPECT_EQ(n.ndim(), 0);
  EXPECT_EQ(n.dtype(), tsr::float32);
  EXPECT_NEAR(n.item<double>(), host_norm(g), 1e-5);
  EXPECT_NEAR(optim::global_norm(std::vector<tsr::Array>{tsr::array({3.f}), tsr::array({4.f})})
                  .item<double>(),
              5.0, 1e-6);
  // bfloat16 leaves are squared and summed in float32.
  EXPECT_EQ(optim::global_norm(tsr::ones({4}, tsr::bfloat16)).dtype(), tsr::float32);
}

TEST(OptimTransform, ClipByGlobalNormScalesOnlyAboveTheLimit) {
  Model p = model_of(params0());
  Host g = grads_at(1);
  const double norm = host_norm(g);
  for (double max_norm : {norm * 2, norm / 3}) {
    auto tx = optim::clip_by_global_norm(max_norm);
    auto s = optim::init(tx, p);
    EXPECT_TRUE(s.slots.empty());
    EXPECT_TRUE(s.scalars.empty());
    Model u = optim::update(tx, model_of(g), s, p).first;
    const double f = norm < max_norm ? 1.0 : max_norm / norm;
    Host want = g;
    for (auto& l : want)
      for (double& x : l) x *= f;
    expect_near(want, host_of(u), "clip at " + std::to_string(max_norm));
    EXPECT_NEAR(optim::global_norm(u).item<double>(), std::min(norm, max_norm), 1e-5);
  }
}

TEST(OptimTransform, ChainAppliesInOrderAndPrefixesKeys) {
  // clip then adam then lr: the clipped gradient feeds Adam's moments.
  auto tx = optim::chain({optim::clip_by_global_norm(0.5), optim::adam(0.1)});
  Model p = model_of(params0());
  auto s = optim::init(tx, p);
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.slots) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"adam.scale_by_adam.mu", "adam.scale_by_adam.nu"}));
  EXPECT_EQ(s.scalars.count("adam.scale_by_adam.count"), 1u);
  Host g = grads_at(2);
  Model u = optim::update(tx, model_of(g), s, p).first;
  // First Adam step on the clipped g: -lr * m / (sqrt(v) + eps) with c = 0.5 / |g|,
  // m = c g, v = c^2 g^2 (1 - b2) / (1 - b2^1), b2 rounded to float32 as on device.
  const double c = 0.5 / host_norm(g), b2 = static_cast<float>(0.999);
  const double v_scale = static_cast<float>(1 - 0.999) / (1 - b2);
  Host want = g;
  for (auto& l : want)
    for (double& x : l) x = -0.1 * (c * x) / (std::sqrt(c * x * c * x * v_scale) + 1e-8);
  expect_near(want, host_of(u), "chain");
}

TEST(OptimTransform, RepeatedNamesInAChainGetTheirPosition) {
  auto tx = optim::chain({optim::trace(0.5), optim::trace(0.25)});
  tsr::Array p = tsr::ones({2});
  auto s = optim::init(tx, p);
  ASSERT_EQ(s.slots.size(), 2u);
  EXPECT_EQ(s.slots.count("trace.trace"), 1u);
  EXPECT_EQ(s.slots.count("trace_1.trace"), 1u);
  // Two traces: step 1 gives g, step 2 gives (g + 0.5 g) + 0.25 g.
  auto [u1, s1] = optim::update(tx, p, s, p);
  auto [u2, s2] = optim::update(tx, p, s1, p);
  EXPECT_FLOAT_EQ(u1.to_vector<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(u2.to_vector<float>()[0], 1.75f);
}

TEST(OptimTransform, ScaleAndIdentity) {
  tsr::Array g = tsr::array({1.f, -2.f});
  auto s = optim::init(optim::scale(-3.0), g);
  EXPECT_EQ(optim::update(optim::scale(-3.0), g, s, g).first.to_vector<float>(),
            (std::vector<float>{-3.f, 6.f}));
  EXPECT_EQ(optim::update(optim::identity(), g, s, g).first.to_vector<float>(),
            (std::vector<float>{1.f, -2.f}));
  EXPECT_EQ(
      optim::update(optim::scale_by_learning_rate(0.5, false), g, s, g).first.to_vector<float>(),
      (std::vector<float>{0.5f, -1.f}));
}

TEST(OptimTransform, AddDecayedWeightsWithScheduleCountsSteps) {
  // weight_decay(count) = count + 1: step k adds k * p.
  optim::Schedule wd = [](const tsr::Array& c) { return (c + 1).astype(tsr::float32); };
  auto tx = optim::add_decayed_weights(wd);
  tsr::Array p = tsr::array({2.f, -1.f}), g = tsr::array({0.5f, 0.5f});
  auto s = optim::init(tx, p);
  for (int k = 1; k <= 3; ++k) {
    auto [u, next] = optim::update(tx, g, s, p);
    EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{0.5f + 2.f * k, 0.5f - 1.f * k})) << k;
    s = next;
  }
  EXPECT_EQ(s.scalars.at("count").item<int>(), 3);
}

TEST(OptimTransform, CountSaturatesAtInt32Max) {
  auto tx = optim::scale_by_adam();
  tsr::Array p = tsr::ones({2});
  auto s = optim::init(tx, p);
  s.scalars["count"] = tsr::scalar<int32_t>(std::numeric_limits<int32_t>::max());
  auto next = optim::update(tx, p, s, p).second;
  EXPECT_EQ(next.scalars.at("count").item<int32_t>(), std::numeric_limits<int32_t>::max());
}

TEST(OptimTransform, StateIsATreeWithParamsStructureAndStatics) {
  Model p = model_of(params0());
  auto s = optim::init(optim::adamw(1e-3), p);
  const auto& mu = s.slots.at("scale_by_adam.mu");
  // Statics of the parameter nodes survive in every slot.
  EXPECT_EQ(mu.w.names, (std::vector<std::string>{"embed", "mlp"}));
  EXPECT_EQ(mu.b.names, (std::vector<std::string>{"mlp"}));
  EXPECT_EQ(mu.width, 7);
  EXPECT_EQ(mu.w.value.shape(), (tsr::Shape{2, 2}));
  EXPECT_EQ(mu.w.value.to_vector<float>(), (std::vector<float>(4, 0.f)));
  EXPECT_EQ(tsr::tree::structure(mu), tsr::tree::structure(p));
  // Readable key paths for checkpoints.
  std::vector<std::string> want = {
      "opt.slots['scale_by_adam.mu'].w.value", "opt.slots['scale_by_adam.mu'].b.value",
      "opt.slots['scale_by_adam.nu'].w.value", "opt.slots['scale_by_adam.nu'].b.value",
      "opt.scalars['scale_by_adam.count']"};
  EXPECT_EQ(tsr::tree::paths(s, "opt"), want);
  // tree::map takes it and keeps statics.
  auto doubled = tsr::tree::map([](const tsr::Array& a) { return a + a; }, s);
  EXPECT_EQ(doubled.slots.at("scale_by_adam.nu").w.names, mu.w.names);
  EXPECT_NE(tsr::tree::structure(s).str().find("optim::State"), std::string::npos);
}

TEST(OptimTransform, ApplyUpdatesKeepsParameterDtype) {
  tsr::Array p = tsr::array({1.f, 2.f}).astype(tsr::bfloat16);
  tsr::Array u = tsr::array({0.5f, -0.25f});
  tsr::Array r = optim::apply_updates(p, u);
  EXPECT_EQ(r.dtype(), tsr::bfloat16);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1.5f, 1.75f}));
}

TEST(OptimTransform, SlotsKeepTheirDtypeWhenGradsDiffer) {
  // bfloat16 params with float32 grads: the moments stay bfloat16 (optax's cast_like),
  // so the state's types do not change between steps (a jit cache hit).
  tsr::Array p = tsr::ones({2}, tsr::bfloat16), g = tsr::ones({2});
  auto tx = optim::adam(0.1);
  auto s = optim::init(tx, p);
  auto next = optim::update(tx, g, s, p).second;
  EXPECT_EQ(next.slots.at("scale_by_adam.mu").dtype(), tsr::bfloat16);
  EXPECT_EQ(next.slots.at("scale_by_adam.nu").dtype(), tsr::bfloat16);
}

}  // namespace
