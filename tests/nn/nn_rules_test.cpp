// Logical-axis rules: presets, names -> specs, placing Param trees, pinning activations.
#include <gtest/gtest.h>

#include <tsr/nn.h>
#include <tsr/tsr.h>

#include "support/error_of.h"

using namespace tsr;

namespace {

Mesh auto_mesh() { return make_mesh({4, 2}, {"data", "model"}, {AxisType::Auto, AxisType::Auto}); }

using Table = std::vector<std::pair<std::string, std::vector<std::string>>>;

}  // namespace

TEST(NnRules, PresetTables) {
  const std::vector<std::string> d{"data"}, m{"model"};
  EXPECT_EQ(nn::rules_preset("dp").table, (Table{{"batch", d}}));
  EXPECT_EQ(nn::rules_preset("tp").table, (Table{{"heads", m}, {"mlp", m}, {"vocab", m}}));
  EXPECT_EQ(nn::rules_preset("fsdp").table, (Table{{"batch", d}, {"embed", d}}));
  EXPECT_EQ(nn::rules_preset("dp+tp").table,
            (Table{{"batch", d}, {"heads", m}, {"mlp", m}, {"vocab", m}}));
  EXPECT_EQ(nn::rules_preset("fsdp+tp").table,
            (Table{{"batch", d}, {"embed", d}, {"heads", m}, {"mlp", m}, {"vocab", m}}));
  EXPECT_EQ(nn::rules_preset("fsdp+tp").name, "fsdp+tp");
  EXPECT_EQ(nn::rules_preset_names(),
            (std::vector<std::string>{"dp", "tp", "fsdp", "dp+tp", "fsdp+tp"}));
  std::string e = error_of<ValueError>([] { (void)nn::rules_preset("zero3"); });
  EXPECT_HAS(e,
             "[nn.rules_preset] unknown preset 'zero3'. Got 'zero3'; expected one of 'dp', "
             "'tp', 'fsdp', 'dp+tp', 'fsdp+tp'.");
}

TEST(NnRules, LogicalToSpec) {
  Mesh mesh = auto_mesh();
  nn::Rules fsdp_tp = nn::rules_preset("fsdp+tp");
  EXPECT_EQ(nn::logical_to_spec({"embed", "mlp"}, fsdp_tp, mesh), P("data", "model"));
  EXPECT_EQ(nn::logical_to_spec({"heads", "kv", "embed"}, fsdp_tp, mesh),
            P("model", nullptr, "data"));
  // batch takes 'data' first: the activation's embed dimension loses it (Flax).
  EXPECT_EQ(nn::logical_to_spec({"batch", "seq", "embed"}, fsdp_tp, mesh),
            P("data", nullptr, nullptr));
  EXPECT_EQ(nn::logical_to_spec({"embed", "embed"}, fsdp_tp, mesh), P("data", nullptr));
  // Unnamed and unknown names stay unsharded; an empty rule leaves its name unsharded.
  EXPECT_EQ(nn::logical_to_spec({"", "nonesuch"}, fsdp_tp, mesh), P(nullptr, nullptr));
  nn::Rules custom{{{"vocab", {}}, {"vocab", {"model"}}, {"batch", {"data", "model"}}}, "custom"};
  EXPECT_EQ(nn::logical_to_spec({"vocab"}, custom, mesh), P(nullptr));  // the first entry wins
  EXPECT_EQ(nn::logical_to_spec({"batch", "heads"}, custom, mesh),
            P(Axes{"data", "model"}, nullptr));
  EXPECT_EQ(nn::logical_to_spec({}, custom, mesh), P());
  // Against an abstract mesh too (what constrain uses inside jit).
  EXPECT_EQ(nn::logical_to_spec({"heads"}, fsdp_tp, mesh.abstract_mesh()), P("model"));
}

TEST(NnRules, RuleNamingAMissingMeshAxis) {
  Mesh data_only = make_mesh({8}, {"data"}, {AxisType::Auto});
  std::string e = error_of<ValueError>(
      [&] { (void)nn::logical_to_spec({"batch"}, nn::rules_preset("dp+tp"), data_only); });
  EXPECT_HAS(e,
             "[nn.logical_to_spec] rule 'heads' -> ('model',) of rules 'dp+tp' names mesh "
             "axis 'model', which the mesh lacks. Got mesh axes ('data',); expected every "
             "rule's mesh axes among them.");
  nn::Rules twice{{{"batch", {"data", "data"}}}, ""};
  e = error_of<ValueError>([&] { (void)nn::logical_to_spec({"batch"}, twice, data_only); });
  EXPECT_HAS(e,
             "rule 'batch' -> ('data', 'data') of rules (unnamed rules) names mesh axis "
             "'data' twice");
}

