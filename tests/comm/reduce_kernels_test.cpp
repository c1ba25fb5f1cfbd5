// The vectorisable reduce kernels against the plain scalar definition, and their
// branch-free half conversions against dtype.h's, bit for bit.
#include "tsr/comm/reduce_kernels.h"

#include <bit>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "comm/comm_test_util.h"

namespace tsr::test {
namespace {

using detail::ReduceOp;

TEST(HalfConversions, EveryHalfValueWidensExactly) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float16_t h;
    h.bits = static_cast<uint16_t>(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(detail::half_bits_to_float(h.bits)),
              std::bit_cast<uint32_t>(static_cast<float>(h)))
        << "f16 bits " << bits;
    bfloat16_t b;
    b.bits = static_cast<uint16_t>(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(detail::bf16_bits_to_float(b.bits)),
              std::bit_cast<uint32_t>(static_cast<float>(b)))
        << "bf16 bits " << bits;
  }
}

TEST(HalfConversions, NarrowingMatchesDType) {
  std::vector<uint32_t> patterns;
  // Every exponent with mantissas near the rounding points, plus random patterns.
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t exp = 0; exp < 256; ++exp) {
      for (uint32_t man : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffu, 0x8000u,
                           0x8001u, 0x18000u, 0x7fffffu, 0x7ff000u, 0x400000u}) {
        patterns.push_back(sign | exp << 23 | man);
      }
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) patterns.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t u : patterns) {
    float f = std::bit_cast<float>(u);
    ASSERT_EQ(detail::float_to_half_bits(f), float16_t(f).bits) << "float bits " << u;
    ASSERT_EQ(detail::float_to_bf16_bits(f), bfloat16_t(f).bits) << "float bits " << u;
  }
}

// The 16/64-bit integers wrap (uint16 * uint16 promotes to int in C++: the kernel
// must multiply unsigned, or 65535 * 65535 overflows int).
TEST(IntegerKernels, NewWidthsWrap) {
  uint16_t a[2] = {65535, 40000}, b[2] = {65535, 40000}, out[2];
  detail::reduce_pair(DType::UInt16, ReduceOp::Prod, out, a, b, 2);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], static_cast<uint16_t>(40000u * 40000u));
  detail::reduce_pair(DType::UInt16, ReduceOp::Sum, out, a, b, 2);
  EXPECT_EQ(out[0], 65534);
  int16_t c[1] = {32767}, d[1] = {1}, e[1];
  detail::reduce_pair(DType::Int16, ReduceOp::Sum, e, c, d, 1);
  EXPECT_EQ(e[0], -32768);
  uint64_t f[1] = {~uint64_t{0}}, g[1] = {2}, h[1];
  detail::reduce_pair(DType::UInt64, ReduceOp::Sum, h, f, g, 1);
  EXPECT_EQ(h[0], 1u);
  detail::reduce_pair(DType::UInt64, ReduceOp::Max, h, f, g, 1);
  EXPECT_EQ(h[0], ~uint64_t{0});
}

// reduce_pair and reduce_accumulate agree with combine_scalar, element by element.
class Kernels : public ::testing::TestWithParam<DType> {};

TEST_P(Kernels, MatchScalarDefinition) {
  const DType dt = GetParam();
  const int64_t n = 1037;  // not a multiple of the half block or a vector width
  std::vector<char> a = random_data(dt, n, 1), b = random_data(dt, n, 2);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod}) {
    std::vector<char> want(a.size()), pair(a.size()), acc = a;
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < n; ++i) {
        T x, y;
        std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
        std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
        T z = detail::combine_scalar(op, x, y);
        std::memcpy(want.data() + i * sizeof(T), &z, sizeof(T));
      }
    });
    detail::reduce_pair(dt, op, pair.data(), a.data(), b.data(), n);
    detail::reduce_accumulate(dt, op, acc.data(), b.data(), n);
    EXPECT_EQ(pair, want) << detail::reduce_op_name(op);
    EXPECT_EQ(acc, want) << detail::reduce_op_name(op);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, Kernels, testing::ValuesIn(all_dtypes()), [](const auto& info) {
  return std::string(dtype_short_name(info.param));
});

TEST(ReduceOpName, NamesEveryOp) {
  EXPECT_STREQ(detail::reduce_op_name(ReduceOp::Sum), "sum");
  EXPECT_STREQ(detail::reduce_op_name(ReduceOp::Max), "max");
  EXPECT_STREQ(detail::reduce_op_name(ReduceOp::Min), "min");
  EXPECT_STREQ(detail::reduce_op_name(ReduceOp::Prod), "prod");
}

}  // namespace
}  // namespace tsr::test
