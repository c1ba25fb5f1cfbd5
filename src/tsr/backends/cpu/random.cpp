// Random kernels: threefry2x32 over counters computed from each element's global
// row-major index, so a device produces exactly its block of the global array. The
// hash and each element's value are backends/common/threefry.h's (shared with the
// CUDA kernels: random numbers do not depend on the platform).
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "tsr/backends/common/random_plan.h"
#include "tsr/backends/common/threefry.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/random.h"

namespace tsr::detail::cpu {
namespace {

using rng::Words;

// The hash of element `flat`'s counter (backends/common/threefry.h, shared with CUDA).
inline Words at(const uint32_t* key, uint64_t flat) { return rng::at(key[0], key[1], flat); }

// Calls f(local_offset, global_flat_index) for every element of the block, one
// contiguous last-dim run at a time (the inner loop vectorises).
template <typename F>
void for_block(const KernelArgs& a, const Shape& global, F&& f) {
  const Shape& ls = (*a.out)[0].shape;
  int64_t n = numel(ls);
  if (n == 0) return;
  int r = static_cast<int>(ls.size());
  if (r == 0) {
    f(0, 0);
    return;
  }
  Shape origin = a.out_origin ? *a.out_origin : Shape(r, 0);
  std::vector<int64_t> w = row_major_strides(global);
  int64_t run = ls[r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t off = 0; off < n; off += run) {
    uint64_t start = 0;
    for (int d = 0; d < r; ++d) start += static_cast<uint64_t>((origin[d] + idx[d]) * w[d]);
    for (int64_t j = 0; j < run; ++j) f(off + j, start + static_cast<uint64_t>(j));
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < ls[d]) break;
      idx[d] = 0;
    }
  }
}

// ---- uniform: JAX's bit-width rule (16-bit floats from 16 or 8 bits, f64 from 64).

// max(lo, u * span + lo) in T; the 16-bit floats compute in float and round once,
// as XLA's CPU backend does with its default excess precision.
template <typename T>
void uniform_typed(const KernelArgs& a, const prim::RandomBits& p, const uint32_t* key) {
  T* out = a.o<T>(0);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const T lo = static_cast<T>(p.fmin()), hi = static_cast<T>(p.fmax());
    const T span = hi - lo;
    for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
      if constexpr (std::is_same_v<T, float>) {
        out[o] = rng::uniform_f32(at(key, i), lo, span);
      } else {
        out[o] = rng::uniform_f64(at(key, i), lo, span);
      }
    });
  } else {
    constexpr bool kF16 = std::is_same_v<T, float16_t>;
    const float lo = to_float(T(static_cast<float>(p.fmin())));
    const float hi = to_float(T(static_cast<float>(p.fmax())));
    const float span = hi - lo;
    for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
      out[o].bits = rng::uniform_half_bits(at(key, i), kF16, lo, span);
    });
  }
}

}  // namespace

}  // namespace tsr::detail::cpu

namespace tsr::detail::rng {

RandIntPlan randint_plan(const prim::RandomBits& p, DType t) {
  rng::RandIntPlan r;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      constexpr int kBits = 8 * sizeof(T);
      using U = uint64_t;
      constexpr U kMask = kBits == 64 ? ~U(0) : (U(1) << kBits) - 1;
      const int64_t tmin = static_cast<int64_t>(std::numeric_limits<T>::min());
      const int64_t tmax = std::numeric_limits<T>::max() > static_cast<uint64_t>(INT64_MAX)
                               ? INT64_MAX
                               : static_cast<int64_t>(std::numeric_limits<T>::max());
      // Clip the bounds to T; an out-of-range maxval widens the span by one.
      int64_t lo = std::clamp(p.imin(), tmin, tmax), hi = std::clamp(p.imax(), tmin, tmax);
      bool hi_out = p.imax() > tmax;
      U span = (static_cast<U>(hi) - static_cast<U>(lo)) & kMask;
      if (hi <= lo) span = 1;
      if (hi_out && hi > lo) span = (span + 1) & kMask;
      U mult = rng::urem(U(1) << (kBits / 2), span);
      mult = rng::urem((mult * mult) & kMask, span);
      r.mask = kMask;
      r.lo = static_cast<U>(lo) & kMask;
      r.span = span;
      r.mult = mult;
      r.bits = kBits;
    }
  });
  return r;
}

}  // namespace tsr::detail::rng

namespace tsr::detail::cpu {
namespace {

// jax.random.randint with k1, k2 = split(key) and nbits-wide bits.
template <typename T>
void randint_typed(const KernelArgs& a, const prim::RandomBits& p, const uint32_t* key) {
  rng::RandIntPlan plan = rng::randint_plan(p, dtype_v<T>);
  Words k1, k2;
  rng::split2(key[0], key[1], k1, k2);
  T* out = a.o<T>(0);
  for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
    out[o] = static_cast<T>(rng::randint_bits(plan, k1, k2, i));
  });
}

}  // namespace

void random_bits(const KernelArgs& a) {
  const auto& p = static_cast<const prim::RandomBits&>(*a.prim);
  const uint32_t* key = a.i<uint32_t>(0);
  DType dt = (*a.out)[0].dtype;
  switch (p.dist()) {
    case prim::RandomDist::Bits:
      // JAX's _threefry_random_bits_partitionable: 8/16/32 bits are the low bits of
      // out0 ^ out1; 64 bits are out0 << 32 | out1.
      if (dt == DType::UInt8) {
        uint8_t* out = a.o<uint8_t>(0);
        for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
          Words w = at(key, i);
          out[o] = static_cast<uint8_t>(w.a ^ w.b);
        });
      } else if (dt == DType::UInt16) {
        uint16_t* out = a.o<uint16_t>(0);
        for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
          Words w = at(key, i);
          out[o] = static_cast<uint16_t>(w.a ^ w.b);
        });
      } else if (dt == DType::UInt64) {
        uint64_t* out = a.o<uint64_t>(0);
        for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
          Words w = at(key, i);
          out[o] = (static_cast<uint64_t>(w.a) << 32) | w.b;
        });
      } else {
        uint32_t* out = a.o<uint32_t>(0);
        for_block(a, p.shape(), [&](int64_t o, uint64_t i) {
          Words w = at(key, i);
          out[o] = w.a ^ w.b;
        });
      }
      return;
    case prim::RandomDist::Uniform:
      dispatch_dtype(dt, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_floating_point_v<T> || kIsHalf<T>) uniform_typed<T>(a, p, key);
      });
      return;
    case prim::RandomDist::RandInt:
      dispatch_dtype(dt, [&](auto t) {
        using T = decltype(t);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          randint_typed<T>(a, p, key);
      });
      return;
  }
}

void threefry2x32(const KernelArgs& a) {
  const uint32_t* key = a.i<uint32_t>(0);
  const uint32_t* x0 = a.i<uint32_t>(1);
  const uint32_t* x1 = a.i<uint32_t>(2);
  uint32_t* y0 = a.o<uint32_t>(0);
  uint32_t* y1 = a.o<uint32_t>(1);
  int64_t n = numel((*a.out)[0].shape);
  for (int64_t i = 0; i < n; ++i) {
    Words w = rng::hash(key[0], key[1], x0[i], x1[i]);
    y0[i] = w.a;
    y1[i] = w.b;
  }
}

}  // namespace tsr::detail::cpu
