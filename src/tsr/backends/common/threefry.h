#pragma once
// threefry2x32 (Salmon et al., SC'11; 20 rounds, JAX's rotation and key-schedule
// constants) and the per-element values of the random primitives, shared by the CPU
// and CUDA kernels so that random numbers are bit-identical on every platform and
// every sharding: element i of a global array hashes its global row-major index.
#include "tsr/core/half_bits.h"
#include "tsr/core/hd.h"

namespace tsr::detail::rng {

/** Two 32-bit words (a counter, a key, or a hash). */
struct Words {
  uint32_t a, b; /**< the words */
};

/** x rotated left by r (0 < r < 32). */
TSR_HD uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/** threefry2x32 of the counter (x0, x1) under the key (k0, k1). */
TSR_HD Words hash(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (uint32_t i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) {
      x0 += x1;
      x1 = rotl(x1, rot[i & 1][j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + i + 1;
  }
  return {x0, x1};
}

/** The hash of element `flat`'s counter (hi32, lo32), as jax's iota_2x32_shape. */
TSR_HD Words at(uint32_t k0, uint32_t k1, uint64_t flat) {
  return hash(k0, k1, static_cast<uint32_t>(flat >> 32), static_cast<uint32_t>(flat));
}

/** uniform float32 in [lo, lo + span): 23 random bits as a float in [1, 2), minus 1. */
TSR_HD float uniform_f32(Words w, float lo, float span) {
  float u = f32_from_bits(((w.a ^ w.b) >> 9) | 0x3F800000u) - 1.0f;
  float v = u * span + lo;
  return v > lo ? v : lo;  // max(lo, v)
}

/** uniform float64: 52 random bits of a << 32 | b. */
TSR_HD double uniform_f64(Words w, double lo, double span) {
  uint64_t b = (static_cast<uint64_t>(w.a) << 32) | w.b;
  uint64_t bits = (b >> 12) | 0x3FF0000000000000ull;
  double u;
#if defined(__CUDA_ARCH__)
  u = __longlong_as_double(static_cast<long long>(bits));
#else
  u = std::bit_cast<double>(bits);
#endif
  double v = (u - 1.0) * span + lo;
  return v > lo ? v : lo;
}

/** uniform float16 / bfloat16 bits (JAX's bit widths: 16 random bits with 10 kept,
 *  or 8 with 7), computed in float and rounded once. lo and span are the bounds
 *  already rounded to the type, as floats. */
TSR_HD uint16_t uniform_half_bits(Words w, bool f16, float lo, float span) {
  uint32_t x = w.a ^ w.b;
  float u = f16 ? half_bits_to_float(static_cast<uint16_t>(((x & 0xFFFFu) >> 6) | 0x3C00u))
                : bf16_bits_to_float(static_cast<uint16_t>(((x & 0xFFu) >> 1) | 0x3F80u));
  u -= 1.0f;
  float t = u * span + lo;
  float v =
      f16 ? half_bits_to_float(float_to_half_bits(t)) : bf16_bits_to_float(float_to_bf16_bits(t));
  float m = v > lo ? v : lo;
  return f16 ? float_to_half_bits(m) : float_to_bf16_bits(m);
}

/** jax.random.randint's arithmetic for one element, everything taken modulo 2^bits
 *  (`mask`); the host computes the plan once from the primitive's parameters. */
struct RandIntPlan {
  uint64_t mask = 0; /**< 2^bits - 1 */
  uint64_t lo = 0;   /**< the clipped lower bound, as bits */
  uint64_t span = 1; /**< values drawn from [lo, lo + span) (0: the whole range) */
  uint64_t mult = 0; /**< 2^(bits/2)^2 mod span */
  int bits = 32;     /**< the integer type's width */
};

/** x % m, with XLA's x % 0 == x. */
TSR_HD uint64_t urem(uint64_t x, uint64_t m) { return m == 0 ? x : x % m; }

/** jax.random.split(key) for randint: the two subkeys. */
TSR_HD void split2(uint32_t k0, uint32_t k1, Words& a, Words& b) {
  a = hash(k0, k1, 0, 0);
  b = hash(k0, k1, 0, 1);
}

/** The randint value of element `flat` under the subkeys (k1, k2), as bits of the
 *  integer type. */
TSR_HD uint64_t randint_bits(const RandIntPlan& p, Words k1, Words k2, uint64_t flat) {
  auto draw = [&](Words k) -> uint64_t {
    Words w = at(k.a, k.b, flat);
    if (p.bits == 64) return (static_cast<uint64_t>(w.a) << 32) | w.b;
    return static_cast<uint64_t>(w.a ^ w.b) & p.mask;
  };
  uint64_t off = ((urem(draw(k1), p.span) * p.mult) & p.mask) + urem(draw(k2), p.span);
  off = urem(off & p.mask, p.span);
  return (p.lo + off) & p.mask;
}

}  // namespace tsr::detail::rng
