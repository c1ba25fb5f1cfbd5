// CUDA conv_general_dilated and its launcher (launch.h): one thread per output element
// runs the CPU's direct loop (features of the group outer, kernel taps inner, in the
// CPU's accumulation type), the taps through the shared window arithmetic
// (backends/common/window_ops.h's window_tap, which the CPU loop also calls). So the
// result is the CPU direct loop's bit for bit; the CPU runs float32 and bfloat16 on
// oneDNN, whose sums round in another order.
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

constexpr int kS = kConvMaxSpatial;

template <typename A, typename S>
__global__ void conv_k(const S* lhs, const S* rhs, A* out, ConvPlan p, int64_t total) {
  TSR_CUDA_FOR(t, total) {
    int64_t y[kS];
    int64_t r = t;
    for (int i = p.ns - 1; i >= 0; --i) {
      int64_t q = r / p.o_size[i];
      y[i] = r - q * p.o_size[i];
      r = q;
    }
    const int64_t o = r % p.O, n = r / p.O;
    const int64_t n_in = (o / p.ob) * p.nb + n, c0 = (o / p.og) * p.I;
    A acc = A(0);
    for (int64_t c = 0; c < p.I; ++c) {
      const int64_t lbase = n_in * p.l_stride[0] + (c0 + c) * p.l_stride[1];
      const int64_t rbase = o * p.r_stride[0] + c * p.r_stride[1];
      for (int64_t k = 0; k < p.K; ++k) {
        int64_t rem = k, loff = lbase, roff = rbase;
        bool ok = true;
        for (int i = p.ns - 1; i >= 0; --i) {
          int64_t q = rem / p.r_size[i], ki = rem - q * p.r_size[i];
          rem = q;
          int64_t x = window_tap(y[i], ki, p.stride[i], p.rhs_dilation[i], p.pad_lo[i],
                                 p.lhs_dilation[i], p.l_size[i]);
          if (x < 0) {
            ok = false;
            break;
          }
          loff += x * p.l_stride[2 + i];
          roff += ki * p.r_stride[2 + i];
        }
        if (ok) acc += static_cast<A>(load(lhs[loff])) * static_cast<A>(load(rhs[roff]));
      }
    }
    int64_t ooff = n * p.o_stride[0] + o * p.o_stride[1];
    for (int i = 0; i < p.ns; ++i) ooff += y[i] * p.o_stride[2 + i];
    out[ooff] = acc;
  }
}

}  // namespace

void conv_launch(DType t, DType acc_t, const void* lhs, const void* rhs, void* out,
                 const ConvPlan& p, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "conv_general_dilated", [&](auto tag) {
    using S = decltype(tag);
    auto run = [&](auto atag) {
      using A = decltype(atag);
      conv_k<A, S><<<l.blocks, l.threads, 0, s>>>(
          static_cast<const S*>(lhs), static_cast<const S*>(rhs), static_cast<A*>(out), p, n);
    };
    if (acc_t == DType::Float64)
      run(double{});
    else if (acc_t == DType::Float32)
      run(float{});
    else
      run(int64_t{});
  });
  check(cudaGetLastError(), "conv_general_dilated", "kernel launch");
}

}  // namespace tsr::detail::cuda
