#pragma once
// float16 / bfloat16 bit conversions, bit-identical to dtype.h's float16_t and
// bfloat16_t, written so the loops that call them vectorise. Shared by the CPU
// kernels and the collectives' reduction loops.
#include <bit>
#include <cstdint>

namespace tsr::detail {

// Bit-identical to dtype.h's conversions (round to nearest even; NaN to a quiet
// NaN), but every case is computed and then picked with integer masks: GCC does
// not if-convert a choice between float results (-ftrapping-math), and a branch
// stops the loops that call these from vectorising.

/** IEEE binary16 bits to float, exactly. */
inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t normal = ((exp + 112u) << 23) | (man << 13);
  // Subnormals (and zero) are man * 2^-24, exact in float.
  uint32_t sub = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(man)) *
                                         5.9604644775390625e-8f);
  uint32_t is_sub = 0u - static_cast<uint32_t>(exp == 0);
  uint32_t is_special = 0u - static_cast<uint32_t>(exp == 0x1fu);
  uint32_t out = (sub & is_sub) | (normal & ~is_sub);
  out |= 0x7f800000u & is_special;  // inf / NaN: all-ones exponent, mantissa kept
  return std::bit_cast<float>(sign | out);
}

/** Float to IEEE binary16 bits; overflow gives inf, NaN 0x7e00 (with the sign). */
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  uint32_t normal = (mag + 0xc8000fffu + ((mag >> 13) & 1u)) >> 13;  // rebias and round
  // Adding 0.5 makes the FPU round the subnormal mantissa to nearest even; the
  // clamp keeps the (unused) sum finite for large inputs.
  uint32_t sub =
      std::bit_cast<uint32_t>(std::bit_cast<float>(mag < 0x38800000u ? mag : 0x38800000u) + 0.5f) -
      0x3f000000u;
  uint32_t is_sub = 0u - static_cast<uint32_t>(mag < 0x38800000u);
  uint32_t out = (sub & is_sub) | (normal & ~is_sub);
  uint32_t is_inf = 0u - static_cast<uint32_t>(mag >= 0x477ff000u);
  out = (0x7c00u & is_inf) | (out & ~is_inf);
  out |= 0x7e00u & (0u - static_cast<uint32_t>(mag > 0x7f800000u));
  return static_cast<uint16_t>(sign | out);
}

/** bfloat16 bits to float, exactly. */
inline float bf16_bits_to_float(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

/** Float to bfloat16 bits, round to nearest even; NaN stays a quiet NaN. */
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

}  // namespace tsr::detail
