// CUDA kernels against their references, in one run on one GPU (issue 27):
//   gemm/sgemm/8192, gemm/bf16/8192: Tessera's dot_general kernel vs cuBLAS called
//     directly with the same settings (goal: >= 0.95x);
//   chain/256M: a 6-op fused elementwise chain over 256 M float32 (one NVRTC kernel)
//     vs a device-to-device copy of the same bytes (goal: >= 80 % of its bandwidth).
//   and the runtime's figures (cuda_runtime_sections.h): all_reduce over 8 virtual
//     devices, eager dispatch, the MLP training step.
// Prints a table and exits 0 without a GPU ("no GPU: ...") so builds can run it anywhere.
// Run: TSR_CUDA_VIRTUAL_DEVICES=8 build/bench/cuda_bench [--reps N]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda_runtime_sections.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/backends/fused.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/linalg.h"

using namespace tsr;
using namespace tsr::detail;

namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median milliseconds of `reps` runs of f (after one warm-up), timed with events.
double median_ms(int reps, const std::function<void()>& f) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  f();
  ck(cudaDeviceSynchronize(), "sync");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    ck(cudaEventRecord(a), "record");
    f();
    ck(cudaEventRecord(b), "record");
    ck(cudaEventSynchronize(b), "sync");
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b), "elapsed");
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void* dev_alloc(size_t bytes, unsigned char fill) {
  void* p = nullptr;
  ck(cudaMalloc(&p, bytes), "cudaMalloc");
  ck(cudaMemset(p, fill, bytes), "cudaMemset");
  return p;
}

void row(const char* name, double ours_ms, double ref_ms, const char* what, double per_s) {
  std::printf("%-18s tessera %9.3f ms   reference %9.3f ms   ratio %.3f   %s %.1f\n", name, ours_ms,
              ref_ms, ref_ms / ours_ms, what, per_s);
}

void gemm(DType t, int64_t n, int reps) {
  size_t isz = itemsize(t);
  // 0x3c bytes: small positive values in every float format (no overflow, no NaN).
  void* a = dev_alloc(n * n * isz, 0x3c);
  void* b = dev_alloc(n * n * isz, 0x3c);
  void* c = dev_alloc(n * n * isz, 0);
  prim::DotGeneral p({{1}, {0}, {}, {}}, std::nullopt, t);
  std::vector<LocalType> in = {{{n, n}, t}, {{n, n}, t}}, out = {{{n, n}, t}};
  const void* ip[] = {a, b};
  void* op[] = {c};
  KernelArgs k;
  k.prim = &p;
  k.in = &in;
  k.out = &out;
  k.in_ptr = ip;
  k.out_ptr = op;
  KernelFn fn = find_kernel("dot_general", "cuda");
  double ours = median_ms(reps, [&] { fn(k); });
  cublasHandle_t h;
  cublasCreate(&h);
  cudaDataType_t dt = t == DType::BFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  const float one = 1, zero = 0;
  double ref = median_ms(reps, [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, dt, n, a, dt, n, &zero, c, dt, n,
                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  cublasDestroy(h);
  double tflops = 2.0 * n * n * n / (ours * 1e-3) / 1e12;
  row(t == DType::BFloat16 ? "gemm/bf16/8192" : "gemm/sgemm/8192", ours, ref, "TFLOP/s", tflops);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

void chain(int64_t n, int reps) {
  using Ref = FusedElementwise::Ref;
  const DType f32 = DType::Float32;
  void* x = dev_alloc(n * 4, 0x3c);
  void* y = dev_alloc(n * 4, 0);
  float consts[2] = {0.5f, 1.25f};
  void* s = dev_alloc(8, 0);
  ck(cudaMemcpy(s, consts, 8, cudaMemcpyHostToDevice), "memcpy");
  // y = max(tanh(x * 0.5 + 1.25) * x, 0.5) - x: five ops, one read of x, one write of y.
  FusedElementwise f;
  f.n = n;
  auto mem = [&](PrimPtr p, std::vector<Ref> ins, Ref o) {
    FusedElementwise::Member m;
    m.prim = std::move(p);
    m.ins = std::move(ins);
    m.outs = {o};
    for (size_t i = 0; i < m.ins.size(); ++i) m.blk_in.push_back({Shape{n}, f32});
    m.blk_out = {{Shape{n}, f32}};
    return m;
  };
  auto B = [](prim::BinaryOp op) { return std::make_shared<prim::Binary>(op); };
  Ref X{Ref::Kind::In, 0, false, 4}, C0{Ref::Kind::In, 1, true, 4}, C1{Ref::Kind::In, 2, true, 4};
  Ref t0{Ref::Kind::Tmp, 0, false, 4}, t1{Ref::Kind::Tmp, 1, false, 4},
      t2{Ref::Kind::Tmp, 2, false, 4}, t3{Ref::Kind::Tmp, 3, false, 4},
      t4{Ref::Kind::Tmp, 4, false, 4}, Y{Ref::Kind::Out, 0, false, 4};
  f.members.push_back(mem(B(prim::BinaryOp::Mul), {X, C0}, t0));
  f.members.push_back(mem(B(prim::BinaryOp::Add), {t0, C1}, t1));
  f.members.push_back(mem(std::make_shared<prim::Unary>(prim::UnaryOp::Tanh), {t1}, t2));
  f.members.push_back(mem(B(prim::BinaryOp::Mul), {t2, X}, t3));
  f.members.push_back(mem(B(prim::BinaryOp::Max), {t3, C0}, t4));
  f.members.push_back(mem(B(prim::BinaryOp::Sub), {t4, X}, Y));
  std::vector<LocalType> in = {{{n}, f32}, {{}, f32}, {{}, f32}}, out = {{{n}, f32}};
  const void* ip[] = {x, s, static_cast<char*>(s) + 4};
  void* op[] = {y};
  KernelArgs k;
  k.prim = &f;
  k.in = &in;
  k.out = &out;
  k.in_ptr = ip;
  k.out_ptr = op;
  KernelFn fn = find_kernel("fused_elementwise", "cuda");
  double ours = median_ms(reps, [&] { fn(k); });
  double copy = median_ms(reps, [&] { cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice); });
  double gbs = 2.0 * n * 4 / (ours * 1e-3) / 1e9;  // bytes read + written
  row("chain/256M", ours, copy, "GB/s", gbs);
  cudaFree(x);
  cudaFree(y);
  cudaFree(s);
}

// Median ms of a device-to-device copy of `bytes` (the all-reduce bound's unit).
double copy_ms(size_t bytes, int reps) {
  void* a = dev_alloc(bytes, 1);
  void* b = dev_alloc(bytes, 0);
  const double ms =
      median_ms(reps, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); });
  cudaFree(a);
  cudaFree(b);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 10;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  if (cuda::gpu_count() == 0) {
    std::printf("no GPU: %s (nothing measured)\n", cuda::no_gpu_reason());
    return 0;
  }
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("GPU: %s, %d SMs; medians of %d runs; ratio = reference / tessera\n", prop.name,
              prop.multiProcessorCount, reps);
  gemm(DType::Float32, 8192, reps);
  gemm(DType::BFloat16, 8192, reps);
  chain(int64_t{256} << 20, reps);
  if (tsr::devices(tsr::Platform::CUDA).size() < 8) {
    std::printf(
        "runtime figures skipped: fewer than 8 CUDA devices (TSR_CUDA_VIRTUAL_DEVICES=8)\n");
    return 0;
  }
  bench_cuda::allreduce(reps, copy_ms);
  bench_cuda::dispatch(reps);
  bench_cuda::mlp_step(reps);
  return 0;
}
