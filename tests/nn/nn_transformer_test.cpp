// The Transformer: forward against a host-loop reference, sizes and names, the loss
// and gradients sharded under every preset against the one-device run, and the
// Megatron communication pattern of tensor parallelism.
#include <gtest/gtest.h>

#include <tsr/check_grads.h>
#include <tsr/nn.h>
#include <tsr/tsr.h>

#include <cmath>
#include <map>

#include "nn/nn_reference.h"
#include "support/error_of.h"

using namespace tsr;
using nnref::expect_close;
using nnref::host;

namespace {

// Every leaf replaced by smooth values of its shape (init's 0.02 leaves attention
// almost uniform; these make every path matter). Norm scales stay near one.
nn::Transformer wavy_params(const nn::Transformer& m) {
  int salt = 0;
  return tree::map_with_path(
      [&](const std::string& path, const Array& a) {
        Array w = nnref::wavy(a.shape(), 0.4, ++salt);
        return path.find("scale") != std::string::npos ? 1.f + 0.5f * w : w;
      },
      m);
}

// The Transformer of tsr/nn.h's header, with the host-loop layers.
nnref::T forward_ref(const nn::Transformer& m, const std::vector<int>& tokens, int64_t b,
                     int64_t t) {
  const int64_t e = m.config.d_model;
  nnref::T table = host(m.embed.table.value);
  nnref::T x{{b * t, e}, {}};
  for (int64_t i = 0; i < b * t; ++i)
    for (int64_t k = 0; k < e; ++k) {
      double v = table[static_cast<size_t>(tokens[static_cast<size_t>(i)] * e + k)];
      if (m.pos) v += host(m.pos->value)[static_cast<size_t>((i % t) * e + k)];
      x.v.push_back(v);
    }
  for (const nn::TransformerBlock& blk : m.blocks) {
    nnref::T h = nnref::layer_norm(x, host(blk.ln1.scale.value), host(blk.ln1.bias.value), 1e-5);
    h.shape = {b, t, e};
    nnref::T a = nnref::attention(h, host(blk.attn.wq.value), host(blk.attn.wk.value),
                                  host(blk.attn.wv.value), host(blk.attn.wo.value),
                                  m.config.positions == nn::Positions::Rotary);
    for (size_t i = 0; i < x.v.size(); ++i) x[i] += a[i];
    h = nnref::layer_norm(x, host(blk.ln2.scale.value), host(blk.ln2.bias.value), 1e-5);
    nnref::T f = nnref::mlp(h, host(blk.mlp.w1.value), host(blk.mlp.b1.value),
                            host(blk.mlp.w2.value), host(blk.mlp.b2.value));
    for (size_t i = 0; i < x.v.size(); ++i) x[i] += f[i];
  }
  nnref::T y = nnref::layer_norm(x, host(m.ln_f.scale.value), host(m.ln_f.bias.value), 1e-5);
  nnref::T logits = nnref::linear(y, host(m.head.w.value), nullptr);
  logits.shape = {b, t, m.config.vocab};
  return logits;
}

// vocab 32, d_model 16, 2 heads (kv 8), d_ff 32, max_seq 8: every sharded dimension
// divides the (4, 2) mesh. One layer where a test lowers the gradient (the propagation
// pass's time grows with the program).
nn::TransformerConfig test_config(nn::Positions pos = nn::Positions::Rotary, double dropout = 0.0,
                                  int64_t layers = 2) {
  return {32, 16, 2, layers, 32, 8, pos, dropout};
}

Mesh test_mesh() { return make_mesh({4, 2}, {"data", "model"}, {AxisType::Auto, AxisType::Auto}); }

std::vector<int> tokens_of(int64_t n, int vocab, int salt) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<int>((i * 7 + salt * 3 + i * i) % vocab);
  return v;
}

// Mean cross-entropy of next-token labels.
Array loss_of(const nn::Transformer& m, const Array& tokens, const Array& labels,
              const nn::ApplyOptions& opts) {
  return mean(nn::softmax_cross_entropy_with_integer_labels(nn::apply(m, tokens, opts), labels));
}

}  // namespace

