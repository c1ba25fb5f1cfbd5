#pragma once
// One element of every unary and binary elementwise op, for bool, the integer types,
// float and double (float16 / bfloat16 compute in float; complex has its own code).
// The CPU kernels, the CUDA kernels and the CUDA fused kernels NVRTC compiles all
// call these functions, so the edge cases (integer division by zero, NaN in max,
// round half to even, wrapping overflow) are written once and tested by the CPU
// suite. Self-contained: NVRTC has no standard headers.
#include "tsr/core/hd.h"

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <limits>
#endif

namespace tsr::detail::ops {

// ---- traits (no <type_traits> under NVRTC)

/** Per element type: integer?, signed?, and the unsigned type it wraps in (at least
 *  `unsigned`: narrower types promote to signed int, whose overflow is undefined). */
template <typename T>
struct Traits;  // only the types below: any other is a compile error, not a guess
template <>
struct Traits<float> {
  static constexpr bool kInt = false, kSigned = true, kBool = false;
  using Wrap = float;
};
template <>
struct Traits<double> {
  static constexpr bool kInt = false, kSigned = true, kBool = false;
  using Wrap = double;
};
template <>
struct Traits<bool> {
  static constexpr bool kInt = false, kSigned = false, kBool = true;
  static constexpr bool kMin = false, kMax = true;
  using Wrap = unsigned;
};
// Integers also carry their range (kMin, kMax) for the saturating float conversion.
#define TSR_INT_TRAITS(T, S, W, LO, HI)                            \
  template <>                                                      \
  struct Traits<T> {                                               \
    static constexpr bool kInt = true, kSigned = S, kBool = false; \
    static constexpr T kMin = LO, kMax = HI;                       \
    using Wrap = W;                                                \
  };
TSR_INT_TRAITS(int8_t, true, unsigned, -128, 127)
TSR_INT_TRAITS(int16_t, true, unsigned, -32768, 32767)
TSR_INT_TRAITS(int32_t, true, uint32_t, -2147483647 - 1, 2147483647)
TSR_INT_TRAITS(int64_t, true, uint64_t, -9223372036854775807LL - 1, 9223372036854775807LL)
TSR_INT_TRAITS(uint8_t, false, unsigned, 0, 255)
TSR_INT_TRAITS(uint16_t, false, unsigned, 0, 65535)
TSR_INT_TRAITS(uint32_t, false, uint32_t, 0, 4294967295u)
TSR_INT_TRAITS(uint64_t, false, uint64_t, 0, 18446744073709551615ull)
#undef TSR_INT_TRAITS

/** True for float and double. */
template <typename T>
inline constexpr bool kIsFloat = !Traits<T>::kInt && !Traits<T>::kBool;

/** One element from From to To (bool, an integer type, float or double). Defined for
 *  every value, as XLA's CPU backend: float to integer truncates toward zero and
 *  saturates at To's range (so -1.5 -> 0 for unsigned), NaN gives 0; to bool is
 *  v != 0; integer to integer wraps modulo 2^bits. */
template <typename To, typename From>
TSR_HD To cast(From v) {
  if constexpr (Traits<To>::kBool) {
    return v != From(0);
  } else if constexpr (kIsFloat<From> && Traits<To>::kInt) {
    // hi = 2^bits(To) (or 2^(bits-1) signed) and lo = To's min are powers of two
    // (or 0), exact in From; the comparisons are false for NaN.
    const From hi = From(2) * From(Traits<To>::kMax / 2 + 1);
    const From lo = From(Traits<To>::kMin);
    if (!(v == v)) return To(0);
    if (v >= hi) return Traits<To>::kMax;
    if (v <= lo) return Traits<To>::kMin;
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- math: std:: on the host, CUDA's overloads on a GPU

#if defined(__CUDA_ARCH__)
#define TSR_M(fn) ::fn
#else
#define TSR_M(fn) std::fn
#endif

/** A quiet NaN of T. */
template <typename T>
TSR_HD T qnan() {
#if defined(__CUDA_ARCH__)
  return static_cast<T>(__longlong_as_double(0x7ff8000000000000ULL));
#else
  return std::numeric_limits<T>::quiet_NaN();
#endif
}
/** +infinity of T. */
template <typename T>
TSR_HD T inf() {
#if defined(__CUDA_ARCH__)
  return static_cast<T>(__longlong_as_double(0x7ff0000000000000ULL));
#else
  return std::numeric_limits<T>::infinity();
#endif
}

// ---- binary

/** x ** y for integers by squaring (wrapping). A negative exponent gives 0 except
 *  for the bases 1 and -1, whose powers are exact. */
template <typename T>
TSR_HD T ipow(T x, T y) {
  using U = typename Traits<T>::Wrap;
  if constexpr (Traits<T>::kSigned) {
    if (y < 0) return x == T(1) ? T(1) : (x == T(-1) ? ((y & 1) ? T(-1) : T(1)) : T(0));
  }
  U r = 1, b = static_cast<U>(x), e = static_cast<U>(y);
  while (e) {
    if (e & 1u) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
    e = static_cast<U>(e >> 1);
  }
  return static_cast<T>(r);
}

/** x + y (bool: or; integers wrap). */
template <typename T>
TSR_HD T add(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x || y;
  } else if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    return static_cast<T>(U(x) + U(y));
  } else {
    return x + y;
  }
}
/** x - y (integers wrap). */
template <typename T>
TSR_HD T sub(T x, T y) {
  if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    return static_cast<T>(U(x) - U(y));
  } else {
    return x - y;
  }
}
/** x * y (bool: and; integers wrap). */
template <typename T>
TSR_HD T mul(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x && y;
  } else if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    return static_cast<T>(U(x) * U(y));
  } else {
    return x * y;
  }
}
/** x / y; integers truncate, and division by zero and INT_MIN / -1 follow XLA's CPU
 *  backend (what JAX gives): x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN. */
