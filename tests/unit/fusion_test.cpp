// jit's elementwise fusion (runtime/fusion.cpp): fused chains give the same bits as
// the same ops run one by one (eager), on meshes of 1, 2 and 8 devices, with scalar
// operands, intermediates that are also results, converts and a short last block.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/arrays.h"
#include "tsr/tsr.h"

namespace tsr {
namespace {

// 258,168 elements: fused on 1 and 2 devices (at least 32,768 per device, with a
// short last block); on 8 devices each device's 32,271 stay below the threshold.
constexpr int64_t kRows = 2 * 40960 + 8 * 517;

Array chain(const Array& x) { return tanh(x * 2.0f + 1.0f) * 0.5f - x; }

void expect_same_bits(const Array& want, const Array& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  auto a = want.to_vector<double>(), b = got.to_vector<double>();
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (a[i] != a[i] && b[i] != b[i]))) ++bad;
  EXPECT_EQ(bad, 0u) << what << ": elements differing from the unfused ops";
}

class Fusion : public ::testing::TestWithParam<int> {};

TEST_P(Fusion, ChainMatchesEagerBitForBit) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  Array x = device_put(test::ramp({kRows, 3}, 1e-4, -3.0), P("x"));
  Array want = chain(x);
  Array got = jit(chain)(x);
  expect_same_bits(want, got, "tanh(x*2+1)*0.5-x");
  EXPECT_EQ(got.sharding(), want.sharding());
}

TEST_P(Fusion, IntermediatesThatAreResultsAndConverts) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  Array x = device_put(test::ramp({kRows, 3}, 3e-4, -5.0), P("x"));
  auto f = [](const Array& a) {
    Array t = exp(a * 0.25f);
    Array u = (t - a).astype(float64) * 3.0;
    Array v = maximum(u, 0.0).astype(float32) + t;
    return std::vector<Array>{t, v, u > 1.0};
  };
  std::vector<Array> want = f(x), got = jit(f)(x);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    expect_same_bits(want[i], got[i], "result " + std::to_string(i));
}

TEST_P(Fusion, IntegersAndBroadcastsBreakNothing) {
  MeshScope scope(make_mesh({GetParam()}, {"x"}));
  Array i = device_put(arange(0, static_cast<double>(kRows * 3)).astype(int32), P("x"));
  Array row = device_put(ones({kRows, 1}), P("x"));
  auto f = [](const Array& a, const Array& r) {
    Array b = (a * 7 + 3) % 11;                            // fused integer ops
    Array c = reshape(b, {kRows, 3}).astype(float32) * r;  // a size-1 broadcast: not fused
    return c - 1.0f;
  };
  expect_same_bits(f(i, row), jit(f)(i, row), "integer chain + broadcast");
}

INSTANTIATE_TEST_SUITE_P(Devices, Fusion, ::testing::Values(1, 2, 8),
                         [](const auto& info) { return std::to_string(info.param) + "dev"; });

TEST(FusionText, LocalProgramShowsOneFusedStep) {
  MeshScope scope(make_mesh({1}, {"x"}));
  Array x = device_put(test::ramp({kRows, 3}, 1e-4, -3.0), P());
  std::string local = jit(chain).lower(x).local;
  EXPECT_NE(local.find("fused_elementwise"), std::string::npos) << local;
  EXPECT_NE(local.find("ops=mul,add,tanh,mul,sub"), std::string::npos) << local;
}

TEST(FusionText, SmallArraysStayUnfused) {
  MeshScope scope(make_mesh({1}, {"x"}));
  Array x = device_put(test::ramp({64, 3}, 1e-4, -3.0), P());
  std::string local = jit(chain).lower(x).local;
  EXPECT_EQ(local.find("fused_elementwise"), std::string::npos) << local;
}

}  // namespace
}  // namespace tsr
