// Every user mistake with the optimizers is a ValueError that says what is wrong,
// what was given and expected, and how to fix it.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/error_of.h"

namespace {

namespace optim = tsr::optim;
using tsr::Array;
using Dict = std::map<std::string, Array>;

Dict two() { return {{"a", tsr::ones({2})}, {"b", tsr::ones({3})}}; }

TEST(OptimErrors, GradsWithAnotherStructure) {
  auto tx = optim::adam(0.1);
  auto s = optim::init(tx, two());
  Dict g = {{"a", tsr::ones({2})}, {"c", tsr::ones({3})}};
  auto e = error_of<tsr::ValueError>([&] { optim::update(tx, g, s, two()); });
  EXPECT_HAS(e, "[optim.update] grads and params differ in tree structure at grads. Got ");
  EXPECT_HAS(e, "'c'");
  EXPECT_HAS(e, "Pass grads with the params' tree structure.");
  e = error_of<tsr::ValueError>([&] { optim::update(tx, Dict{{"a", tsr::ones({2})}}, s, two()); });
  EXPECT_HAS(e, "grads and params differ in tree structure");
}

TEST(OptimErrors, GradsWithAnotherShape) {
  auto tx = optim::sgd(0.1);
  auto s = optim::init(tx, two());
  Dict g = {{"a", tsr::ones({2})}, {"b", tsr::ones({4})}};
  auto e = error_of<tsr::ValueError>([&] { optim::update(tx, g, s, two()); });
  EXPECT_HAS(e,
             "[optim.update] grads['b'] has another shape than its parameter. Got [4]; "
             "expected [3]. Pass grads shaped like the params");
}

TEST(OptimErrors, StateMadeForOtherParams) {
  auto tx = optim::adam(0.1);
  auto s = optim::init(tx, Dict{{"a", tsr::ones({2})}});
  auto e = error_of<tsr::ValueError>([&] { optim::update(tx, two(), s, two()); });
  EXPECT_HAS(e, "[optim.update] state slot 'scale_by_adam.mu' and params differ in tree structure");
  EXPECT_HAS(e, "Call optim::init(tx, params) for these params.");
}

TEST(OptimErrors, StateOfAnotherTransform) {
  auto s = optim::init(optim::sgd(0.1), two());
  auto e = error_of<tsr::ValueError>([&] { optim::update(optim::adam(0.1), two(), s, two()); });
  EXPECT_HAS(e, "the state has no slot 'mu' for transform 'scale_by_adam'. Got slots {}");
  EXPECT_HAS(e, "Pass the state that optim::init returned for this transform.");
}

TEST(OptimErrors, ApplyUpdatesWithAnotherStructure) {
  auto e = error_of<tsr::ValueError>([&] {
    optim::apply_updates(two(), Dict{{"a", tsr::ones({2})}});
  });
  EXPECT_HAS(e, "[optim.apply_updates] updates and params differ in tree structure");
}

TEST(OptimErrors, HyperparametersOutOfRange) {
  auto e = error_of<tsr::ValueError>([] { optim::adam(0.1, 1.0); });
  EXPECT_HAS(e, "[optim.scale_by_adam] b1 is out of range. Got b1=1; expected 0 <= b1 < 1.");
  e = error_of<tsr::ValueError>([] { optim::adamw(0.1, 0.9, -0.5); });
  EXPECT_HAS(e, "Got b2=-0.5; expected 0 <= b2 < 1");
  e = error_of<tsr::ValueError>([] { optim::adam(0.1, 0.9, 0.999, -1e-8); });
  EXPECT_HAS(e, "eps is out of range. Got eps=-1e-08");
  e = error_of<tsr::ValueError>([] { optim::sgd(NAN); });
  EXPECT_HAS(e, "[optim.sgd] learning_rate must be a finite number. Got learning_rate=nan");
  e = error_of<tsr::ValueError>([] { optim::sgd(0.1, INFINITY); });
  EXPECT_HAS(e, "[optim.sgd] momentum must be a finite number");
  e = error_of<tsr::ValueError>([] { optim::lion(0.1, 1.5); });
  EXPECT_HAS(e, "[optim.scale_by_lion] b1 is out of range. Got b1=1.5; expected 0 <= b1 <= 1");
  e = error_of<tsr::ValueError>([] { optim::clip_by_global_norm(0.0); });
  EXPECT_HAS(e, "max_norm must be positive. Got max_norm=0; expected max_norm > 0");
  e = error_of<tsr::ValueError>([] { optim::add_decayed_weights(NAN); });
  EXPECT_HAS(e, "weight_decay must be a finite number");
}

TEST(OptimErrors, EmptyTransforms) {
  auto e = error_of<tsr::ValueError>([] { optim::chain({optim::sgd(0.1), {}}); });
  EXPECT_HAS(e, "[optim.chain] transform 1 ('') is empty");
  e = error_of<tsr::ValueError>([] { optim::init(optim::GradientTransformation{}, two()); });
  EXPECT_HAS(e, "[optim.init] the GradientTransformation '' has no init function");
}

TEST(OptimErrors, TransformWithAWrongSlotCount) {
  optim::GradientTransformation bad = optim::identity();
  bad.name = "bad";
  bad.init = [](const std::vector<Array>&, const optim::Paths&) {
    optim::TxState s;
    s.slots["x"] = {tsr::ones({1})};
    return s;
  };
  auto e = error_of<tsr::ValueError>([&] { optim::init(bad, two()); });
  EXPECT_HAS(e, "[optim.init] transform 'bad' made slot 'x' with 1 arrays. Got 1; expected 2");
}

TEST(OptimErrors, WeightDecayWithoutParams) {
  auto tx = optim::add_decayed_weights(0.1);
  std::vector<Array> u = {tsr::ones({2})};
  auto e = error_of<tsr::ValueError>([&] { tx.update(u, {}, {}, {}); });
  EXPECT_HAS(e, "[optim.add_decayed_weights] weight decay needs the parameters");
  auto masked = optim::add_decayed_weights(
      0.1, [](const std::string&, const tsr::ArrayType&) { return true; });
  e = error_of<tsr::ValueError>([&] { masked.update(u, {}, u, {}); });
  EXPECT_HAS(e, "a mask selects parameters by key path. Got 0 paths; expected 1");
}

TEST(OptimErrors, UpdatesAndParamsOfDifferentCounts) {
  auto tx = optim::adam(0.1);
  std::vector<Array> p = {tsr::ones({2}), tsr::ones({2})};
  auto s = tx.init(p, {"a", "b"});
  auto e = error_of<tsr::ValueError>([&] { tx.update({tsr::ones({2})}, s, p, {"a", "b"}); });
  EXPECT_HAS(e, "got 1 updates and 2 params");
}

}  // namespace
