// CPU kernels that split large arrays between threads when one device is busy
// (binary ops, two-way select_n, 2-D transposes): every element is written once and
// equals the element-by-element result, for sizes that do not divide evenly.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

// Above the threshold where kernels go parallel, and not a multiple of any alignment.
constexpr int64_t kN = detail::cpu::kParallelMin + 37;

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 1000);
  return v;
}

TEST(CpuParallel, BinaryOverOneRunMatchesTheLoop) {
  Mesh mesh = make_mesh({1}, {"x"});
  MeshScope scope(mesh);
  std::vector<float> a = ramp(kN, 0.5f), b = ramp(kN, -0.25f);
  Array x = device_put(a, P()), y = device_put(b, P());
  std::vector<float> sum = (x + y).to_vector<float>();
  std::vector<float> scaled = (x * 3.0).to_vector<float>();
  std::vector<float> rsub = (2.0 - y).to_vector<float>();
  ASSERT_EQ(sum.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(sum[i], a[i] + b[i]) << i;
    ASSERT_EQ(scaled[i], a[i] * 3.0f) << i;
    ASSERT_EQ(rsub[i], 2.0f - b[i]) << i;
  }
}

TEST(CpuParallel, SelectMatchesTheLoop) {
  Mesh mesh = make_mesh({1}, {"x"});
  MeshScope scope(mesh);
  std::vector<float> a = ramp(kN, 1.0f), b = ramp(kN, -1.0f);
  std::vector<uint8_t> w(static_cast<size_t>(kN));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>((i * 7919) % 3 == 0);
  Array which = astype(device_put(w, P()), bool_);
  std::vector<float> got =
      select_n(which, {device_put(a, P()), device_put(b, P())}).to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(got[i], w[i] ? b[i] : a[i]) << i;
}

TEST(CpuParallel, TransposeMatchesTheLoop) {
  Mesh mesh = make_mesh({1}, {"x"});
  MeshScope scope(mesh);
  for (auto [r, c] : {std::pair<int64_t, int64_t>{389, 517}, {1024, 200}, {130, 1031}}) {
    std::vector<float> a = ramp(r * c, 1.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] += static_cast<float>(i) * 1e-3f;
    std::vector<float> t = transpose(device_put(a, P(), {r, c})).to_vector<float>();
    ASSERT_EQ(t.size(), a.size());
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        ASSERT_EQ(t[static_cast<size_t>(j * r + i)], a[static_cast<size_t>(i * c + j)])
            << r << "x" << c << " at " << i << "," << j;
  }
}

}  // namespace