TEST(NnTransformer, ForwardMatchesHostReference) {
  for (nn::Positions pos : {nn::Positions::Rotary, nn::Positions::Learned}) {
    nn::TransformerConfig cfg{16, 8, 2, 2, 16, 6, pos, 0.0};
    nn::Transformer m = wavy_params(nn::Transformer::init(cfg, random::key(3)));
    EXPECT_EQ(m.pos.has_value(), pos == nn::Positions::Learned);
    std::vector<int> tok = tokens_of(10, 16, 1);
    Array logits = nn::apply(m, array(tok, {2, 5}));
    EXPECT_EQ(logits.shape(), (Shape{2, 5, 16}));
    expect_close(forward_ref(m, tok, 2, 5), logits, 1e-4, 1e-4,
                 pos == nn::Positions::Rotary ? "rotary" : "learned");
  }
}

TEST(NnTransformer, GradientsAgreeWithFiniteDifferencesInFloat64) {
  // The composed model's jvp against central differences and its vjp against the jvp,
  // for both position kinds (one layer keeps it fast).
  for (nn::Positions pos : {nn::Positions::Rotary, nn::Positions::Learned}) {
    nn::TransformerConfig cfg{8, 8, 2, 1, 8, 4, pos, 0.0};
    nn::Transformer m = tree::map([](const Array& a) { return a.astype(float64); },
                                  wavy_params(nn::Transformer::init(cfg, random::key(6))));
    Array tokens = array(tokens_of(8, 8, 2), {2, 4});
    check_grads([&](const nn::Transformer& p) { return nn::apply(p, tokens); }, std::make_tuple(m),
                1, {.atol = 1e-6, .rtol = 1e-5, .eps = 1e-5});
  }
}

TEST(NnTransformer, SizesNamesAndParamCount) {
  auto count = [](const nn::TransformerConfig& c) {
    int64_t v = c.vocab, e = c.d_model, f = c.d_ff;
    return 2 * v * e + 2 * e + c.layers * (4 * e * e + 2 * e * f + f + e + 4 * e) +
           (c.positions == nn::Positions::Learned ? c.max_seq * e : 0);
  };
  nn::TransformerConfig tiny = nn::TransformerConfig::tiny(256);
  EXPECT_EQ(tiny, (nn::TransformerConfig{256, 128, 4, 4, 512, 64, nn::Positions::Rotary, 0.0}));
  nn::TransformerConfig small = nn::TransformerConfig::small(256);
  EXPECT_EQ(small, (nn::TransformerConfig{256, 384, 6, 6, 1536, 64, nn::Positions::Rotary, 0.0}));
  nn::Transformer t = nn::Transformer::init(tiny, random::key(0));
  EXPECT_EQ(nn::param_count(t), count(tiny));
  EXPECT_EQ(nn::param_count(t), 856832);  // ~1 M
  EXPECT_EQ(count(small), 10834944);      // ~10 M (not built: keeps the test fast)
  nn::TransformerConfig learned = test_config(nn::Positions::Learned);
  EXPECT_EQ(nn::param_count(nn::Transformer::init(learned, random::key(0))), count(learned));
  // Paths and names, as tsr/nn.h lists them.
  auto specs = nn::logical_specs(t, nn::rules_preset("tp"), test_mesh());
  std::map<std::string, PartitionSpec> by_path(specs.begin(), specs.end());
  EXPECT_EQ(by_path.at("embed.table.value"), P("model", nullptr));
  EXPECT_EQ(by_path.at("blocks[3].attn.wq.value"), P(nullptr, "model", nullptr));
  EXPECT_EQ(by_path.at("blocks[3].attn.wo.value"), P("model", nullptr, nullptr));
  EXPECT_EQ(by_path.at("blocks[0].mlp.b1.value"), P("model"));
  EXPECT_EQ(by_path.at("ln_f.bias.value"), P(nullptr));
  EXPECT_EQ(by_path.at("head.w.value"), P(nullptr, "model"));
  EXPECT_EQ(specs.size(), 4u + 4u * 12u);
  // Init: normal(0, 0.02) weights, zero biases, unit scales.
  EXPECT_NEAR(std::sqrt(mean(square(t.embed.table.value)).item<float>()), 0.02, 0.001);
  EXPECT_NEAR(std::sqrt(mean(square(t.blocks[1].mlp.w1.value)).item<float>()), 0.02, 0.001);
  EXPECT_EQ(sum(abs(t.blocks[1].mlp.b1.value)).item<float>(), 0.f);
  EXPECT_EQ(sum(t.blocks[2].ln2.scale.value).item<float>(), 128.f);
  EXPECT_NE(t.blocks[0].attn.wq.value.to_vector<float>(),
            t.blocks[1].attn.wq.value.to_vector<float>());
}

