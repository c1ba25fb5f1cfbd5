#include "tsr/dtype.h"

#include <array>
#include <bit>

#include "tsr/error.h"

namespace tsr {
namespace {

struct DTypeInfo {
  const char* name;
  const char* short_name;
  int size;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", "bool", 1},
    {"int8", "i8", 1},
    {"int32", "i32", 4},
    {"int64", "i64", 8},
    {"uint8", "u8", 1},
    {"uint32", "u32", 4},
    {"float16", "f16", 2},
    {"bfloat16", "bf16", 2},
    {"float32", "f32", 4},
    {"float64", "f64", 8},
    {"int16", "i16", 2},
    {"uint16", "u16", 2},
    {"uint64", "u64", 8},
    {"complex64", "c64", 8},
    {"complex128", "c128", 16},
}};

// JAX's promotion lattice (jax/_src/dtypes.py, _type_promotion_lattice with
// strict=False, x64=True), without the 2/4-bit integers and the float8 types.
// clang-format off
enum Node : int {
  B1, IW, FW, CW, U8, U16, U32, U64, I8, I16, I32, I64, BF16, F16, F32, F64, C64, C128, kNodes
};
// clang-format on

constexpr std::array<std::array<int, 3>, kNodes> kEdges = {{
    {IW, -1, -1},     // b1
    {U8, I8, -1},     // i*
    {BF16, F16, CW},  // f*
    {C64, -1, -1},    // c*
    {I16, U16, -1},   // u8
    {I32, U32, -1},   // u16
    {I64, U64, -1},   // u32
    {FW, -1, -1},     // u64
    {I16, -1, -1},    // i8
    {I32, -1, -1},    // i16
    {I64, -1, -1},    // i32
    {FW, -1, -1},     // i64
    {F32, -1, -1},    // bf16
    {F32, -1, -1},    // f16
    {F64, C64, -1},   // f32
    {C128, -1, -1},   // f64
    {C128, -1, -1},   // c64
    {-1, -1, -1},     // c128
}};

using UpperSets = std::array<uint32_t, kNodes>;

// upper[n] = bitmask of every node >= n (reflexive, transitive closure).
constexpr UpperSets compute_upper() {
  UpperSets up{};
  for (int n = kNodes - 1; n >= 0; --n) up[n] = 1u << n;
  for (int iter = 0; iter < kNodes; ++iter)
    for (int n = 0; n < kNodes; ++n)
      for (int e : kEdges[n])
        if (e >= 0) up[n] |= up[e];
  return up;
}
constexpr UpperSets kUpper = compute_upper();

// The least node of a set of upper bounds: the one whose own upper set holds all of them.
int least(uint32_t set) {
  for (int n = 0; n < kNodes; ++n)
    if ((set >> n & 1u) && (kUpper[n] & set) == set) return n;
  return -1;
}

int node_of(DType t) {
  switch (t) {
    case DType::Bool:
      return B1;
    case DType::Int8:
      return I8;
    case DType::Int16:
      return I16;
    case DType::Int32:
      return I32;
    case DType::Int64:
      return I64;
    case DType::UInt8:
      return U8;
    case DType::UInt16:
      return U16;
    case DType::UInt32:
      return U32;
    case DType::UInt64:
      return U64;
    case DType::Float16:
      return F16;
    case DType::BFloat16:
      return BF16;
    case DType::Float32:
      return F32;
    case DType::Float64:
      return F64;
    case DType::Complex64:
      return C64;
    case DType::Complex128:
      return C128;
  }
  return F32;
}

DType dtype_of_node(int n) {
  switch (n) {
    case B1:
      return DType::Bool;
    case I8:
      return DType::Int8;
    case I16:
      return DType::Int16;
    case I32:
      return DType::Int32;
    case I64:
      return DType::Int64;
    case U8:
      return DType::UInt8;
    case U16:
      return DType::UInt16;
    case U32:
      return DType::UInt32;
    case U64:
      return DType::UInt64;
    case FW:  // JAX's weak "float" as a dtype: the default float of x64 mode
      return DType::Float64;
    case IW:
      return DType::Int32;
    case F16:
      return DType::Float16;
    case BF16:
      return DType::BFloat16;
    case F32:
      return DType::Float32;
    case F64:
      return DType::Float64;
    case CW:  // weak "complex": x64's default complex
    case C128:
      return DType::Complex128;
    case C64:
      return DType::Complex64;
    default:
      break;
  }
  return DType::Float32;
}

int lub(int a, int b) { return least(kUpper[a] & kUpper[b]); }

}  // namespace

