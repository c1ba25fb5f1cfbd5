// The promotion lattice as a table, checked against JAX's (jax/_src/dtypes.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

// Rows/cols in this order: b1 u8 u32 i8 i32 i64 bf16 f16 f32 f64. JAX gives int16 for
// u8+i8; we lack int16, so the next supported type above it (int32) is used.
const DType kOrder[] = {bool_, uint8,    uint32,  int8,    int32,
                        int64, bfloat16, float16, float32, float64};
const char* kTable[10][10] = {
    // b1     u8     u32    i8     i32    i64    bf16   f16    f32    f64
    {"bool", "u8", "u32", "i8", "i32", "i64", "bf16", "f16", "f32", "f64"},         // b1
    {"u8", "u8", "u32", "i32", "i32", "i64", "bf16", "f16", "f32", "f64"},          // u8
    {"u32", "u32", "u32", "i64", "i64", "i64", "bf16", "f16", "f32", "f64"},        // u32
    {"i8", "i32", "i64", "i8", "i32", "i64", "bf16", "f16", "f32", "f64"},          // i8
    {"i32", "i32", "i64", "i32", "i32", "i64", "bf16", "f16", "f32", "f64"},        // i32
    {"i64", "i64", "i64", "i64", "i64", "i64", "bf16", "f16", "f32", "f64"},        // i64
    {"bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "f32", "f32", "f64"},  // bf16
    {"f16", "f16", "f16", "f16", "f16", "f16", "f32", "f16", "f32", "f64"},         // f16
    {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f64"},         // f32
    {"f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64"},         // f64
};

}  // namespace

TEST(DType, PromotionTableStrong) {
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      EXPECT_EQ(dtype_short_name(promote_types(kOrder[i], kOrder[j])), std::string(kTable[i][j]))
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
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(itemsize(bfloat16), 2);
  EXPECT_EQ(itemsize(int64), 8);
  EXPECT_STREQ(dtype_name(bool_), "bool");
  EXPECT_EQ(dtype_from_name("f32"), float32);
  EXPECT_EQ(dtype_from_name("bfloat16"), bfloat16);
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