template <typename T>
TSR_HD T div(T x, T y) {
  if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    if (y == T(0)) return static_cast<T>(-1);
    if constexpr (Traits<T>::kSigned)
      if (y == T(-1)) return static_cast<T>(U(0) - U(x));
    return static_cast<T>(x / y);
  } else {
    return x / y;
  }
}
/** The remainder with the sign of x (fmod); x % 0 = x and INT_MIN % -1 = 0 (XLA). */
template <typename T>
TSR_HD T rem(T x, T y) {
  if constexpr (Traits<T>::kInt) {
    if (y == T(0)) return x;
    if constexpr (Traits<T>::kSigned)
      if (y == T(-1)) return T(0);
    return static_cast<T>(x % y);
  } else {
    return TSR_M(fmod)(x, y);
  }
}
/** x ** y. */
template <typename T>
TSR_HD T pow(T x, T y) {
  if constexpr (Traits<T>::kInt) {
    return ipow(x, y);
  } else {
    return TSR_M(pow)(x, y);
  }
}
/** The larger; a NaN operand propagates (lax.max: x when it is NaN, else y when y is). */
template <typename T>
TSR_HD T max(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x || y;
  } else if constexpr (Traits<T>::kInt) {
    return x < y ? y : x;
  } else {
    return (x > y || x != x) ? x : y;
  }
}
/** The smaller; a NaN operand propagates. */
template <typename T>
TSR_HD T min(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x && y;
  } else if constexpr (Traits<T>::kInt) {
    return y < x ? y : x;
  } else {
    return (x < y || x != x) ? x : y;
  }
}
/** atan2(x, y) (floats only). */
template <typename T>
TSR_HD T atan2(T x, T y) {
  return TSR_M(atan2)(x, y);
}
/** Bitwise (integers) or logical (bool) and. */
template <typename T>
TSR_HD T and_(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x && y;
  } else {
    return static_cast<T>(x & y);
  }
}
/** Bitwise or logical or. */
template <typename T>
TSR_HD T or_(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x || y;
  } else {
    return static_cast<T>(x | y);
  }
}
/** Bitwise or logical exclusive or. */
template <typename T>
TSR_HD T xor_(T x, T y) {
  if constexpr (Traits<T>::kBool) {
    return x != y;
  } else {
    return static_cast<T>(x ^ y);
  }
}
/** The comparisons (bool results; NaN compares unequal). */
template <typename T>
TSR_HD bool eq(T x, T y) {
  return x == y;
}
template <typename T>
TSR_HD bool ne(T x, T y) {
  return x != y;
}
template <typename T>
TSR_HD bool lt(T x, T y) {
  return x < y;
}
template <typename T>
TSR_HD bool le(T x, T y) {
  return x <= y;
}
template <typename T>
TSR_HD bool gt(T x, T y) {
  return x > y;
}
template <typename T>
TSR_HD bool ge(T x, T y) {
  return x >= y;
}

