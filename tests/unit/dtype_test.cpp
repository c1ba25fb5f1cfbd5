// The promotion lattice as a table, checked against JAX's (jax/_src/dtypes.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

// Rows/cols in this order: b1 u8 u16 u32 u64 i8 i16 i32 i64 bf16 f16 f32 f64 c64 c128:
// JAX 0.10.2's jnp.promote_types with x64 enabled, printed by a script (jax/_src/dtypes.py
// lattice); uint64 with a signed integer meets at JAX's weak "float", which is float64.
const DType kOrder[] = {bool_, uint8,    uint16,  uint32,  uint64,  int8,      int16,     int32,
                        int64, bfloat16, float16, float32, float64, complex64, complex128};
constexpr int kN = 15;
// Row i, column j: promote_types(kOrder[i], kOrder[j]), by short name.
const char* kTable[kN] = {
    // b1 u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128
    "bool u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128",
    "u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128",
    "u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128",
    "u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128",
    "u64  u64  u64  u64  u64  f64  f64  f64  f64  bf16 f16  f32  f64  c64  c128",
    "i8   i16  i32  i64  f64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128",
    "i16  i16  i32  i64  f64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128",
    "i32  i32  i32  i64  f64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128",
    "i64  i64  i64  i64  f64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128",
    "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128",
    "f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128",
    "f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128",
    "f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128",
    "c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128",
    "c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128",
};

std::string cell(int i, int j) {
  std::istringstream row(kTable[i]);
  std::string name;
  for (int k = 0; k <= j; ++k) row >> name;
  return name;
}

}  // namespace

TEST(DType, PromotionTableStrong) {
  static_assert(kN == kNumDTypes, "every dtype has a row");
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      EXPECT_EQ(dtype_short_name(promote_types(kOrder[i], kOrder[j])), cell(i, j))
          << dtype_name(kOrder[i]) << " + " << dtype_name(kOrder[j]);
}

TEST(DType, PromotionIsSymmetric) {
  for (DType a : kOrder)
    for (DType b : kOrder) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
}

TEST(DType, WeakTypes) {
  TypedDType wi{int32, true}, wf{float32, true};
  // A weak int defers to any strong integer or float.
  EXPECT_EQ(promote_types(wi, TypedDType{uint8, false}), (TypedDType{uint8, false}));
  EXPECT_EQ(promote_types(wi, TypedDType{int8, false}), (TypedDType{int8, false}));
  EXPECT_EQ(promote_types(wi, TypedDType{bfloat16, false}), (TypedDType{bfloat16, false}));
  // A weak float defers to strong floats but wins over integers (and stays weak).
  EXPECT_EQ(promote_types(wf, TypedDType{float16, false}), (TypedDType{float16, false}));
  EXPECT_EQ(promote_types(wf, TypedDType{int32, false}), (TypedDType{float32, true}));
  EXPECT_EQ(promote_types(wf, TypedDType{uint8, false}), (TypedDType{float32, true}));
  // bool + weak int is a weak int; weak + weak stays weak.
  EXPECT_EQ(promote_types(TypedDType{bool_, false}, wi), (TypedDType{int32, true}));
  EXPECT_EQ(promote_types(wi, wf), (TypedDType{float32, true}));
  EXPECT_EQ(promote_types(wi, wi), (TypedDType{int32, true}));
  EXPECT_EQ(promote_types(TypedDType{float64, true}, TypedDType{float32, false}),
            (TypedDType{float32, false}));
  // The new integer widths: a weak int defers; u8 + i8 is int16 (as JAX).
  EXPECT_EQ(promote_types(wi, TypedDType{uint16, false}), (TypedDType{uint16, false}));
  EXPECT_EQ(promote_types(wi, TypedDType{int16, false}), (TypedDType{int16, false}));
  EXPECT_EQ(promote_types(TypedDType{uint8, false}, TypedDType{int8, false}),
            (TypedDType{int16, false}));
  // uint64 + signed int meets at the weak float node: JAX's result_type gives a weakly
  // typed float64, which a strong float then decides.
  TypedDType u64_i8 = promote_types(TypedDType{uint64, false}, TypedDType{int8, false});
  EXPECT_EQ(u64_i8, (TypedDType{float64, true}));
  EXPECT_EQ(promote_types(u64_i8, TypedDType{float16, false}), (TypedDType{float16, false}));
  EXPECT_EQ(promote_types(TypedDType{uint64, false}, wi), (TypedDType{uint64, false}));
  EXPECT_EQ(promote_types(TypedDType{uint64, false}, wf), (TypedDType{float32, true}));
  // Complex: a weak float defers to a strong complex; a weak complex meets a strong
  // float at its complex type (JAX: float32(1) * 1j is complex64).
  EXPECT_EQ(promote_types(wf, TypedDType{complex64, false}), (TypedDType{complex64, false}));
  EXPECT_EQ(promote_types(TypedDType{complex64, true}, TypedDType{float32, false}),
            (TypedDType{complex64, false}));
  EXPECT_EQ(promote_types(TypedDType{complex64, true}, wf), (TypedDType{complex64, true}));
}

TEST(DType, ComplexHelpers) {
  EXPECT_EQ(itemsize(complex64), 8);
  EXPECT_EQ(itemsize(complex128), 16);
  EXPECT_STREQ(dtype_name(complex64), "complex64");
  EXPECT_STREQ(dtype_short_name(complex128), "c128");
  EXPECT_TRUE(is_complex(complex64) && is_inexact(complex128) && is_inexact(float16));
  EXPECT_FALSE(is_floating(complex64) || is_complex(float64) || is_inexact(int32));
  EXPECT_EQ(real_dtype(complex64), float32);
  EXPECT_EQ(real_dtype(complex128), float64);
  EXPECT_EQ(real_dtype(int8), int8);
  EXPECT_EQ(complex_dtype(float64), complex128);
  EXPECT_EQ(complex_dtype(bfloat16), complex64);
  EXPECT_EQ((dtype_v<std::complex<double>>), complex128);
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(itemsize(bfloat16), 2);
  EXPECT_EQ(itemsize(int64), 8);
  EXPECT_STREQ(dtype_name(bool_), "bool");
  EXPECT_EQ(dtype_from_name("f32"), float32);
  EXPECT_EQ(dtype_from_name("bfloat16"), bfloat16);
  EXPECT_EQ(itemsize(int16), 2);
  EXPECT_EQ(itemsize(uint16), 2);
  EXPECT_EQ(itemsize(uint64), 8);
  EXPECT_STREQ(dtype_short_name(int16), "i16");
  EXPECT_STREQ(dtype_short_name(uint16), "u16");
  EXPECT_STREQ(dtype_short_name(uint64), "u64");
  EXPECT_EQ(dtype_from_name("uint64"), uint64);
  EXPECT_EQ(dtype_from_name("u16"), uint16);
  for (int k = 0; k < kNumDTypes; ++k) {  // names round-trip for every dtype
    DType t = static_cast<DType>(k);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(dtype_from_name(dtype_short_name(t)), t);
  }
  EXPECT_THROW(dtype_from_name("float128"), ValueError);
}

TEST(DType, HalfConversionsRoundTrip) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 1e-3f}) {
    EXPECT_EQ(static_cast<float>(float16_t(f)), f == 1e-3f ? static_cast<float>(float16_t(f)) : f);
  }
  EXPECT_EQ(static_cast<float>(float16_t(1e6f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float16_t(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16_t(1.00048828125f).bits, 0x3c00);  // halfway: rounds to even
  EXPECT_EQ(bfloat16_t(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16_t(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t(std::nanf("")))));
}
