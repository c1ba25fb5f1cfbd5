// A ResNet basic block, f32[32, 56, 56, 64] NHWC with two 3x3 64 -> 64 convolutions
// (SAME): y = relu(conv(relu(conv(x, w1)), w2) + x); forward, and forward + backward
// (the gradients of sum(y) in x, w1 and w2). Tessera under jit on 1 device, and with the
// image rows sharded over 4 devices (halo exchange); the reference is the same block on
// oneDNN primitives called directly (NHWC user memory, layouts of the primitives'
// choosing, eltwise / binary primitives for relu and the residual). PyTorch's figures:
// bench/conv_torch.py, same shapes.
//
//   build/bench/conv_bench --benchmark_repetitions=5 --benchmark_min_time=1
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <vector>

#include "tsr/conv.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int64_t N = 32, H = 56, W = 56, C = 64;
const ConvLayout kNHWC{"NHWC", "HWIO", "NHWC"};

Array relu(const Array& x) { return maximum(x, 0.0); }

Array block(const Array& x, const Array& w1, const Array& w2) {
  Array h = relu(conv_general_dilated(x, w1, {1, 1}, "SAME", {.dimension_numbers = kNHWC}));
  return relu(add(conv_general_dilated(h, w2, {1, 1}, "SAME", {.dimension_numbers = kNHWC}), x));
}

struct Inputs {
  Array x, w1, w2;
};

Inputs inputs(int devices) {
  Array x = random::normal(random::key(0), {N, H, W, C});
  Array w1 = multiply(random::normal(random::key(1), {3, 3, C, C}), 0.05);
  Array w2 = multiply(random::normal(random::key(2), {3, 3, C, C}), 0.05);
  if (devices == 1) {
    Device d = local_devices()[0];
    return {device_put(x, d), device_put(w1, d), device_put(w2, d)};
  }
  Mesh m = make_mesh({devices}, {"x"});
  return {device_put(x, NamedSharding(m, P(nullptr, "x"))), device_put(w1, NamedSharding(m, P())),
          device_put(w2, NamedSharding(m, P()))};
}

