// Gradient accumulation: the mean over micro-batches equals the full batch for a
// mean loss, eagerly and under jit; the split is strided; bad splits are errors.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <string>
#include <vector>

#include "support/arrays.h"
#include "support/error_of.h"

namespace {

namespace optim = tsr::optim;
using tsr::Array;

struct Lin {
  Array w;
  Array b;
};
TSR_TREE(Lin, w, b);

struct Batch {
  Array x;
  Array y;
};
TSR_TREE(Batch, x, y);

Array mse(const Lin& p, const Batch& b) {
  return tsr::mean(tsr::square(tsr::matmul(b.x, p.w) + p.b - b.y));
}

Lin params() { return {test::ramp({3, 2}, 0.1, -0.2), test::ramp({2}, 0.3, 0.1)}; }
Batch batch() {
  return {tsr::sin(test::ramp({8, 3}, 0.7, 0.0)), tsr::cos(test::ramp({8, 2}, 0.4, 1.0))};
}

TEST(OptimAccumulate, MeanOfMicroBatchesEqualsFullBatch) {
  auto vg = tsr::value_and_grad(mse);
  auto [loss, g] = vg(params(), batch());
  for (int64_t m : {1, 2, 4, 8}) {
    auto [aloss, ag] = optim::accumulate_gradients(vg, params(), batch(), m);
    const std::string what = "num_micro=" + std::to_string(m);
    EXPECT_NEAR(aloss.item<double>(), loss.item<double>(), 1e-5) << what;
    test::expect_close(g.w, ag.w, 1e-5, what + " w");
    test::expect_close(g.b, ag.b, 1e-5, what + " b");
  }
}

TEST(OptimAccumulate, JitEqualsEager) {
  auto vg = tsr::value_and_grad(mse);
  auto step = tsr::jit(
      [vg](const Lin& p, const Batch& b) { return optim::accumulate_gradients(vg, p, b, 4); });
  auto [jl, jg] = step(params(), batch());
  auto [el, eg] = optim::accumulate_gradients(vg, params(), batch(), 4);
  EXPECT_NEAR(jl.item<double>(), el.item<double>(), 1e-6);
  test::expect_close(eg.w, jg.w, 1e-6, "w");
  test::expect_close(eg.b, jg.b, 1e-6, "b");
}

TEST(OptimAccumulate, MicroBatchKHoldsEveryMthRow) {
  // loss = mean(x)^2 is not linear in the split: rows {0,2,4,6} and {1,3,5,7} give
  // (3^2 + 4^2) / 2 = 12.5 (contiguous halves would give 16.25).
  auto vg = tsr::value_and_grad(
      [](const Array& w, const Array& x) { return tsr::square(tsr::mean(x * w)); });
  auto [loss, g] = optim::accumulate_gradients(vg, tsr::ones({}), tsr::arange(8.f), 2);
  EXPECT_NEAR(loss.item<double>(), 12.5, 1e-6);
  // d/dw (w mean)^2 = 2 w mean^2: (2 * 9 + 2 * 16) / 2.
  EXPECT_NEAR(g.item<double>(), 25.0, 1e-5);
}

TEST(OptimAccumulate, BadSplitsAreValueErrors) {
  auto vg = tsr::value_and_grad(mse);
  auto e =
      error_of<tsr::ValueError>([&] { optim::accumulate_gradients(vg, params(), batch(), 3); });
  EXPECT_HAS(e,
             "[optim.accumulate_gradients] batch.x has 8 rows, which 3 micro-batches do "
             "not divide");
  EXPECT_HAS(e, "expected a leading dimension that is a multiple of 3");
  e = error_of<tsr::ValueError>([&] { optim::accumulate_gradients(vg, params(), batch(), 0); });
  EXPECT_HAS(e, "num_micro must be at least 1. Got num_micro=0");
  auto vs = tsr::value_and_grad([](const Array& w, const Array& x) { return w * x; });
  e = error_of<tsr::ValueError>(
      [&] { optim::accumulate_gradients(vs, tsr::ones({}), tsr::ones({}), 2); });
  EXPECT_HAS(e, "batch is a scalar. Got f32[]");
}

}  // namespace