/** x ** y for a static integer y (integer_pow) by squaring: acc *= base for each set
 *  bit of |y|, then 1 / acc for a negative y (floats); a negative power of an integer
 *  is 0 unless the base is 1 or -1. The CPU kernel runs the same multiplications a
 *  block at a time. */
template <typename T>
TSR_HD T integer_pow(T x, int y) {
  using W = typename Traits<T>::Wrap;
  unsigned e = y < 0 ? 0u - static_cast<unsigned>(y) : static_cast<unsigned>(y);
  W acc = W(1), base = static_cast<W>(x);
  while (e) {
    if (e & 1u) acc = static_cast<W>(acc * base);
    e >>= 1;
    if (e) base = static_cast<W>(base * base);
  }
  if constexpr (Traits<T>::kInt) {
    T v = static_cast<T>(acc);
    if (y < 0) v = x == T(1) ? T(1) : (x == static_cast<T>(-1) ? v : T(0));
    return v;
  } else {
    return y < 0 ? T(1) / acc : acc;
  }
}

// ---- unary (integer arithmetic runs unsigned so overflow wraps)

/** -x. */
template <typename T>
TSR_HD T neg(T x) {
  if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    return static_cast<T>(U(0) - U(x));
  } else {
    return -x;
  }
}
/** |x| (|INT_MIN| wraps to INT_MIN). */
template <typename T>
TSR_HD T abs(T x) {
  if constexpr (Traits<T>::kInt) {
    using U = typename Traits<T>::Wrap;
    if constexpr (Traits<T>::kSigned) {
      return x < 0 ? static_cast<T>(U(0) - U(x)) : x;
    } else {
      return x;
    }
  } else {
    return TSR_M(fabs)(x);
  }
}
/** -1, 0 or 1; floats keep ±0 and NaN. */
template <typename T>
TSR_HD T sign(T x) {
  if constexpr (Traits<T>::kInt) {
    if constexpr (Traits<T>::kSigned) {
      return static_cast<T>((x > 0) - (x < 0));
    } else {
      return static_cast<T>(x != 0);
    }
  } else {
    return x > 0 ? T(1) : (x < 0 ? T(-1) : x);
  }
}
/** Integers are already integral: floor, ceil and round return them. */
template <typename T>
TSR_HD T floor(T x) {
  if constexpr (Traits<T>::kInt)
    return x;
  else
    return TSR_M(floor)(x);
}
template <typename T>
TSR_HD T ceil(T x) {
  if constexpr (Traits<T>::kInt)
    return x;
  else
    return TSR_M(ceil)(x);
}
/** Round half to even (jnp.round). */
template <typename T>
TSR_HD T round(T x) {
  if constexpr (Traits<T>::kInt)
    return x;
  else
    return TSR_M(nearbyint)(x);
}
/** x * x (integers wrap). */
template <typename T>
TSR_HD T square(T x) {
  return mul(x, x);
}
/** Logical not (bool) or bitwise complement (integers). */
template <typename T>
TSR_HD T not_(T x) {
  if constexpr (Traits<T>::kBool)
    return !x;
  else
    return static_cast<T>(~typename Traits<T>::Wrap(x));
}
/** The float-only functions. */
template <typename T>
TSR_HD T exp(T x) {
  return TSR_M(exp)(x);
}
template <typename T>
TSR_HD T exp2(T x) {
  return TSR_M(exp2)(x);
}
template <typename T>
TSR_HD T log(T x) {
  return TSR_M(log)(x);
}
template <typename T>
TSR_HD T log1p(T x) {
  return TSR_M(log1p)(x);
}
template <typename T>
TSR_HD T expm1(T x) {
  return TSR_M(expm1)(x);
}
template <typename T>
TSR_HD T sqrt(T x) {
  return TSR_M(sqrt)(x);
}
template <typename T>
TSR_HD T rsqrt(T x) {
  return T(1) / TSR_M(sqrt)(x);
}
template <typename T>
TSR_HD T sin(T x) {
  return TSR_M(sin)(x);
}
template <typename T>
TSR_HD T cos(T x) {
  return TSR_M(cos)(x);
}
template <typename T>
TSR_HD T tan(T x) {
  return TSR_M(tan)(x);
}
template <typename T>
TSR_HD T tanh(T x) {
  return TSR_M(tanh)(x);
}
/** 1 / (1 + e^-x), written so that the exponential never overflows. */
template <typename T>
TSR_HD T logistic(T x) {
  T e = TSR_M(exp)(-TSR_M(fabs)(x));
  return (x < 0 ? e : T(1)) / (T(1) + e);
}
template <typename T>
TSR_HD T erf(T x) {
  return TSR_M(erf)(x);
}
/** True unless x is infinite or NaN. */
template <typename T>
TSR_HD bool is_finite(T x) {
  return TSR_M(isfinite)(x);
}