bool is_valid_dtype(DType t) { return static_cast<int>(t) < kNumDTypes; }

void check_dtype(DType t, const char* api) {
  if (is_valid_dtype(t)) return;
  std::string names;
  for (int i = 0; i < kNumDTypes; ++i) names += std::string(i ? ", " : "") + kInfo[i].name;
  throw ValueError(std::string("[") + api + "] invalid dtype value " +
                   std::to_string(static_cast<int>(t)) + ". Got DType(" +
                   std::to_string(static_cast<int>(t)) + "), which is not one of Tessera's " +
                   std::to_string(kNumDTypes) + " element types; expected one of " + names +
                   " (values 0.." + std::to_string(kNumDTypes - 1) +
                   "). Pass a dtype constant such as float32, or dtype_from_name(name).");
}

// An invalid value (checked at the entry points) must still not read past the table.
int itemsize(DType t) { return is_valid_dtype(t) ? kInfo[static_cast<int>(t)].size : 0; }
const char* dtype_name(DType t) {
  return is_valid_dtype(t) ? kInfo[static_cast<int>(t)].name : "invalid";
}
const char* dtype_short_name(DType t) {
  return is_valid_dtype(t) ? kInfo[static_cast<int>(t)].short_name : "invalid";
}
bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }
DType real_dtype(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
DType complex_dtype(DType t) {
  return t == DType::Float64 || t == DType::Complex128 ? DType::Complex128 : DType::Complex64;
}

namespace detail {
void complex_not_dispatched(DType t) {
  throw BackendError(std::string("[dispatch_dtype] a ") + dtype_name(t) +
                     " value reached a kernel written for real types. Got " + dtype_name(t) +
                     "; expected a real dtype. This is a bug in Tessera: the primitive's rule "
                     "should have refused complex operands (please report it).");
}
}  // namespace detail

bool is_unsigned(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}
bool is_integer(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64 ||
         is_unsigned(t);
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name || name == kInfo[i].short_name) return static_cast<DType>(i);
  throw ValueError("[dtype] unknown dtype name. Got '" + name +
                   "'; expected one of bool, int8, int16, int32, int64, uint8, uint16, uint32, "
                   "uint64, float16, bfloat16, float32, float64, complex64, complex128 (or their "
                   "short forms such as f32, c64).");
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

DType promote_types(DType a, DType b) { return dtype_of_node(lub(node_of(a), node_of(b))); }

TypedDType promote_types(TypedDType a, TypedDType b) {
  auto node = [](TypedDType t) {
    if (!t.weak || t.dtype == DType::Bool) return node_of(t.dtype);
    return is_complex(t.dtype) ? int{CW} : is_floating(t.dtype) ? int{FW} : int{IW};
  };
  int n = lub(node(a), node(b));
  if (n == IW || n == FW || n == CW) {
    // A weak result keeps the widest weak input dtype (int32/float32 for C++ scalars).
    // Two strong inputs meet at a weak node only for uint64 + signed int: JAX gives
    // its default float (float64 with x64), weakly typed.
    DType d = a.weak && b.weak ? promote_types(a.dtype, b.dtype)
              : a.weak         ? a.dtype
              : b.weak         ? b.dtype
                               : dtype_of_node(n);
    if (n == FW && !is_floating(d)) d = DType::Float32;
    if (n == CW && !is_complex(d)) d = complex_dtype(d);
    return {d, true};
  }
  return {dtype_of_node(n), false};
}

float16_t::float16_t(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) {
    bits = static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    return;
  }
  if (mag >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (mag < 0x38800000u) {  // subnormal half (or zero)
    // Add 0.5 (as float) so the FPU does the round-to-nearest-even for us.
    float v = std::bit_cast<float>(mag) + 0.5f;
    bits = static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
    return;
  }
  uint32_t odd = (mag >> 13) & 1u;
  mag += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round
  bits = static_cast<uint16_t>(sign | (mag >> 13));
}

float16_t::operator float() const {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t man = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: value = man * 2^-24
      float v = static_cast<float>(man) * 5.9604644775390625e-8f;
      out = sign | std::bit_cast<uint32_t>(v);
    }
  } else {
    out = sign | ((exp + 112u) << 23) | (man << 13);
  }
  return std::bit_cast<float>(out);
}

}  // namespace tsr