void BM_ResNetBlockForward(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::optional<MeshScope> scope;
  if (n > 1) scope.emplace(make_mesh({n}, {"x"}));
  Inputs in = inputs(n);
  auto f = jit(block);
  f(in.x, in.w1, in.w2).block_until_ready();
  for (auto _ : st) f(in.x, in.w1, in.w2).block_until_ready();
}
BENCHMARK(BM_ResNetBlockForward)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ResNetBlockForwardBackward(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::optional<MeshScope> scope;
  if (n > 1) scope.emplace(make_mesh({n}, {"x"}));
  Inputs in = inputs(n);
  auto f = jit(
      grad([](const Array& x, const Array& w1, const Array& w2) { return sum(block(x, w1, w2)); },
           argnums<0, 1, 2>));
  auto run = [&] {
    auto [gx, g1, g2] = f(in.x, in.w1, in.w2);
    gx.block_until_ready();
    g1.block_until_ready();
    g2.block_until_ready();
  };
  run();
  for (auto _ : st) run();
}
BENCHMARK(BM_ResNetBlockForwardBackward)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---- the same block on oneDNN directly ----------------------------------------------

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct OneDnnBlock {
  engine eng{engine::kind::cpu, 0};
  stream s{eng};
  memory::dims src{N, C, H, W}, wei{C, C, 3, 3}, one{1, 1}, zero{0, 0}, pad{1, 1};
  memory::desc user_src{src, dt::f32, tag::nhwc}, user_wei{wei, dt::f32, tag::hwio};
  memory::desc any_src{src, dt::f32, tag::any}, any_wei{wei, dt::f32, tag::any};
  convolution_forward::primitive_desc fwd;
  convolution_backward_data::primitive_desc bwd_data;
  convolution_backward_weights::primitive_desc bwd_wei;
  std::vector<float> x, w1, w2;

  OneDnnBlock() {
    auto conv_desc =
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                  any_src, any_wei, any_src, one, zero, pad, pad);
    fwd = convolution_forward::primitive_desc(conv_desc, eng);
    bwd_data = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, any_src, any_wei, any_src,
                                        one, zero, pad, pad),
        eng, fwd);
    bwd_wei = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, any_src, any_wei, any_src,
                                           one, zero, pad, pad),
        eng, fwd);
    x.assign(static_cast<size_t>(N * H * W * C), 0.5f);
    w1.assign(static_cast<size_t>(9 * C * C), 0.01f);
    w2 = w1;
  }
  memory to(const memory::desc& want, const memory& user) {
    if (want == user.get_desc()) return user;
    memory m(want, eng);
    reorder(user, m).execute(s, const_cast<memory&>(user), m);
    return m;
  }
  memory user(const memory::desc& d, std::vector<float>& v) { return memory(d, eng, v.data()); }
  memory conv(const memory& a, const memory& w) {
    memory o(fwd.dst_desc(), eng);
    convolution_forward(fwd).execute(s,
                                     {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, o}});
    return o;
  }
  void relu(memory& a) {
    auto pd = eltwise_forward::primitive_desc(
        eltwise_forward::desc(prop_kind::forward_training, algorithm::eltwise_relu, a.get_desc(),
                              0.f),
        eng);
    eltwise_forward(pd).execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, a}});
  }
  memory relu_bwd(const memory& dy, const memory& y) {
    auto fpd = eltwise_forward::primitive_desc(
        eltwise_forward::desc(prop_kind::forward_training, algorithm::eltwise_relu_use_dst_for_bwd,
                              y.get_desc(), 0.f),
        eng);
    auto pd = eltwise_backward::primitive_desc(
        eltwise_backward::desc(algorithm::eltwise_relu_use_dst_for_bwd, dy.get_desc(), y.get_desc(),
                               0.f),
        eng, fpd);
    memory dx(pd.diff_src_desc(), eng);
    eltwise_backward(pd).execute(
        s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DST, y}, {DNNL_ARG_DIFF_SRC, dx}});
    return dx;
  }
  void add_to(memory& a, const memory& b) {
    auto pd = binary::primitive_desc(
        binary::desc(algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc()), eng);
    binary(pd).execute(s, {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, a}});
  }
  // Forward; with `backward`, the three gradients of sum(y) too.
  void step(bool backward) {
    memory xu = user(user_src, x), w1u = user(user_wei, w1), w2u = user(user_wei, w2);
    memory xs = to(fwd.src_desc(), xu), w1m = to(fwd.weights_desc(), w1u),
           w2m = to(fwd.weights_desc(), w2u);
    memory h = conv(xs, w1m);
    relu(h);
    memory y = conv(h, w2m);
    add_to(y, xs);
    relu(y);
    if (backward) {
      memory dy(y.get_desc(), eng);
      auto fill = eltwise_forward::primitive_desc(
          eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_linear,
                                y.get_desc(), 0.f, 1.f),
          eng);
      eltwise_forward(fill).execute(s, {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, dy}});
      memory dz = relu_bwd(dy, y);  // through the last relu
      memory dw2(bwd_wei.diff_weights_desc(), eng), dh(bwd_data.diff_src_desc(), eng);
      convolution_backward_weights(bwd_wei).execute(
          s, {{DNNL_ARG_SRC, h}, {DNNL_ARG_DIFF_DST, dz}, {DNNL_ARG_DIFF_WEIGHTS, dw2}});
      convolution_backward_data(bwd_data).execute(
          s, {{DNNL_ARG_DIFF_DST, dz}, {DNNL_ARG_WEIGHTS, w2m}, {DNNL_ARG_DIFF_SRC, dh}});
      memory dh1 = relu_bwd(dh, h);
      memory dw1(bwd_wei.diff_weights_desc(), eng), dx(bwd_data.diff_src_desc(), eng);
      convolution_backward_weights(bwd_wei).execute(
          s, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_DIFF_DST, dh1}, {DNNL_ARG_DIFF_WEIGHTS, dw1}});
      convolution_backward_data(bwd_data).execute(
          s, {{DNNL_ARG_DIFF_DST, dh1}, {DNNL_ARG_WEIGHTS, w1m}, {DNNL_ARG_DIFF_SRC, dx}});
      add_to(dx, dz);  // the residual's gradient
    }
    s.wait();
  }
};

void BM_OneDnnBlockForward(benchmark::State& st) {
  OneDnnBlock b;
  b.step(false);
  for (auto _ : st) b.step(false);
}
BENCHMARK(BM_OneDnnBlockForward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OneDnnBlockForwardBackward(benchmark::State& st) {
  OneDnnBlock b;
  b.step(true);
  for (auto _ : st) b.step(true);
}
BENCHMARK(BM_OneDnnBlockForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
