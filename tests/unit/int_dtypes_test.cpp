// int16, uint16 and uint64: promotion through the ops, wrapping arithmetic (no UB
// where C++ promotes 16-bit values to int), reductions' accumulation dtypes,
// conversions from out-of-range floats, indexing fills, random bits, and every
// op sharded over several meshes against the unsharded run, eager and under jit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

template <typename T>
std::vector<T> vec(const Array& a) {
  return a.to_vector<T>();
}

// Element-exact equality of two arrays of one dtype (uint64 beyond 2^53 included).
void expect_same(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  dispatch_dtype(want.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto g = got.to_vector<T>(), w = want.to_vector<T>();
    for (size_t i = 0; i < w.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      }
      EXPECT_TRUE(g[i] == w[i]) << what << " at " << i;
    }
  });
}

// Runs f on inputs sharded over dim 0 on meshes (1), (2), (4), (2,2), (8), eager and
// under jit, against the unsharded run (inputs whose dim 0 does not divide stay
// replicated).
void check_sharded(const std::function<Array(const std::vector<Array>&)>& f,
                   const std::vector<Array>& in, const std::string& what) {
  Array want = f(in);
  struct M {
    std::vector<int> sizes;
    std::vector<std::string> names;
    PartitionSpec spec;
  };
  const std::vector<M> meshes = {{{1}, {"x"}, P("x")},
                                 {{2}, {"x"}, P("x")},
                                 {{4}, {"x"}, P("x")},
                                 {{2, 2}, {"x", "y"}, P(Axes{"x", "y"})},
                                 {{8}, {"x"}, P("x")}};
  for (const auto& m : meshes) {
    Mesh mesh = make_mesh(m.sizes, m.names);
    std::vector<Array> s;
    for (const Array& a : in) {
      bool fits = a.ndim() >= 1 && a.shape()[0] % mesh.size() == 0;
      s.push_back(device_put(a, NamedSharding(mesh, fits ? m.spec : P())));
    }
    std::string tag = what + " on mesh of " + std::to_string(mesh.size()) + " devices";
    expect_same(f(s), want, tag + " eager");
    auto j = jit([&](const std::vector<Array>& a) { return std::vector<Array>{f(a)}; });
    expect_same(j(s)[0], want, tag + " jit");
  }
}

constexpr int16_t kI16Min = std::numeric_limits<int16_t>::min();
constexpr int16_t kI16Max = std::numeric_limits<int16_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

}  // namespace

TEST(IntDTypes, NamesAndTypes) {
  EXPECT_EQ(typeof(array<int16_t>({1, 2}, {2})).str(), "i16[2]");
  EXPECT_EQ(typeof(array<uint16_t>({1, 2}, {2})).str(), "u16[2]");
  EXPECT_EQ(typeof(array<uint64_t>({1, 2}, {2})).str(), "u64[2]");
  EXPECT_EQ(array<uint64_t>({kU64Max}, {1}).to_vector<uint64_t>()[0], kU64Max);
}

TEST(IntDTypes, PromotionThroughOps) {
  Array u8 = array<uint8_t>({200, 1}, {2}), i8 = array<int8_t>({-100, 1}, {2});
  Array s = add(u8, i8);  // JAX: int16 (no longer int32)
  EXPECT_EQ(s.dtype(), int16);
  EXPECT_EQ(vec<int16_t>(s), (std::vector<int16_t>{100, 2}));
  Array u16 = array<uint16_t>({65535}, {1});
  EXPECT_EQ(add(u16, array<int8_t>({1}, {1})).dtype(), int32);
  EXPECT_EQ(add(u16, 1).dtype(), uint16);  // a weak int defers
  EXPECT_EQ(vec<uint16_t>(add(u16, 1))[0], 0);
  // uint64 with a signed integer: JAX's weak float (float64).
  Array u64 = array<uint64_t>({1ull << 40}, {1});
  Array m = add(u64, array<int32_t>({-1}, {1}));
  EXPECT_EQ(m.dtype(), float64);
  EXPECT_TRUE(typeof(m).weak);
  EXPECT_EQ(vec<double>(m)[0], std::ldexp(1.0, 40) - 1);
  EXPECT_EQ(add(m, array<float>({0.5f}, {1})).dtype(), float32);  // weak: f32 decides
}

