// The device groups' combine step (comm/device/): dst = op(a, b) elementwise, with the
// host groups' rules (comm/combine.h) and the half types rounded once per step, so a
// GPU all_reduce matches the CPU's bit for bit.
#include "tsr/backends/cuda/element.cuh"
#include "tsr/backends/cuda/launch.h"
#include "tsr/comm/combine.h"

namespace tsr::detail::cuda {
namespace {

template <ReduceOp Op, typename S>
__global__ void combine_k(S* dst, const S* a, const S* b, int64_t n) {
  TSR_CUDA_FOR(i, n) { dst[i] = store<S>(combine<Op>(load(a[i]), load(b[i]))); }
}

}  // namespace

void combine_launch(void* dst, const void* a, const void* b, int64_t n, DType dt, int op,
                    cudaStream_t s) {
  if (n == 0) return;
  auto o = static_cast<ReduceOp>(op);
  // Bool is bytes 0 / 1: or is max, and is min.
  if (dt == DType::Bool) {
    dt = DType::UInt8;
    o = (o == ReduceOp::Sum || o == ReduceOp::Max) ? ReduceOp::Max : ReduceOp::Min;
  }
  const Launch l = launch_1d(n);
  dispatch_real(dt, "all_reduce", [&](auto tag) {
    using S = decltype(tag);
    auto* d = static_cast<S*>(dst);
    const auto* x = static_cast<const S*>(a);
    const auto* y = static_cast<const S*>(b);
    switch (o) {
      case ReduceOp::Sum:
        combine_k<ReduceOp::Sum, S><<<l.blocks, l.threads, 0, s>>>(d, x, y, n);
        break;
      case ReduceOp::Max:
        combine_k<ReduceOp::Max, S><<<l.blocks, l.threads, 0, s>>>(d, x, y, n);
        break;
      case ReduceOp::Min:
        combine_k<ReduceOp::Min, S><<<l.blocks, l.threads, 0, s>>>(d, x, y, n);
        break;
      case ReduceOp::Prod:
        combine_k<ReduceOp::Prod, S><<<l.blocks, l.threads, 0, s>>>(d, x, y, n);
        break;
    }
  });
  check(cudaGetLastError(), "all_reduce", "combine kernel launch");
}

}  // namespace tsr::detail::cuda
