// One training step of a 784 -> 1024 -> 1024 -> 10 relu MLP (softmax cross-entropy,
// batch 256, float32): jit(value_and_grad(loss)) plus the SGD update in one jitted
// function (examples/mlp.h), on 1 simulated device and on 8 with the batch sharded
// over mesh axis "data" (weights replicated, gradients all-reduced). relu is
// differentiated as jax.nn.relu does (max_relu:0); max_relu:1 times plain
// maximum(x, 0), whose lax.max JVP costs extra elementwise passes.
//
//   build/bench/mlp_train_bench --benchmark_repetitions=5 --benchmark_min_time=2
//       --benchmark_report_aggregates_only=true
//
// Compare with PyTorch's step of the same model: python3 bench/mlp_train_torch.py
// (bench/README.md). BM_GemmFloor runs the step's eight GEMMs as direct OpenBLAS
// calls with 2 threads, in the same run: the time no implementation on this machine
// can beat without faster GEMMs.
#include <benchmark/benchmark.h>

#include <vector>

#include "mlp_step_timer.h"
#include "openblas_calls.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr int kBatch = 256;
constexpr double kLr = 0.01;
const mlp::Sizes kSizes{};  // 784 -> 1024 -> 1024 -> 10

// Forward and backward FLOPs of the step's GEMMs (3 forward, 3 weight grads, 2
// activation grads: the input needs none).
double step_flops() {
  double b = kBatch, i = kSizes.in, h1 = kSizes.h1, h2 = kSizes.h2, c = kSizes.classes;
  double fwd = 2 * b * (i * h1 + h1 * h2 + h2 * c);
  return 2 * fwd + 2 * b * (h1 * h2 + h2 * c);
}

// Times `make()`'s jitted step on a mesh of st.range(0) devices along "data": the
// batch sharded, the params replicated, each iteration waiting for the new params.
template <class MakeStep>
void time_steps(benchmark::State& st, MakeStep make) {
  int n = static_cast<int>(st.range(0));
  Mesh mesh = make_mesh({n}, {"data"});
  MeshScope scope(mesh);
  mlp::Params p = mlp::init_params(kSizes, 0, P());
  auto step = make();
  st.counters["loss"] = bench::time_mlp_steps(st, step, p, kSizes, kBatch);
  st.counters["GFLOPS"] = benchmark::Counter(
      step_flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Args: devices, and relu's derivative (0: the jax.nn.relu mask, 1: lax.max's rule).
void BM_MlpStep(benchmark::State& st) {
  auto relu_grad = st.range(1) ? mlp::ReluGrad::Maximum : mlp::ReluGrad::Mask;
  time_steps(st, [&] { return mlp::make_step(kLr, relu_grad); });
}
BENCHMARK(BM_MlpStep)
    ->ArgNames({"devices", "max_relu"})
    ->Args({1, 0})
    ->Args({8, 0})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// x @ w with a hand-written vjp that computes each cotangent as one dot_general in
// its final layout: dw = dot_general(x, g) over the batch dim is [in, out] and
// dx = dot_general(g, w) over `out` is [batch, in], so no transpose step follows
// (the kernel passes the transposed operands to GEMM as flags). This is what
// dot_general's transpose rule would emit if it ordered its operands by the
// cotangent's layout; BM_MlpStepDirectGrad measures what that would save.
Array dense(const Array& x, const Array& w) {
  static const auto f = custom_vjp(
      [](const Array& a, const Array& b) { return matmul(a, b); },
      [](const Array& a, const Array& b) { return std::make_pair(matmul(a, b), std::tuple(a, b)); },
      [](const std::tuple<Array, Array>& r, const Array& g) {
        const auto& [a, b] = r;
        Array da = dot_general(g, b, {.lhs_contracting = {1}, .rhs_contracting = {1}});
        Array db = dot_general(a, g, {.lhs_contracting = {0}, .rhs_contracting = {0}},
                               {.out_sharding = typeof(b).sharding});
        return std::make_tuple(da, db);
      });
  return f(x, w);
}

Array loss_direct(const mlp::Params& p, const Array& x, const Array& y) {
  Array h = mlp::relu(dense(x, p.w1) + p.b1);
  h = mlp::relu(dense(h, p.w2) + p.b2);
  Array logits = dense(h, p.w3) + p.b3;
  return -mean(sum(one_hot(y, kSizes.classes) * log_softmax(logits), 1));
}

void BM_MlpStepDirectGrad(benchmark::State& st) {
  time_steps(st, [] {
    return jit([](const mlp::Params& q, const Array& a, const Array& b) {
      auto [l, g] = value_and_grad(loss_direct)(q, a, b);
      mlp::Params next =
          tree::map2([](const Array& w, const Array& dw) { return w - kLr * dw; }, q, g);
      return std::make_pair(next, l);
    });
  });
}
BENCHMARK(BM_MlpStepDirectGrad)
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The step's GEMMs alone, row-major, with the transposes expressed as cblas flags.
void BM_GemmFloor(benchmark::State& st) {
  const int b = kBatch, i = static_cast<int>(kSizes.in), h1 = static_cast<int>(kSizes.h1),
            h2 = static_cast<int>(kSizes.h2), c = static_cast<int>(kSizes.classes);
  constexpr int R = 101, N = 111, T = 112;
  std::vector<float> x(b * i, 0.5f), w1(i * h1, 0.01f), w2(h1 * h2, 0.01f), w3(h2 * c, 0.01f);
  std::vector<float> a1(b * h1), a2(b * h2), lo(b * c), g1(b * h1), g2(b * h2);
  std::vector<float> dw1(i * h1), dw2(h1 * h2), dw3(h2 * c);
  openblas_set_num_threads(2);
  for (auto _ : st) {
    cblas_sgemm(R, N, N, b, h1, i, 1.f, x.data(), i, w1.data(), h1, 0.f, a1.data(), h1);
    cblas_sgemm(R, N, N, b, h2, h1, 1.f, a1.data(), h1, w2.data(), h2, 0.f, a2.data(), h2);
    cblas_sgemm(R, N, N, b, c, h2, 1.f, a2.data(), h2, w3.data(), c, 0.f, lo.data(), c);
    cblas_sgemm(R, T, N, h2, c, b, 1.f, a2.data(), h2, lo.data(), c, 0.f, dw3.data(), c);
    cblas_sgemm(R, N, T, b, h2, c, 1.f, lo.data(), c, w3.data(), c, 0.f, g2.data(), h2);
    cblas_sgemm(R, T, N, h1, h2, b, 1.f, a1.data(), h1, g2.data(), h2, 0.f, dw2.data(), h2);
    cblas_sgemm(R, N, T, b, h1, h2, 1.f, g2.data(), h2, w2.data(), h2, 0.f, g1.data(), h1);
    cblas_sgemm(R, T, N, i, h1, b, 1.f, x.data(), i, g1.data(), h1, 0.f, dw1.data(), h1);
    benchmark::DoNotOptimize(dw1.data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(
      step_flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GemmFloor)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