TEST(IntDTypes, ArithmeticWraps) {
  Array u = array<uint16_t>({65535, 40000, 3}, {3});
  EXPECT_EQ(vec<uint16_t>(multiply(u, u)),
            (std::vector<uint16_t>{1, static_cast<uint16_t>(40000u * 40000u), 9}));
  EXPECT_EQ(vec<uint16_t>(square(u)), vec<uint16_t>(multiply(u, u)));
  EXPECT_EQ(vec<uint16_t>(multiply(u, array<uint16_t>({65535, 2, 65535}, {3}))),
            (std::vector<uint16_t>{1, static_cast<uint16_t>(80000u), 65533}));
  EXPECT_EQ(vec<uint16_t>(integer_pow(u, 3)),
            (std::vector<uint16_t>{65535, static_cast<uint16_t>(40000ull * 40000 * 40000), 27}));
  EXPECT_EQ(vec<uint16_t>(power(u, array<uint16_t>({2, 2, 2}, {3}))), vec<uint16_t>(square(u)));
  Array i = array<int16_t>({kI16Max, kI16Min, -7}, {3});
  EXPECT_EQ(vec<int16_t>(add(i, array<int16_t>({1, -1, 0}, {3}))),
            (std::vector<int16_t>{kI16Min, kI16Max, -7}));
  EXPECT_EQ(vec<int16_t>(neg(i)), (std::vector<int16_t>{-kI16Max, kI16Min, 7}));
  EXPECT_EQ(vec<int16_t>(multiply(i, i)), (std::vector<int16_t>{1, 0, 49}));
  EXPECT_EQ(vec<int16_t>(rem(i, array<int16_t>({-1, -1, 2}, {3}))),
            (std::vector<int16_t>{0, 0, -1}));
  Array w = array<uint64_t>({kU64Max, 1ull << 63}, {2});
  EXPECT_EQ(vec<uint64_t>(add(w, array<uint64_t>({2, 1ull << 63}, {2}))),
            (std::vector<uint64_t>{1, 0}));
  EXPECT_EQ(vec<uint64_t>(multiply(w, array<uint64_t>({kU64Max, 2}, {2}))),
            (std::vector<uint64_t>{1, 0}));
  EXPECT_EQ(vec<bool>(greater(w, array<uint64_t>({1ull << 63, 1}, {2}))),
            (std::vector<bool>{true, true}));  // unsigned comparison above 2^63
}

