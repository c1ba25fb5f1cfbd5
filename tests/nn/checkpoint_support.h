#pragma once
// Shared by the checkpoint tests: a scratch directory per test, bitwise comparison of
// arrays, and a few small files helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tsr/checkpoint.h"
#include "tsr/tsr.h"

namespace ckpt_test {

namespace fs = std::filesystem;

/** A fresh directory for one test, removed afterwards. */
class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    root_ = fs::temp_directory_path() /
            ("tsr_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

/** The raw bytes of x's logical value (no conversion: the bits as stored). */
inline std::vector<unsigned char> bytes_of(const tsr::Array& x) {
  return tsr::dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using H = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
    std::vector<H> v = x.to_vector<H>();
    std::vector<unsigned char> out(v.size() * sizeof(H));
    if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
    return out;
  });
}

/** EXPECTs equal dtype, shape and bits. */
inline void expect_bitwise(const tsr::Array& want, const tsr::Array& got, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  EXPECT_TRUE(bytes_of(want) == bytes_of(got)) << what << ": values differ";
}

/** A float32 pattern with awkward bits (negative zero, a NaN payload, denormals). */
inline tsr::Array pattern(const tsr::Shape& shape, float seed) {
  int64_t n = tsr::numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = seed * static_cast<float>(i) - 3.5f;
  if (n > 2) {
    uint32_t nan = 0x7fc01234u, denorm = 0x00000042u;
    std::memcpy(&v[0], &nan, 4);
    std::memcpy(&v[1], &denorm, 4);
    v[2] = -0.0f;
  }
  return tsr::array(v, shape);
}

/** The whole file as bytes. */
inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/** Replaces the file's contents. */
inline void write_file(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

}  // namespace ckpt_test