TEST(NnTransformer, ShardedLossAndGradientsMatchOneDeviceUnderEveryPreset) {
  nn::Transformer m =
      nn::Transformer::init(test_config(nn::Positions::Rotary, 0.0, 1), random::key(11));
  std::vector<int> tok = tokens_of(64, 32, 2), lab = tokens_of(64, 32, 5);
  Array tokens = array(tok, {8, 8}), labels = array(lab, {8, 8});
  // The oracle: one device, no mesh, no rules.
  auto [want_loss, want_grads] =
      jit(value_and_grad([](const nn::Transformer& p, const Array& t, const Array& l) {
        return loss_of(p, t, l, {});
      }))(m, tokens, labels);
  std::vector<Array> want = tree::leaves(want_grads);
  std::vector<std::string> paths = tree::paths(want_grads);
  // Each parameter's predicted layout, per preset (wq, wo, w1, b1, w2, b2, table, head, ln).
  const P none2(nullptr, nullptr), none3(nullptr, nullptr, nullptr), none1(nullptr);
  struct Expect {
    P wq, wo, w1, b1, w2, b2, table, head, ln;
  };
  const std::map<std::string, Expect> expect{
      {"dp", {none3, none3, none2, none1, none2, none1, none2, none2, none1}},
      {"tp",
       {P(nullptr, "model", nullptr), P("model", nullptr, nullptr), P(nullptr, "model"), P("model"),
        P("model", nullptr), none1, P("model", nullptr), P(nullptr, "model"), none1}},
      {"fsdp",
       {P("data", nullptr, nullptr), P(nullptr, nullptr, "data"), P("data", nullptr), none1,
        P(nullptr, "data"), P("data"), P(nullptr, "data"), P("data", nullptr), P("data")}},
      {"dp+tp",
       {P(nullptr, "model", nullptr), P("model", nullptr, nullptr), P(nullptr, "model"), P("model"),
        P("model", nullptr), none1, P("model", nullptr), P(nullptr, "model"), none1}},
      {"fsdp+tp",
       {P("data", "model", nullptr), P("model", nullptr, "data"), P("data", "model"), P("model"),
        P("model", "data"), P("data"), P("model", "data"), P("data", "model"), P("data")}},
  };
  Mesh mesh = test_mesh();
  MeshScope scope(mesh);
  for (const std::string& preset : nn::rules_preset_names()) {
    SCOPED_TRACE(preset);
    nn::Rules rules = nn::rules_preset(preset);
    nn::Transformer ms = nn::shard(m, rules, mesh);
    const Expect& e = expect.at(preset);
    const nn::TransformerBlock& b = ms.blocks[0];
    EXPECT_EQ(b.attn.wq.value.sharding().spec(), e.wq);
    EXPECT_EQ(b.attn.wk.value.sharding().spec(), e.wq);
    EXPECT_EQ(b.attn.wo.value.sharding().spec(), e.wo);
    EXPECT_EQ(b.mlp.w1.value.sharding().spec(), e.w1);
    EXPECT_EQ(b.mlp.b1.value.sharding().spec(), e.b1);
    EXPECT_EQ(b.mlp.w2.value.sharding().spec(), e.w2);
    EXPECT_EQ(b.mlp.b2.value.sharding().spec(), e.b2);
    EXPECT_EQ(ms.embed.table.value.sharding().spec(), e.table);
    EXPECT_EQ(ms.head.w.value.sharding().spec(), e.head);
    EXPECT_EQ(b.ln1.scale.value.sharding().spec(), e.ln);
    EXPECT_EQ(ms.ln_f.bias.value.sharding().spec(), e.ln);
    P bs = nn::logical_to_spec({"batch", "seq"}, rules, mesh);
    auto step = jit(value_and_grad([&](const nn::Transformer& p, const Array& t, const Array& l) {
      return loss_of(p, t, l, {rules, std::nullopt});
    }));
    auto [loss, grads] = step(ms, device_put(tokens, bs), device_put(labels, bs));
    EXPECT_NEAR(loss.item<float>(), want_loss.item<float>(), 1e-5);
    std::vector<Array> got = tree::leaves(grads);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(want[i], got[i], 1e-5, 1e-4, paths[i]);
    EXPECT_EQ(grads.blocks[0].attn.wo.names, (nn::Axes{"heads", "kv", "embed"}));
  }
}

