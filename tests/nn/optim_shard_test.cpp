// Optimizer state on a (4, 2) ("data", "model") mesh: slots keep each parameter's
// sharding through init, eager and jitted updates; sharded runs equal the unsharded
// single-device run (the oracle); jit equals eager.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <string>
#include <tuple>
#include <vector>

#include "nn/optim_test_util.h"
#include "support/arrays.h"

namespace {

namespace optim = tsr::optim;
using optim_test::TParam;
using tsr::Array;
using tsr::P;

struct Net {
  TParam w;  // (8, 4)
  TParam b;  // (4,)
};
TSR_TREE(Net, w, b);

struct Batch {
  Array x;  // (16, 8)
  Array y;  // (16, 4)
};
TSR_TREE(Batch, x, y);

Array loss_fn(const Net& p, const Batch& b) {
  return tsr::mean(tsr::square(tsr::tanh(tsr::matmul(b.x, p.w.value)) + p.b.value - b.y));
}

Net net() {
  return {{test::ramp({8, 4}, 0.05, -0.7), {"embed", "mlp"}},
          {test::ramp({4}, 0.2, -0.3), {"mlp"}}};
}
Batch data() {
  return {tsr::sin(test::ramp({16, 8}, 0.3, 0.0)), tsr::cos(test::ramp({16, 4}, 0.2, 0.5))};
}

tsr::Mesh mesh(tsr::AxisType t) { return tsr::make_mesh({4, 2}, {"data", "model"}, {t, t}); }

Net place(const Net& n, const tsr::Mesh& m) {
  Net r = n;
  r.w.value = tsr::device_put(n.w.value, tsr::NamedSharding(m, P("data", "model")));
  r.b.value = tsr::device_put(n.b.value, tsr::NamedSharding(m, P("model")));
  return r;
}
Batch place(const Batch& b, const tsr::Mesh& m) {
  return tsr::shard(b, tsr::Placement(tsr::NamedSharding(m, P("data"))));
}

void expect_like(const Array& want, const Array& got, const std::string& what) {
  EXPECT_TRUE(got.sharding().is_equivalent_to(want.sharding(), want.ndim()))
      << what << ": " << got.sharding().str() << " vs " << want.sharding().str();
}

// Every slot leaf laid out like its parameter; the step counts replicated on the mesh.
void expect_state_like(const optim::State<Net>& s, const Net& p, const tsr::Mesh& m,
                       const std::string& when) {
  for (const auto& [k, slot] : s.slots) {
    expect_like(p.w.value, slot.w.value, when + " " + k + ".w");
    expect_like(p.b.value, slot.b.value, when + " " + k + ".b");
  }
  for (const auto& [k, c] : s.scalars) {
    ASSERT_TRUE(c.sharding().concrete_mesh()) << k;
    EXPECT_EQ(*c.sharding().concrete_mesh(), m) << when << " " << k;
    EXPECT_TRUE(c.sharding().is_fully_replicated()) << when << " " << k;
  }
}

optim::GradientTransformation tx() {
  return optim::chain({optim::clip_by_global_norm(1.0),
                       optim::adamw(optim::warmup_cosine_decay_schedule(0, 0.05, 2, 10), 0.9, 0.999,
                                    1e-8, 0.0, 0.01)});
}

// One training step: value_and_grad, update, apply.
std::tuple<Net, optim::State<Net>, Array> train_step(const optim::GradientTransformation& t,
                                                     const Net& p, const optim::State<Net>& s,
                                                     const Batch& b) {
  auto [loss, g] = tsr::value_and_grad(loss_fn)(p, b);
  auto [u, s2] = optim::update(t, g, s, p);
  return {optim::apply_updates(p, u), s2, loss};
}

void expect_same_values(const Net& want, const Net& got, const std::string& what) {
  test::expect_close(want.w.value, got.w.value, 2e-6, what + " w");
  test::expect_close(want.b.value, got.b.value, 2e-6, what + " b");
}

TEST(OptimShard, SlotsTakeParameterShardingsOnAutoMesh) {
  auto m = mesh(tsr::AxisType::Auto);
  Net p = place(net(), m);
  auto t = tx();
  auto s = optim::init(t, p);
  ASSERT_EQ(s.slots.size(), 2u);
  ASSERT_FALSE(s.slots.at("adamw.scale_by_adam.mu").w.value.sharding().is_fully_replicated());
  expect_state_like(s, p, m, "after init");
  // Eager update.
  auto [p1, s1, l1] = train_step(t, p, s, place(data(), m));
  expect_like(p.w.value, p1.w.value, "eager params");
  expect_state_like(s1, p, m, "after an eager update");
  // Jitted updates.
  auto step = tsr::jit([t](const Net& p, const optim::State<Net>& s, const Batch& b) {
    return train_step(t, p, s, b);
  });
  Net pj = p;
  auto sj = s;
  for (int i = 0; i < 3; ++i) std::tie(pj, sj, std::ignore) = step(pj, sj, place(data(), m));
  expect_like(p.w.value, pj.w.value, "jitted params");
  expect_state_like(sj, p, m, "after jitted updates");
  EXPECT_EQ(step.trace_count(), 1);
  EXPECT_EQ(sj.slots.at("adamw.scale_by_adam.mu").w.names,
            (std::vector<std::string>{"embed", "mlp"}));
}

TEST(OptimShard, ShardedStepsEqualTheUnshardedOracle) {
  auto t = tx();
  auto step = tsr::jit([t](const Net& p, const optim::State<Net>& s, const Batch& b) {
    return train_step(t, p, s, b);
  });
  Net po = net();
  auto so = optim::init(t, po);
  for (auto kind : {tsr::AxisType::Auto, tsr::AxisType::Explicit}) {
    auto m = mesh(kind);
    Net ps = place(net(), m), pe = po;
    auto ss = optim::init(t, ps);
    auto se = so;
    for (int i = 0; i < 3; ++i) {
      Array ls, le;
      std::tie(ps, ss, ls) = step(ps, ss, place(data(), m));
      std::tie(pe, se, le) = train_step(t, pe, se, data());  // eager, one device
      EXPECT_NEAR(ls.item<double>(), le.item<double>(), 1e-6) << i;
    }
    const std::string what = kind == tsr::AxisType::Auto ? "auto" : "explicit";
    expect_same_values(pe, ps, what + " params");
    expect_same_values(se.slots.at("adamw.scale_by_adam.nu"), ss.slots.at("adamw.scale_by_adam.nu"),
                       what + " nu");
    expect_state_like(ss, ps, m, what);
    EXPECT_EQ(ss.scalars.at("adamw.scale_by_learning_rate.count").item<int>(), 3);
  }
}

TEST(OptimShard, ExplicitMeshSlotsCarryTheShardingInTheirType) {
  auto m = mesh(tsr::AxisType::Explicit);
  Net p = place(net(), m);
  auto s = optim::init(optim::lion(1e-3), p);
  EXPECT_EQ(tsr::typeof(s.slots.at("scale_by_lion.mu").w.value).str(), "f32[8@data,4@model]");
  EXPECT_EQ(tsr::typeof(s.slots.at("scale_by_lion.mu").b.value).str(), "f32[4@model]");
}

TEST(OptimShard, JitEqualsEagerUnsharded) {
  auto t = tx();
  auto step = tsr::jit([t](const Net& p, const optim::State<Net>& s, const Batch& b) {
    return train_step(t, p, s, b);
  });
  Net pj = net(), pe = net();
  auto sj = optim::init(t, pj), se = sj;
  for (int i = 0; i < 3; ++i) {
    std::tie(pj, sj, std::ignore) = step(pj, sj, data());
    std::tie(pe, se, std::ignore) = train_step(t, pe, se, data());
  }
  expect_same_values(pe, pj, "jit vs eager");
  expect_same_values(se.slots.at("adamw.scale_by_adam.mu"), sj.slots.at("adamw.scale_by_adam.mu"),
                     "mu");
  EXPECT_EQ(sj.scalars.at("adamw.scale_by_adam.count").item<int>(), 3);
}

TEST(OptimShard, StateGoesThroughJitAndShard) {
  auto t = tx();
  // init under jit: same tree, zero slots, int32 count 0.
  auto jinit = tsr::jit([t](const Net& p) { return optim::init(t, p); });
  auto sj = jinit(net());
  auto se = optim::init(t, net());
  EXPECT_EQ(tsr::tree::structure(sj), tsr::tree::structure(se));
  EXPECT_EQ(sj.slots.at("adamw.scale_by_adam.nu").w.value.to_vector<float>(),
            std::vector<float>(32, 0.f));
  EXPECT_EQ(sj.scalars.at("adamw.scale_by_adam.count").dtype(), tsr::int32);
  EXPECT_EQ(sj.scalars.at("adamw.scale_by_adam.count").item<int>(), 0);
  // shard lays out the whole state by a policy over its key paths.
  auto m = mesh(tsr::AxisType::Auto);
  tsr::ShardPolicy policy = [&](const std::string& path, const tsr::ArrayType& ty) {
    bool w = path.find(".w.value") != std::string::npos;
    return tsr::Placement(tsr::NamedSharding(m, w && ty.ndim() == 2 ? P("data", "model") : P()));
  };
  auto placed = tsr::shard(se, policy);
  expect_like(place(net(), m).w.value, placed.slots.at("adamw.scale_by_adam.mu").w.value,
              "sharded state mu.w");
  EXPECT_TRUE(placed.slots.at("adamw.scale_by_adam.mu").b.value.sharding().is_fully_replicated());
}

TEST(OptimShard, AccumulationOverADataShardedBatchEqualsTheOracle) {
  auto m = mesh(tsr::AxisType::Auto);
  auto vg = tsr::value_and_grad(loss_fn);
  auto acc = tsr::jit(
      [vg](const Net& p, const Batch& b) { return optim::accumulate_gradients(vg, p, b, 2); });
  auto [ls, gs] = acc(place(net(), m), place(data(), m));
  auto [lo, go] = vg(net(), data());
  EXPECT_NEAR(ls.item<double>(), lo.item<double>(), 1e-6);
  expect_same_values(go, gs, "accumulated grads");
}

}  // namespace