/** erf^-1 in double: Giles' single-precision approximation ("Approximating the
 *  erfinv function", GPU Gems 2012; the one XLA uses for f32) as the start, then two
 *  Halley steps on erf(x) - y, which bring it to double precision. Results round to
 *  the dtype, so they may differ from XLA's float polynomial in the last ulp. */
TSR_HD double erf_inv_double(double y) {
  if (y != y || y < -1 || y > 1) return qnan<double>();
  if (y == 1 || y == -1) return y * inf<double>();
  double w = -TSR_M(log1p)(-y * y), p;
  if (w < 5) {
    const double c[8] = {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                         -0.00125372503, -0.00417768164, 0.246640727,     1.50140941};
    w -= 2.5;
    p = 2.81022636e-08;
    for (double k : c) p = k + p * w;
  } else {
    const double c[8] = {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                         -0.0076224613,  0.00943887047, 1.00167406,     2.83297682};
    w = TSR_M(sqrt)(w) - 3;
    p = -0.000200214257;
    for (double k : c) p = k + p * w;
  }
  // Refine |x| against |y|; in the tail erf(x) - y = (1 - y) - erfc(x) keeps precision.
  double ay = TSR_M(fabs)(y), x = TSR_M(fabs)(p * y);
  const double kTwoOverSqrtPi = 1.1283791670955126;
  for (int it = 0; it < 2; ++it) {
    double d = kTwoOverSqrtPi * TSR_M(exp)(-x * x);
    if (d == 0) break;
    double f = x > 1 ? (1 - ay) - TSR_M(erfc)(x) : TSR_M(erf)(x) - ay;
    double step = f / d;
    x -= step / (1 + x * step);
  }
  return TSR_M(copysign)(x, y);
}
template <typename T>
TSR_HD T erf_inv(T x) {
  return static_cast<T>(erf_inv_double(static_cast<double>(x)));
}

#undef TSR_M

}  // namespace tsr::detail::ops