TEST(NnTransformer, ShardedDropoutAndLearnedPositionsMatchOneDevice) {
  // Dropout masks hash global positions: the sharded run drops the same elements.
  nn::Transformer m =
      nn::Transformer::init(test_config(nn::Positions::Learned, 0.25, 1), random::key(4));
  Array tokens = array(tokens_of(64, 32, 3), {8, 8}), labels = array(tokens_of(64, 32, 4), {8, 8});
  Array key = random::key(99);
  auto f = [](const nn::Transformer& p, const Array& t, const Array& l, const Array& k,
              const std::optional<nn::Rules>& r) {
    return loss_of(p, t, l, {r, k});
  };
  auto [want_loss, want_grads] = value_and_grad(
      [&](const nn::Transformer& p) { return f(p, tokens, labels, key, std::nullopt); })(m);
  // Dropout is on: the loss differs from the deterministic one.
  EXPECT_GT(std::fabs(want_loss.item<float>() - loss_of(m, tokens, labels, {}).item<float>()),
            1e-4);
  Mesh mesh = test_mesh();
  MeshScope scope(mesh);
  nn::Rules rules = nn::rules_preset("dp+tp");
  P bs = nn::logical_to_spec({"batch", "seq"}, rules, mesh);
  auto [loss, grads] = jit(
      value_and_grad([&](const nn::Transformer& p, const Array& t, const Array& l, const Array& k) {
        return f(p, t, l, k, rules);
      }))(nn::shard(m, rules, mesh), device_put(tokens, bs), device_put(labels, bs),
          device_put(key, P()));
  EXPECT_NEAR(loss.item<float>(), want_loss.item<float>(), 1e-5);
  std::vector<Array> want = tree::leaves(want_grads), got = tree::leaves(grads);
  std::vector<std::string> paths = tree::paths(grads);
  for (size_t i = 0; i < got.size(); ++i) expect_close(want[i], got[i], 1e-5, 1e-4, paths[i]);
}

namespace {

// (all_reduce events, the other events) of a comm report.
std::pair<std::vector<CommEvent>, std::vector<CommEvent>> split_reduces(const CommReport& r) {
  std::pair<std::vector<CommEvent>, std::vector<CommEvent>> out;
  for (const CommEvent& e : r.events)
    (e.kind == "all_reduce" ? out.first : out.second).push_back(e);
  return out;
}

}  // namespace

