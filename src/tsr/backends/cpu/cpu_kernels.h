#pragma once
// Declarations shared by the CPU kernel files. Each kernel works on one device's
// local blocks (row-major, contiguous); register.cpp maps primitive names to them.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/dtype.h"
#include "tsr/shape.h"

namespace tsr::detail::cpu {

// ---- kernels (one per primitive family; the primitive's parameters pick the op)

void unary(const KernelArgs& a);                /**< every UnaryOp */
void integer_pow(const KernelArgs& a);          /**< x ** y, static integer y */
void binary(const KernelArgs& a);               /**< every BinaryOp, with broadcasting */
void select_n(const KernelArgs& a);             /**< select_n(which, case0, ...) */
void clamp(const KernelArgs& a);                /**< clamp(lo, x, hi) */
void convert_element_type(const KernelArgs& a); /**< dtype conversion */

void reduce(const KernelArgs& a);     /**< reduce_sum/prod/max/min/and/or */
void arg_reduce(const KernelArgs& a); /**< argmax / argmin */

void dot_general(const KernelArgs& a); /**< batched contraction (GEMM) */

void copy_input(const KernelArgs& a); /**< reshape, squeeze, reshard: the bytes unchanged */
void transpose(const KernelArgs& a);
void broadcast_in_dim(const KernelArgs& a);
void slice(const KernelArgs& a);
void dynamic_slice(const KernelArgs& a);
void dynamic_update_slice(const KernelArgs& a);
void pad(const KernelArgs& a);
void concatenate(const KernelArgs& a);
void split(const KernelArgs& a);
void rev(const KernelArgs& a);

void iota(const KernelArgs& a);
void full(const KernelArgs& a);

// ---- float16 / bfloat16

/** True for the 16-bit float storage types, which compute through float. */
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// Bit-identical to dtype.h's conversions (round to nearest even; NaN to a quiet
// NaN), but every case is computed and then picked with integer masks: GCC does
// not if-convert a choice between float results (-ftrapping-math), and a branch
// stops the loops that call these from vectorising.

/** IEEE binary16 bits to float, exactly. */
inline float f16_bits_to_float(uint16_t h) {
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
inline uint16_t float_to_f16_bits(float f) {
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

/** The float value of a float16 / bfloat16 element. */
inline float to_float(float16_t v) { return f16_bits_to_float(v.bits); }
inline float to_float(bfloat16_t v) { return bf16_bits_to_float(v.bits); }

/** Widens n half values to float (vectorised). */
void to_float(const float16_t* src, float* dst, int64_t n);
void to_float(const bfloat16_t* src, float* dst, int64_t n);
/** Rounds n floats to a half type (vectorised). */
void from_float(const float* src, float16_t* dst, int64_t n);
void from_float(const float* src, bfloat16_t* dst, int64_t n);

// ---- helpers shared between the files

/** dst[i] = src[i] converted from `from` to `to` (NumPy/JAX semantics: float to
 *  integer truncates toward zero and saturates, NaN gives 0; to bool is x != 0). */
void convert_n(const void* src, DType from, void* dst, DType to, int64_t n);

/** Row-major element strides of `shape`. */
std::vector<int64_t> row_major_strides(const Shape& shape);

/** Copies the box `extent` from src to dst, each addressed by element strides
 *  (any sign; 0 on the source broadcasts). Runs contiguous on both sides become
 *  memcpy; a transposing pair of dims is copied in cache-sized tiles. */
void copy_strided(void* dst, const int64_t* dst_strides, const void* src,
                  const int64_t* src_strides, const Shape& extent, size_t itemsize);

/** Writes the one element at `value` (itemsize bytes) to dst[0..n). */
void fill_value(void* dst, const void* value, int64_t n, size_t itemsize);

/** Reads a rank-0 integer input (any integer dtype) as int64. */
int64_t read_index(const void* p, DType t);

/** Throws NotImplementedError "[prim] ... does not support dtype ...". */
[[noreturn]] void unsupported_dtype(const char* prim, DType got, const char* expected);

}  // namespace tsr::detail::cpu
