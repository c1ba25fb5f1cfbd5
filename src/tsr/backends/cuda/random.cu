// CUDA random kernels and their launchers (launch.h): each element hashes its global
// row-major index with the key, through backends/common/threefry.h, the code the CPU
// kernels run, so the bits are the same on both platforms and under any sharding.
#include "tsr/backends/common/threefry.h"
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// The global flat index of local element i: base + sum(local index * global stride).
__device__ __forceinline__ uint64_t global_flat(const Strides& g, uint64_t base, int64_t i) {
  return base + static_cast<uint64_t>(offset_of(g, 0, i));
}

template <typename T>
__global__ void bits_k(const uint32_t* key, T* out, Strides g, uint64_t base, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    rng::Words w = rng::at(key[0], key[1], global_flat(g, base, i));
    if constexpr (sizeof(T) == 8) {
      out[i] = (static_cast<uint64_t>(w.a) << 32) | w.b;
    } else {
      out[i] = static_cast<T>(w.a ^ w.b);  // JAX: the low bits of out0 ^ out1
    }
  }
}

template <typename T>
__global__ void uniform_k(const uint32_t* key, T* out, Strides g, uint64_t base, int64_t n,
                          double lo, double span) {
  TSR_CUDA_FOR(i, n) {
    rng::Words w = rng::at(key[0], key[1], global_flat(g, base, i));
    if constexpr (__is_same(T, float)) {
      out[i] = rng::uniform_f32(w, static_cast<float>(lo), static_cast<float>(span));
    } else if constexpr (__is_same(T, double)) {
      out[i] = rng::uniform_f64(w, lo, span);
    } else {
      out[i].bits = rng::uniform_half_bits(w, __is_same(T, float16_t), static_cast<float>(lo),
                                           static_cast<float>(span));
    }
  }
}

template <typename T>
__global__ void randint_k(const uint32_t* key, T* out, Strides g, uint64_t base, int64_t n,
                          rng::RandIntPlan plan) {
  TSR_CUDA_FOR(i, n) {
    rng::Words k1, k2;
    rng::split2(key[0], key[1], k1, k2);  // two hashes per element: cheaper than a sync
    out[i] = static_cast<T>(rng::randint_bits(plan, k1, k2, global_flat(g, base, i)));
  }
}

__global__ void threefry_k(const uint32_t* key, const uint32_t* x0, const uint32_t* x1,
                           uint32_t* y0, uint32_t* y1, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    rng::Words w = rng::hash(key[0], key[1], x0[i], x1[i]);
    y0[i] = w.a;
    y1[i] = w.b;
  }
}

}  // namespace

void random_launch(const RandomCall& c, cudaStream_t s) {
  if (c.n == 0) return;
  Launch l = launch_1d(c.n);
  dispatch_real(c.t, "random", [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(c.out);
    if (c.kind == 0) {
      if constexpr (__is_same(T, uint8_t) || __is_same(T, uint16_t) || __is_same(T, uint32_t) ||
                    __is_same(T, uint64_t))
        bits_k<T><<<l.blocks, l.threads, 0, s>>>(c.key, out, c.global, c.base, c.n);
      else
        unsupported("random_bits", c.t);
    } else if (c.kind == 1) {
      if constexpr (__is_same(T, float) || __is_same(T, double) || __is_same(T, float16_t) ||
                    __is_same(T, bfloat16_t))
        uniform_k<T>
            <<<l.blocks, l.threads, 0, s>>>(c.key, out, c.global, c.base, c.n, c.lo, c.span);
      else
        unsupported("random_uniform", c.t);
    } else {
      if constexpr (ops::Traits<Compute<T>>::kInt && __is_same(Compute<T>, T))
        randint_k<T><<<l.blocks, l.threads, 0, s>>>(c.key, out, c.global, c.base, c.n, c.plan);
      else
        unsupported("random_randint", c.t);
    }
  });
  check(cudaGetLastError(), "random", "kernel launch");
}

void threefry_launch(const uint32_t* key, const uint32_t* x0, const uint32_t* x1, uint32_t* y0,
                     uint32_t* y1, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  threefry_k<<<l.blocks, l.threads, 0, s>>>(key, x0, x1, y0, y1, n);
  check(cudaGetLastError(), "threefry2x32", "kernel launch");
}

}  // namespace tsr::detail::cuda
