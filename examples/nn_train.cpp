// The training stack in a page (README "The main job"): a tiny transformer laid out
// by a rules table, AdamW, a jitted step, on 8 simulated devices. tsr-train
// (apps/train/) is the full program.
#include <cstdio>

#include <tsr/nn.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

using namespace tsr;

int main() {
  tsr::init({.num_cpu_devices = 8});
  Mesh mesh = make_mesh({2, 4}, {"data", "model"}, {AxisType::Auto, AxisType::Auto});
  MeshScope scope(mesh);
  Array key = random::key(0);
  auto rules = nn::rules_preset("fsdp+tp");  // or your own table
  auto model = nn::shard(nn::Transformer::init(nn::TransformerConfig::tiny(80), key), rules, mesh);
  auto tx = optim::chain({optim::clip_by_global_norm(1.0), optim::adamw(3e-3)});
  auto opt = optim::init(tx, model);  // moments take each weight's sharding
  auto step = jit([&](const nn::Transformer& m, const optim::State<nn::Transformer>& s,
                      const Array& x, const Array& y) {
    auto [l, g] = value_and_grad([&](const nn::Transformer& p) {
      return mean(
          nn::softmax_cross_entropy_with_integer_labels(nn::apply(p, x, {.rules = rules}), y));
    })(m);
    auto [u, s2] = optim::update(tx, g, s, m);
    return std::make_tuple(optim::apply_updates(m, u), s2, l);
  });
  // Random tokens: the loss falls as the model memorises this one batch.
  Array tokens =
      device_put(random::randint(random::fold_in(key, 1), {8, 33}, 0, 80), P("data", nullptr));
  Array x = tokens[{all, Slice{0, 32}}], y = tokens[{all, Slice{1, 33}}];
  for (int i = 1; i <= 20; ++i) {
    auto [m2, s2, l] = step(model, opt, x, y);
    model = m2;
    opt = s2;
    if (i % 5 == 0) std::printf("step %2d  loss %.4f\n", i, l.item<float>());
  }
  std::printf("%s", visualize(model.blocks[0].attn.wq.value).c_str());
}
