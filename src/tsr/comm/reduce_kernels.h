#pragma once
// Elementwise reductions shared by the comm groups, one definition of what each
// ReduceOp means per DType:
//  - integers: sum and prod wrap modulo 2^bits (computed unsigned, so no UB);
//  - float32/float64: max and min propagate NaN (as lax.max / lax.min);
//  - float16/bfloat16: each step converts both operands to float, combines, and
//    rounds back (nearest even), so a+b+c is round(round(a+b)+c) as when adding
//    arrays of that dtype one by one;
//  - bool: sum and max are logical or, prod and min logical and.
// Every group reduces in rank order 0..n-1, so results are bit-identical between them.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "tsr/comm/combine.h"
#include "tsr/comm/group.h"
#include "tsr/core/half_bits.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** True for the 16-bit float storage types, which reduce through float. */
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

/** op(a, b) for any stored type, with the per-step rounding of the half types.
 *  Uses dtype.h's conversions: the simple form the reference group is built on. */
template <typename T>
inline T combine_scalar(ReduceOp op, T a, T b) {
  if constexpr (kIsHalf<T>) {
    return T(combine_scalar(op, static_cast<float>(a), static_cast<float>(b)));
  } else {
    switch (op) {
      case ReduceOp::Sum:
        return combine<ReduceOp::Sum>(a, b);
      case ReduceOp::Max:
        return combine<ReduceOp::Max>(a, b);
      case ReduceOp::Min:
        return combine<ReduceOp::Min>(a, b);
      case ReduceOp::Prod:
        return combine<ReduceOp::Prod>(a, b);
    }
    return a;
  }
}

/** Widens n half values to float. */
template <typename H>
inline void half_to_float(const H* in, float* out, int64_t n) {
  const auto* bits = reinterpret_cast<const uint16_t*>(in);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<H, float16_t>) {
      out[i] = half_bits_to_float(bits[i]);
    } else {
      out[i] = bf16_bits_to_float(bits[i]);
    }
  }
}

/** Rounds n floats to the half type H. */
template <typename H>
inline void float_to_half(const float* in, H* out, int64_t n) {
  auto* bits = reinterpret_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<H, float16_t>) {
      bits[i] = float_to_half_bits(in[i]);
    } else {
      bits[i] = float_to_bf16_bits(in[i]);
    }
  }
}

/** dst[i] = op(a[i], b[i]) for a non-half type; dst may equal a or b. */
template <ReduceOp Op, typename T>
void reduce_loop(T* dst, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = combine<Op>(a[i], b[i]);
}

/** dst[i] = op(dst[i], src[i]); two pointers only, so the compiler's alias check
 *  passes and the loop runs vectorised even though dst is read and written. */
template <ReduceOp Op, typename T>
void accumulate_loop(T* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = combine<Op>(dst[i], src[i]);
}

/** dst[i] = round(op(float(a[i]), float(b[i]))) for a half type, in blocks through
 *  a float scratch so each of the three loops vectorises. dst may equal a or b. */
template <ReduceOp Op, typename H>
void reduce_half_loop(H* dst, const H* a, const H* b, int64_t n) {
  constexpr int64_t kBlock = 512;
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    int64_t m = std::min(kBlock, n - i0);
    half_to_float(a + i0, fa, m);
    half_to_float(b + i0, fb, m);
    for (int64_t j = 0; j < m; ++j) fa[j] = combine<Op>(fa[j], fb[j]);
    float_to_half(fa, dst + i0, m);
  }
}

/** Calls f(std::integral_constant<ReduceOp, op>{}) so loops get op as a constant. */
template <typename F>
decltype(auto) dispatch_reduce_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Sum:
      return f(std::integral_constant<ReduceOp, ReduceOp::Sum>{});
    case ReduceOp::Max:
      return f(std::integral_constant<ReduceOp, ReduceOp::Max>{});
    case ReduceOp::Min:
      return f(std::integral_constant<ReduceOp, ReduceOp::Min>{});
    case ReduceOp::Prod:
      return f(std::integral_constant<ReduceOp, ReduceOp::Prod>{});
  }
  return f(std::integral_constant<ReduceOp, ReduceOp::Sum>{});
}

/** Bool reduces as bytes 0/1: or is max and and is min, which vectorise. */
inline ReduceOp bool_as_byte_op(ReduceOp op) {
  return (op == ReduceOp::Sum || op == ReduceOp::Max) ? ReduceOp::Max : ReduceOp::Min;
}

/** dst = op(a, b) elementwise over n elements of dt. dst may equal a or b but must
 *  not partly overlap them. */
inline void reduce_pair(DType dt, ReduceOp op, void* dst, const void* a, const void* b, int64_t n) {
  if (dt == DType::Bool) {
    dt = DType::UInt8;
    op = bool_as_byte_op(op);
  }
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    dispatch_reduce_op(op, [&](auto o) {
      if constexpr (kIsHalf<T>) {
        reduce_half_loop<decltype(o)::value>(static_cast<T*>(dst), static_cast<const T*>(a),
                                             static_cast<const T*>(b), n);
      } else {
        reduce_loop<decltype(o)::value>(static_cast<T*>(dst), static_cast<const T*>(a),
                                        static_cast<const T*>(b), n);
      }
    });
  });
}

/** dst = op(dst, src) elementwise over n elements of dt; dst and src must not overlap. */
inline void reduce_accumulate(DType dt, ReduceOp op, void* dst, const void* src, int64_t n) {
  if (dt == DType::Float16 || dt == DType::BFloat16) {
    reduce_pair(dt, op, dst, dst, src, n);  // the half loop goes through scratch anyway
    return;
  }
  if (dt == DType::Bool) {
    dt = DType::UInt8;
    op = bool_as_byte_op(op);
  }
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!kIsHalf<T>) {
      dispatch_reduce_op(op, [&](auto o) {
        accumulate_loop<decltype(o)::value>(static_cast<T*>(dst), static_cast<const T*>(src), n);
      });
    }
  });
}

}  // namespace tsr::detail