TEST(NnRules, ShardPlacesParamsByNamesAndReplicatesOtherLeaves) {
  Mesh mesh = auto_mesh();
  nn::MLP mlp = nn::MLP::init(8, 16, random::key(0));
  std::pair<nn::MLP, Array> tree{mlp, arange(8.f)};  // a plain Array leaf: replicated
  auto placed = nn::shard(tree, nn::rules_preset("fsdp+tp"), mesh);
  EXPECT_EQ(placed.first.w1.value.sharding().spec(), P("data", "model"));
  EXPECT_EQ(placed.first.b1.value.sharding().spec(), P("model"));
  EXPECT_EQ(placed.first.w2.value.sharding().spec(), P("model", "data"));
  EXPECT_EQ(placed.first.b2.value.sharding().spec(), P("data"));
  EXPECT_EQ(placed.second.sharding().spec(), P());
  EXPECT_EQ(placed.second.sharding().concrete_mesh(), mesh);
  EXPECT_EQ(placed.first.w1.names, (nn::Axes{"embed", "mlp"}));  // statics kept
  EXPECT_EQ(placed.first.w1.value.to_vector<float>(), mlp.w1.value.to_vector<float>());
  // The printed layout: one (path, spec) per leaf, placing nothing.
  auto specs = nn::logical_specs(tree, nn::rules_preset("tp"), mesh);
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].first, "[0].w1.value");
  EXPECT_EQ(specs[0].second, P(nullptr, "model"));
  EXPECT_EQ(specs[2].first, "[0].w2.value");
  EXPECT_EQ(specs[2].second, P("model", nullptr));
  EXPECT_EQ(specs[4].first, "[1]");
  EXPECT_EQ(specs[4].second, P());
  EXPECT_EQ(nn::param_count(tree), 8 * 16 + 16 + 16 * 8 + 8 + 8);
}

TEST(NnRules, ShardCollectsEveryLeafError) {
  Mesh mesh = auto_mesh();
  // embed 6 does not divide over 'data' (4), mlp 3 not over 'model' (2).
  std::map<std::string, nn::MLP> tree{{"mlp", nn::MLP::init(6, 3, random::key(0))}};
  std::string e =
      error_of<ValueError>([&] { (void)nn::shard(tree, nn::rules_preset("fsdp+tp"), mesh); });
  EXPECT_HAS(e,
             "[nn.shard] 4 of 4 leaves cannot be placed by rules 'fsdp+tp' on mesh ('data': "
             "4, 'model': 2). Got:\n");
  EXPECT_HAS(e,
             "\n  - leaf '['mlp'].w1.value' f32[6,3] names ('embed', 'mlp') -> P('data', "
             "'model'): dimension 0 ('embed', size 6) is not divisible by 'data' (4 "
             "devices); dimension 1 ('mlp', size 3) is not divisible by 'model' (2 devices)");
  EXPECT_HAS(e, "leaf '['mlp'].b1.value' f32[3] names ('mlp',) -> P('model',)");
  EXPECT_HAS(e, "leaf '['mlp'].w2.value'");
  EXPECT_HAS(e, "leaf '['mlp'].b2.value'");
  EXPECT_HAS(e,
             "Expected every sharded dimension divisible by the product of its mesh axes' sizes");
  // Under dp the same tree places (no parameter dimension is named by dp's rules).
  EXPECT_NO_THROW((void)nn::shard(tree, nn::rules_preset("dp"), mesh));
  // Names of the wrong length, and an empty leaf.
  std::vector<nn::Param> bad{{ones({2, 2}), {"embed"}}, {Array(), {}}};
  e = error_of<ValueError>([&] { (void)nn::shard(bad, nn::rules_preset("dp"), mesh); });
  EXPECT_HAS(e, "2 of 2 leaves");
  EXPECT_HAS(e,
             "leaf '[0].value' f32[2,2] names ('embed',) -> P(None,): has names ('embed',) "
             "(1) for a rank-2 value");
  EXPECT_HAS(e, "leaf '[1].value' <empty> names () -> P(): is an empty Array handle");
}

TEST(NnRules, ConstrainPinsActivationsInsideJit) {
  Array x = arange(64.f).reshape({8, 8});
  nn::Rules rules = nn::rules_preset("dp+tp");
  // No context mesh: the identity.
  EXPECT_EQ(nn::constrain(x, {"batch", "mlp"}, rules).to_vector<float>(), x.to_vector<float>());
  Mesh mesh = auto_mesh();
  MeshScope scope(mesh);
  Array xs = device_put(x, P());
  auto f = jit([&](const Array& a) { return nn::constrain(a * 2.f, {"batch", "mlp"}, rules); });
  Array y = f(xs);
  EXPECT_EQ(y.sharding().spec().normalized(2), P("data", "model"));
  EXPECT_EQ(y.to_vector<float>(), (x * 2.f).to_vector<float>());
  auto g = jit([&](const Array& a) { return nn::constrain(a + 1.f, {"mlp", "batch"}, rules); });
  EXPECT_EQ(g(xs).sharding().spec().normalized(2), P("model", "data"));
  // Only what the rules map is pinned: a name without a rule (or whose axes an earlier
  // dimension took) is left to the propagation pass; a rule to no axes pins unsharded.
  nn::Rules some{{{"batch", {"data"}}, {"seq", {}}, {"kv", {"data"}}}, "some"};
  EXPECT_HAS(make_jaxpr(
                 [&](const Array& a) {
                   return nn::constrain(a, {"batch", "seq", "embed", "kv"}, some);
                 },
                 device_put(ones({8, 2, 2, 2}), P())),
             "sharding_constraint[sharding=P('data', None, P.UNCONSTRAINED, P.UNCONSTRAINED)]");
  std::string e = error_of<ValueError>([&] { (void)nn::constrain(xs, {"batch"}, rules); });
  EXPECT_HAS(e,
             "[nn.constrain] names ('batch',) has 1 entries for a value of type f32[8,8]. "
             "Got 1 names; expected 2 (one per dimension).");
  // A one-device context mesh: the identity.
  MeshScope one(make_mesh({1}, {"data"}, {AxisType::Auto}));
  EXPECT_EQ(nn::constrain(x, {"batch", "mlp"}, rules).to_vector<float>(), x.to_vector<float>());
}
