#pragma once
// cuda_bench's runtime figures (issue 27), on the CUDA devices the runtime made
// (TSR_CUDA_VIRTUAL_DEVICES=8: eight virtual devices on GPU 0):
//   allreduce/256MiB: jit(shard_map(psum)) of 256 MiB float32 per device over 8
//     devices vs the bound of reading each input and writing each output once: 8
//     device-to-device copies of 256 MiB, timed alone (cudaMemcpy);
//   dispatch: eager adds of 8 floats, amortised over 256 per sync, on 1 and 8 CUDA
//     devices and on 1 and 8 CPU devices in the same run (the CPU is the reference);
//   mlp_step: examples/mlp.h's jitted SGD step (784-1024-1024-10, batch 256) on 1 and
//     8 CUDA devices vs its eight GEMMs as direct cuBLAS calls (the GEMM floor).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "../examples/mlp.h"
#include "tsr/tsr.h"

namespace bench_cuda {

/** Median wall milliseconds of `reps` calls of f (after one warm-up call). */
inline double wall_ms(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

inline tsr::Mesh mesh_on(tsr::Platform p, int n, const char* axis) {
  auto all = tsr::devices(p);
  return tsr::make_mesh({n}, {axis}, {}, std::vector<tsr::Device>(all.begin(), all.begin() + n));
}

inline void allreduce(int reps, double (*copy_ms)(size_t, int)) {
  using namespace tsr;
  constexpr int64_t kFloats = int64_t{64} << 20;  // 256 MiB per device
  Mesh m = mesh_on(Platform::CUDA, 8, "x");
  Array x = ones({8 * kFloats}, float32, NamedSharding(m, P("x")));
  auto f = jit(shard_map([](const Array& b) { return psum(b, "x"); },
                         {.mesh = m, .in_specs = P("x"), .out_specs = P()}));
  const double ours = wall_ms(reps, [&] { f(x).block_until_ready(); });
  const double bound = 8 * copy_ms(static_cast<size_t>(kFloats) * 4, reps);
  std::printf("%-18s tessera %9.3f ms   bound     %9.3f ms   ratio %.3f   GB/s/device %.1f\n",
              "allreduce/256MiB", ours, bound, bound / ours, kFloats * 4 / (ours * 1e-3) / 1e9);
}

inline void dispatch(int reps) {
  using namespace tsr;
  constexpr int kBatch = 256;
  for (Platform p : {Platform::CUDA, Platform::CPU}) {
    for (int n : {1, 8}) {
      Mesh m = mesh_on(p, n, "x");
      Array x = ones({8}, float32, NamedSharding(m, P()));
      Array y = zeros({8}, float32, NamedSharding(m, P()));
      const double ms = wall_ms(reps, [&] {
        for (int i = 0; i < kBatch; ++i) y = add(y, x);
        y.block_until_ready();
      });
      std::printf("dispatch/%s/%d      %8.2f us/op\n", p == Platform::CUDA ? "cuda" : "cpu ", n,
                  ms * 1e3 / kBatch);
    }
  }
}

inline void mlp_step(int reps) {
  using namespace tsr;
  const mlp::Sizes s{};
  constexpr int64_t kBatch = 256;
  // The step's eight GEMMs (column-major cuBLAS on row-major data: C^T = B^T A^T).
  const int b = kBatch, i = static_cast<int>(s.in), h1 = static_cast<int>(s.h1),
            h2 = static_cast<int>(s.h2), c = static_cast<int>(s.classes);
  std::vector<float*> buf(13);
  const size_t sizes[13] = {size_t(b) * i,
                            size_t(i) * h1,
                            size_t(h1) * h2,
                            size_t(h2) * c,
                            size_t(b) * h1,
                            size_t(b) * h2,
                            size_t(b) * c,
                            size_t(b) * h1,
                            size_t(b) * h2,
                            size_t(i) * h1,
                            size_t(h1) * h2,
                            size_t(h2) * c,
                            1};
  for (int k = 0; k < 13; ++k) cudaMalloc(&buf[k], sizes[k] * 4);
  for (int k = 0; k < 13; ++k) cudaMemset(buf[k], 0, sizes[k] * 4);
  float *x = buf[0], *w1 = buf[1], *w2 = buf[2], *w3 = buf[3], *a1 = buf[4], *a2 = buf[5],
        *lo = buf[6], *g1 = buf[7], *g2 = buf[8], *dw1 = buf[9], *dw2 = buf[10], *dw3 = buf[11];
  cublasHandle_t hd;
  cublasCreate(&hd);
  const float one = 1, zero = 0;
  auto mm = [&](cublasOperation_t ta, cublasOperation_t tb, int M, int N, int K, const float* A,
                int lda, const float* B, int ldb, float* C, int ldc) {
    // Row-major C[M,N] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    cublasSgemm(hd, tb, ta, N, M, K, &one, B, ldb, A, lda, &zero, C, ldc);
  };
  const auto N_ = CUBLAS_OP_N, T_ = CUBLAS_OP_T;
  const double floor = wall_ms(reps, [&] {
    mm(N_, N_, b, h1, i, x, i, w1, h1, a1, h1);
    mm(N_, N_, b, h2, h1, a1, h1, w2, h2, a2, h2);
    mm(N_, N_, b, c, h2, a2, h2, w3, c, lo, c);
    mm(T_, N_, h2, c, b, a2, h2, lo, c, dw3, c);
    mm(N_, T_, b, h2, c, lo, c, w3, c, g2, h2);
    mm(T_, N_, h1, h2, b, a1, h1, g2, h2, dw2, h2);
    mm(N_, T_, b, h1, h2, g2, h2, w2, h2, g1, h1);
    mm(T_, N_, i, h1, b, x, i, g1, h1, dw1, h1);
    cudaDeviceSynchronize();
  });
  cublasDestroy(hd);
  for (float* p : buf) cudaFree(p);
  for (int n : {1, 8}) {
    Mesh m = mesh_on(Platform::CUDA, n, "data");
    MeshScope scope(m);
    mlp::Params p = mlp::init_params(s, 0, P());
    Array k = random::key(1);
    Array xs = device_put(random::normal(random::fold_in(k, 0), {kBatch, s.in}), P("data"));
    Array ys =
        device_put(random::randint(random::fold_in(k, 1), {kBatch}, 0, s.classes), P("data"));
    auto step = mlp::make_step(0.01);
    for (int w = 0; w < 3; ++w) p = step(p, xs, ys).first;
    const double ms = wall_ms(reps, [&] {
      auto [next, l] = step(p, xs, ys);
      p = std::move(next);
      l.block_until_ready();
      p.w1.block_until_ready();
    });
    std::printf(
        "mlp_step/%d         tessera %9.3f ms   gemm floor %8.3f ms   fraction %.3f   "
        "examples/s %.0f\n",
        n, ms, floor, floor / ms, kBatch / (ms * 1e-3));
  }
}

}  // namespace bench_cuda
