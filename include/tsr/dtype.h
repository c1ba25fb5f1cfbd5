#pragma once
/** Element types, their sizes and names, and JAX's type-promotion lattice. */
#include <complex>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

namespace tsr {

/** The element types an Array can hold. */
enum class DType : uint8_t {
  Bool,
  Int8,
  Int32,
  Int64,
  UInt8,
  UInt32,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Int16,  // appended so that the values above keep their numbers
  UInt16,
  UInt64,
  Complex64,   // two float32: real, imaginary
  Complex128,  // two float64
};

/** Number of DType values; DType values are 0..kNumDTypes-1. */
inline constexpr int kNumDTypes = 15;

inline constexpr DType bool_ = DType::Bool;            /**< boolean, one byte per element */
inline constexpr DType int8 = DType::Int8;             /**< signed 8-bit integer */
inline constexpr DType int16 = DType::Int16;           /**< signed 16-bit integer */
inline constexpr DType int32 = DType::Int32;           /**< signed 32-bit integer */
inline constexpr DType int64 = DType::Int64;           /**< signed 64-bit integer */
inline constexpr DType uint8 = DType::UInt8;           /**< unsigned 8-bit integer */
inline constexpr DType uint16 = DType::UInt16;         /**< unsigned 16-bit integer */
inline constexpr DType uint32 = DType::UInt32;         /**< unsigned 32-bit integer */
inline constexpr DType uint64 = DType::UInt64;         /**< unsigned 64-bit integer */
inline constexpr DType float16 = DType::Float16;       /**< IEEE binary16 */
inline constexpr DType bfloat16 = DType::BFloat16;     /**< brain float (8-bit exponent) */
inline constexpr DType float32 = DType::Float32;       /**< IEEE binary32 */
inline constexpr DType float64 = DType::Float64;       /**< IEEE binary64 */
inline constexpr DType complex64 = DType::Complex64;   /**< two float32 (std::complex<float>) */
inline constexpr DType complex128 = DType::Complex128; /**< two float64 (std::complex<double>) */

/** True when t is one of the enum's values (not a `static_cast<DType>(77)`). */
bool is_valid_dtype(DType t);
/** Raises ValueError naming `api` and the value when t is not a valid DType: every
 *  entry point that takes a DType checks it (as check_shape does for shapes). */
void check_dtype(DType t, const char* api);
/** Bytes per element (0 for an invalid DType). */
int itemsize(DType t);
/** Full name as JAX prints it: "float32", "bool", ... ("invalid" for an invalid DType). */
const char* dtype_name(DType t);
/** Short name used in type strings: "f32", "i32", "bf16", "bool", ... */
const char* dtype_short_name(DType t);
/** True for float16, bfloat16, float32, float64. */
bool is_floating(DType t);
/** True for complex64 and complex128. */
bool is_complex(DType t);
/** True for the floating and complex types (JAX's `inexact`). */
bool is_inexact(DType t);
/** The real type of a complex one (complex64 -> float32); other types unchanged. */
DType real_dtype(DType t);
/** The complex type holding t: float64 -> complex128, complex types unchanged, anything
 *  else complex64 (as lax.complex of float32 parts). */
DType complex_dtype(DType t);
/** True for the signed and unsigned integer types (not bool). */
bool is_integer(DType t);
/** True for the unsigned integer types. */
bool is_unsigned(DType t);
/** Parses a full or short name ("float32" or "f32"); throws ValueError otherwise. */
DType dtype_from_name(const std::string& name);
/** Prints the full name. */
std::ostream& operator<<(std::ostream& os, DType t);

/** A dtype plus JAX's weak-type flag (set for values that came from C++ scalars). */
struct TypedDType {
  DType dtype = DType::Float32; /**< the concrete element type */
  bool weak = false;            /**< true when the type may be overridden by a strong operand */
  /** Equality of dtype and weak flag. */
  bool operator==(const TypedDType&) const = default;
};

/** Promotes two dtypes by JAX's lattice with x64 enabled (jnp.promote_types): the
 *  least upper bound; uint64 with a signed integer gives float64 (JAX's "float"). */
DType promote_types(DType a, DType b);
/** Promotion with weak types (jnp.result_type): a weak int is int32 and a weak float
 *  float32 unless a strong operand decides; the result is weak when every input was
 *  weak, or when the bound is a weak node (uint64 + signed int: weak float64). */
TypedDType promote_types(TypedDType a, TypedDType b);

/** IEEE binary16 storage type with float conversions (round to nearest even). */
struct float16_t {
  uint16_t bits = 0; /**< raw bits */
  float16_t() = default;
  /** Converts from float, rounding to nearest even. */
  explicit float16_t(float f);
  /** Converts to float exactly. */
  explicit operator float() const;
  /** Bitwise equality. */
  bool operator==(const float16_t& o) const { return bits == o.bits; }
};

/** bfloat16 storage type with float conversions (round to nearest even). */
struct bfloat16_t {
  uint16_t bits = 0; /**< raw bits */
  bfloat16_t() = default;
  /** Converts from float, rounding to nearest even. */
  explicit bfloat16_t(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  /** Converts to float exactly. */
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  /** Bitwise equality. */
  bool operator==(const bfloat16_t& o) const { return bits == o.bits; }
};

/** Maps a C++ element type to its DType (bool, int8_t, ..., float16_t, double). */
template <typename T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr DType value = DType::UInt16;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr DType value = DType::UInt32;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr DType value = DType::UInt64;
};
template <>
struct dtype_of<float16_t> {
  static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<bfloat16_t> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct dtype_of<std::complex<float>> {
  static constexpr DType value = DType::Complex64;
};
template <>
struct dtype_of<std::complex<double>> {
  static constexpr DType value = DType::Complex128;
};
/** The DType of C++ type T. */
template <typename T>
inline constexpr DType dtype_v = dtype_of<T>::value;

namespace detail {
/** Raises the internal error for a complex dtype reaching a real-only dispatch. */
[[noreturn]] void complex_not_dispatched(DType t);
}  // namespace detail

/** Calls f(T{}) with the C++ type T that stores the real dtype t (bool stored as bool).
 *  Complex dtypes raise an internal error: the generic kernels compare and cast, so a
 *  kernel that takes complex tests is_complex and calls dispatch_complex itself. */
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Complex64:
    case DType::Complex128:
      detail::complex_not_dispatched(t);
    case DType::Bool:
      return f(bool{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::UInt32:
      return f(uint32_t{});
    case DType::Float16:
      return f(float16_t{});
    case DType::BFloat16:
      return f(bfloat16_t{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Int16:
      return f(int16_t{});
    case DType::UInt16:
      return f(uint16_t{});
    case DType::UInt64:
      return f(uint64_t{});
  }
  return f(float{});
}

/** Calls f(std::complex<float>{}) or f(std::complex<double>{}) for a complex dtype. */
template <typename F>
decltype(auto) dispatch_complex(DType t, F&& f) {
  if (t == DType::Complex128) return f(std::complex<double>{});
  return f(std::complex<float>{});
}

}  // namespace tsr