TEST(NnTransformer, TensorParallelForwardIsOneAllReducePerAttentionAndMlp) {
  nn::Transformer m = nn::Transformer::init(test_config(), random::key(5));
  Mesh mesh = test_mesh();
  MeshScope scope(mesh);
  for (const char* preset : {"tp", "dp+tp"}) {
    SCOPED_TRACE(preset);
    nn::Rules rules = nn::rules_preset(preset);
    nn::Transformer ms = nn::shard(m, rules, mesh);
    // One block: exactly two all-reduces over 'model' (after wo and after w2), nothing else.
    auto block = jit([&](const nn::TransformerBlock& b, const Array& x) {
      return nn::apply(b, x, {rules, std::nullopt});
    });
    Array x = device_put(nnref::wavy({8, 8, 16}, 1.0, 1),
                         nn::logical_to_spec({"batch", "seq", "embed"}, rules, mesh));
    CommReport rb = block.lower(ms.blocks[0], x).comm_report();
    auto [red, other] = split_reduces(rb);
    EXPECT_EQ(red.size(), 2u) << rb.str();
    EXPECT_TRUE(other.empty()) << rb.str();
    for (const CommEvent& e : red) {
      EXPECT_EQ(e.axes, (std::vector<std::string>{"model"})) << rb.str();
      EXPECT_EQ(e.bytes_per_device, 8 * 8 * 16 * 4 / 4) << rb.str();  // [B/data, T, E] f32
    }
    // The whole forward: 2 per layer; the only other traffic is the embedding lookup
    // (the vocab-sharded table gathered, and under dp+tp the token ids).
    auto fwd = jit([&](const nn::Transformer& p, const Array& t) {
      return nn::apply(p, t, {rules, std::nullopt});
    });
    Array tokens = device_put(array(tokens_of(64, 32, 1), {8, 8}),
                              nn::logical_to_spec({"batch", "seq"}, rules, mesh));
    CommReport rf = fwd.lower(ms, tokens).comm_report();
    auto [fred, fother] = split_reduces(rf);
    EXPECT_EQ(fred.size(), 2u * 2u) << rf.str();
    for (const CommEvent& e : fother) EXPECT_HAS(e.cause, "of gather");
    EXPECT_LE(fother.size(), 2u) << rf.str();
  }
}

TEST(NnTransformer, Errors) {
  auto init_error = [](nn::TransformerConfig c) {
    return error_of<ValueError>([&] { (void)nn::Transformer::init(c, random::key(0)); });
  };
  nn::TransformerConfig c = test_config();
  c.heads = 3;
  EXPECT_HAS(init_error(c),
             "[nn.Transformer.init] d_model must be a multiple of heads. Got "
             "d_model 16, heads 3; expected d_model % heads == 0");
  c = test_config();
  c.layers = 0;
  EXPECT_HAS(init_error(c), "layers must be positive. Got 0");
  c = {32, 12, 4, 1, 8, 8, nn::Positions::Rotary, 0.0};  // head size 3
  EXPECT_HAS(init_error(c), "rotary positions need an even head size d_model / heads. Got 3");
  c.positions = nn::Positions::Learned;
  EXPECT_NO_THROW((void)nn::Transformer::init(c, random::key(0)));
  c = test_config();
  c.dropout = 1.0;
  EXPECT_HAS(init_error(c), "dropout must lie in [0, 1). Got 1.0");
  nn::Transformer m = nn::Transformer::init(test_config(), random::key(0));
  EXPECT_HAS(error_of<ValueError>([&] {
               (void)nn::apply(m, zeros({2, 9}, int32));
             }),
             "[nn.Transformer] tokens must be [batch, seq] with seq <= max_seq = 8. Got i32[2,9]");
  EXPECT_HAS(error_of<ValueError>([&] { (void)nn::apply(m, zeros({8}, int32)); }),
             "Got i32[8]; expected rank 2");
  EXPECT_HAS(error_of<TypeError>([&] {
               (void)nn::apply(m, zeros({2, 4}));
             }),
             "[nn.Transformer] tokens must be an integer array. Got f32[2,4]");
  // Explicit axes: refused up front, with the fix (the lookup would need an out_sharding).
  Mesh explicit_mesh = make_mesh({4, 2}, {"data", "model"});
  Array placed = device_put(zeros({8, 4}, int32), NamedSharding(explicit_mesh, P("data")));
  EXPECT_HAS(error_of<ValueError>([&] { (void)nn::apply(m, placed); }),
             "[nn.Transformer] the layers run on Auto mesh axes (the propagation pass lays out "
             "what the rules leave open). Got AbstractMesh('data': 4, 'model': 2, "
             "axis_types=(Explicit, Explicit)); expected every axis Auto.");
}
