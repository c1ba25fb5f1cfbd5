#pragma once
// The timing loop the MLP benchmarks share: a jitted step on random x, y placed on
// "data" of the context mesh, warmed up (trace, lower, allocator), then timed with
// each iteration waiting for the new params. TSR_BENCH_SHOW_LOCAL=1 prints the
// lowered step.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "../examples/mlp.h"
#include "tsr/tsr.h"

namespace bench {

/** Times `step(p, x, y) -> (params, loss)` on `batch` examples; the last loss. */
template <class Step>
float time_mlp_steps(benchmark::State& st, Step& step, mlp::Params p, const mlp::Sizes& sizes,
                     int64_t batch) {
  using namespace tsr;
  Array k = random::key(1);
  Array x = device_put(random::normal(random::fold_in(k, 0), {batch, sizes.in}), P("data"));
  Array y =
      device_put(random::randint(random::fold_in(k, 1), {batch}, 0, sizes.classes), P("data"));
  for (int i = 0; i < 3; ++i) p = step(p, x, y).first;
  if (std::getenv("TSR_BENCH_SHOW_LOCAL"))
    std::fprintf(stderr, "%s\n", step.lower(p, x, y).local.c_str());
  p.w1.block_until_ready();
  Array loss;
  for (auto _ : st) {
    auto [next, l] = step(p, x, y);
    p = std::move(next);
    loss = l;
    loss.block_until_ready();
    p.w1.block_until_ready();
  }
  return loss.item<float>();
}

}  // namespace bench