TEST(IntDTypes, ReductionsAccumulateLikeJnp) {
  // jnp.sum/prod promote integers narrower than the default int (int32 here);
  // jnp.cumsum/cumprod keep integer dtypes (only bool is promoted).
  Array i = array<int16_t>({kI16Max, kI16Max, 2}, {3});
  EXPECT_EQ(sum(i).dtype(), int32);
  EXPECT_EQ(sum(i).item<int32_t>(), 2 * kI16Max + 2);
  EXPECT_EQ(cumsum(i, 0).dtype(), int16);
  EXPECT_EQ(vec<int16_t>(cumsum(i, 0)), (std::vector<int16_t>{kI16Max, -2, 0}));  // wraps
  Array u = array<uint16_t>({65535, 65535}, {2});
  EXPECT_EQ(sum(u).dtype(), uint32);
  EXPECT_EQ(sum(u).item<uint32_t>(), 131070u);
  EXPECT_EQ(prod(u).item<uint32_t>(), 65535u * 65535u);
  EXPECT_EQ(cumprod(u, 0).dtype(), uint16);
  EXPECT_EQ(vec<uint16_t>(cumprod(u, 0)), (std::vector<uint16_t>{65535, 1}));  // wraps
  Array w = array<uint64_t>({kU64Max, 2, 1ull << 63}, {3});
  EXPECT_EQ(sum(w).dtype(), uint64);
  EXPECT_EQ(sum(w).item<uint64_t>(), (1ull << 63) + 1);  // wraps mod 2^64
  EXPECT_EQ(max(w).item<uint64_t>(), kU64Max);
  EXPECT_EQ(min(w).item<uint64_t>(), 2u);
  EXPECT_EQ(argmax(w).item<int32_t>(), 0);
  EXPECT_EQ(vec<uint64_t>(sort(w)), (std::vector<uint64_t>{2, 1ull << 63, kU64Max}));
  EXPECT_EQ(max(i).dtype(), int16);
  EXPECT_EQ(cummax(i, 0).dtype(), int16);
  // An explicit dtype is kept.
  EXPECT_EQ(sum(i, {}, {.dtype = int16}).dtype(), int16);
}

