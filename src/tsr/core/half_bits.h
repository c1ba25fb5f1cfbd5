#pragma once
// float16 / bfloat16 bit conversions, bit-identical to dtype.h's float16_t and
// bfloat16_t, written so the loops that call them vectorise. Shared by the CPU
// kernels, the collectives' reduction loops and the CUDA kernels (core/hd.h).
#include "tsr/core/hd.h"

namespace tsr::detail {

// Bit-identical to dtype.h's conversions (round to nearest even; NaN to a quiet
// NaN), but every case is computed and then picked with integer masks: GCC does
// not if-convert a choice between float results (-ftrapping-math), and a branch
// stops the loops that call these from vectorising.

/** IEEE binary16 bits to float, exactly. */
TSR_HD float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t normal = ((exp + 112u) << 23) | (man << 13);
  // Subnormals (and zero) are man * 2^-24, exact in float.
  uint32_t sub = f32_bits(static_cast<float>(static_cast<int32_t>(man)) * 5.9604644775390625e-8f);
  uint32_t is_sub = 0u - static_cast<uint32_t>(exp == 0);
  uint32_t is_special = 0u - static_cast<uint32_t>(exp == 0x1fu);
  uint32_t out = (sub & is_sub) | (normal & ~is_sub);
  out |= 0x7f800000u & is_special;  // inf / NaN: all-ones exponent, mantissa kept
  return f32_from_bits(sign | out);
}

/** Float to IEEE binary16 bits; overflow gives inf, NaN 0x7e00 (with the sign). */
TSR_HD uint16_t float_to_half_bits(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  uint32_t normal = (mag + 0xc8000fffu + ((mag >> 13) & 1u)) >> 13;  // rebias and round
  // Adding 0.5 makes the FPU round the subnormal mantissa to nearest even; the
  // clamp keeps the (unused) sum finite for large inputs.
  uint32_t sub =
      f32_bits(f32_from_bits(mag < 0x38800000u ? mag : 0x38800000u) + 0.5f) - 0x3f000000u;
  uint32_t is_sub = 0u - static_cast<uint32_t>(mag < 0x38800000u);
  uint32_t out = (sub & is_sub) | (normal & ~is_sub);
  uint32_t is_inf = 0u - static_cast<uint32_t>(mag >= 0x477ff000u);
  out = (0x7c00u & is_inf) | (out & ~is_inf);
  out |= 0x7e00u & (0u - static_cast<uint32_t>(mag > 0x7f800000u));
  return static_cast<uint16_t>(sign | out);
}

/** bfloat16 bits to float, exactly. */
TSR_HD float bf16_bits_to_float(uint16_t h) {
  return f32_from_bits(static_cast<uint32_t>(h) << 16);
}

/** Float to bfloat16 bits, round to nearest even; NaN stays a quiet NaN. */
TSR_HD uint16_t float_to_bf16_bits(float f) {
  uint32_t u = f32_bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/** d rounded to float "to odd": an inexact result is truncated toward zero and gets
 *  its last mantissa bit set. Rounding that float to a half type (at least 2 bits
 *  shorter) then gives the correctly rounded half of d; rounding d to float to nearest
 *  first could land on a half tie and round the wrong way. */
TSR_HD float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;  // exact, or NaN
  uint32_t b = f32_bits(f);
  double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
  if (af > (d < 0 ? -d : d)) --b;  // rounded away from zero
  return f32_from_bits(b | 1u);
}

}  // namespace tsr::detail