TEST(IntDTypes, FloatToIntConversionIsDefined) {
  // Truncation toward zero, saturation at the integer range, NaN -> 0 (as XLA).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Array f = array<float>({nan, -1.5f, 1e10f, -1e10f, 3.7f, -3.7f, inf, -inf}, {8});
  EXPECT_EQ(vec<uint16_t>(astype(f, uint16)),
            (std::vector<uint16_t>{0, 0, 65535, 0, 3, 0, 65535, 0}));
  EXPECT_EQ(vec<int16_t>(astype(f, int16)),
            (std::vector<int16_t>{0, -1, kI16Max, kI16Min, 3, -3, kI16Max, kI16Min}));
  EXPECT_EQ(vec<uint64_t>(astype(f, uint64)),
            (std::vector<uint64_t>{0, 0, 10000000000ull, 0, 3, 0, kU64Max, 0}));
  EXPECT_EQ(vec<int32_t>(astype(f, int32)),
            (std::vector<int32_t>{
                0, -1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 3,
                -3, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}));
  // Host reads convert with the same rule (they were undefined for NaN / out of range).
  EXPECT_EQ(f.to_vector<int32_t>(), vec<int32_t>(astype(f, int32)));
  EXPECT_EQ(f.to_vector<uint16_t>(), vec<uint16_t>(astype(f, uint16)));
  Array d = array<double>({1e30, -1e30, std::ldexp(1.0, 63)}, {3});
  EXPECT_EQ(vec<int64_t>(astype(d, int64)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(vec<uint64_t>(astype(d, uint64)), (std::vector<uint64_t>{kU64Max, 0, 1ull << 63}));
  // Integer to integer wraps; to the half types rounds once.
  EXPECT_EQ(vec<int16_t>(astype(array<int32_t>({70000}, {1}), int16))[0],
            static_cast<int16_t>(70000 - 65536));
  EXPECT_EQ(vec<float>(astype(astype(array<uint64_t>({kU64Max}, {1}), float32), float32))[0],
            std::ldexp(1.0f, 64));
}

TEST(IntDTypes, IndexingFillsAndScatter) {
  Array idx = array<int32_t>({0, 9}, {2});
  EXPECT_EQ(vec<int16_t>(array<int16_t>({5, 6}, {2})[idx]), (std::vector<int16_t>{5, kI16Min}));
  EXPECT_EQ(vec<uint16_t>(array<uint16_t>({5, 6}, {2})[idx]), (std::vector<uint16_t>{5, 65535}));
  EXPECT_EQ(vec<uint64_t>(array<uint64_t>({5, 6}, {2})[idx]), (std::vector<uint64_t>{5, kU64Max}));
  Array u = array<uint16_t>({65535, 7}, {2});
  Array at0 = array<int32_t>({0, 0}, {2});
  Array big = array<uint16_t>({65535, 65535}, {2});
  EXPECT_EQ(vec<uint16_t>(u.at(at0).mul(big)), (std::vector<uint16_t>{65535, 7}));
  EXPECT_EQ(vec<uint16_t>(u.at(at0).add(big)), (std::vector<uint16_t>{65533, 7}));
  Array i = array<int16_t>({kI16Max, 0}, {2});
  EXPECT_EQ(vec<int16_t>(i.at(0).add(array<int16_t>({1}, {}))), (std::vector<int16_t>{kI16Min, 0}));
}

TEST(IntDTypes, RandomBitsAndRandint) {
  Array k = random::key(3);
  Array b32 = random::bits(k, {6});
  auto w32 = vec<uint32_t>(b32);
  auto w16 = vec<uint16_t>(random::bits(k, {6}, uint16));
  for (int n = 0; n < 6; ++n) EXPECT_EQ(w16[n], static_cast<uint16_t>(w32[n]));
  auto w64 = vec<uint64_t>(random::bits(k, {6}, uint64));
  for (int n = 0; n < 6; ++n) EXPECT_EQ(static_cast<uint32_t>(w64[n] ^ (w64[n] >> 32)), w32[n]);
  for (DType dt : {int16, uint16, uint64}) {
    Array r = random::randint(k, {64}, 3, 1000, dt);
    EXPECT_EQ(r.dtype(), dt);
    for (double v : r.to_vector<double>()) {
      EXPECT_GE(v, 3);
      EXPECT_LT(v, 1000);
    }
  }
}

TEST(IntDTypes, ShardedMatchesUnsharded) {
  Array i = array<int16_t>(
      {kI16Max, kI16Min, -3, 4, 5, -6, 7, 8, 100, -100, 30000, -30000, 1, 2, 3, kI16Max}, {8, 2});
  Array u =
      array<uint16_t>({65535, 0, 3, 40000, 5, 6, 7, 8, 9, 65535, 11, 12, 13, 14, 15, 16}, {8, 2});
  Array w = array<uint64_t>({kU64Max, 1ull << 63, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                            {8, 2});
  for (const Array& x : {i, u, w}) {
    std::string dt = dtype_short_name(x.dtype());
    check_sharded([](const std::vector<Array>& a) { return multiply(a[0], a[0]); }, {x},
                  dt + " mul");
    check_sharded([](const std::vector<Array>& a) { return sum(a[0], 0); }, {x}, dt + " sum");
    check_sharded([](const std::vector<Array>& a) { return prod(a[0], 1); }, {x}, dt + " prod");
    check_sharded([](const std::vector<Array>& a) { return max(a[0], 0); }, {x}, dt + " max");
    check_sharded([](const std::vector<Array>& a) { return cumsum(a[0], 1); }, {x}, dt + " cumsum");
    check_sharded([](const std::vector<Array>& a) { return sort(a[0], 1); }, {x}, dt + " sort");
    check_sharded([](const std::vector<Array>& a) { return astype(a[0], float32); }, {x},
                  dt + " to f32");
    check_sharded(
        [](const std::vector<Array>& a) {
          Array g = a[0][{all, array<int32_t>({0, 1, 1}, {3})}];
          return a[0].at(all, array<int32_t>({1, 1, 0}, {3})).add(g);
        },
        {x}, dt + " scatter-add of a gather");
  }
  check_sharded([](const std::vector<Array>& a) { return add(a[0], a[1]); },
                {array<uint8_t>({200, 1, 2, 3}, {4}), array<int8_t>({-100, 1, 2, 3}, {4})},
                "u8 + i8");
  check_sharded([](const std::vector<Array>& a) { return astype(a[0], int16); },
                {array<float>({NAN, 1e9f, -1e9f, 2.5f, -2.5f, 0.f, 1.f, 2.f}, {8})}, "f32 -> i16");
}
