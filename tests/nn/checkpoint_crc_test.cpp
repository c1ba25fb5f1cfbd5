// The checkpoint CRC-32 equals a bit-at-a-time reference of the zlib/gzip CRC on every
// length and alignment, and continues a running CRC the way zlib's crc32 does.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tsr/checkpoint/format.h"

namespace {

// The definition: reflected polynomial 0xEDB88320, pre- and post-inverted.
uint32_t crc32_bitwise(const unsigned char* p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(CheckpointCrc, MatchesTheDefinitionOnEveryLengthAndAlignment) {
  std::mt19937 gen(7);
  std::vector<unsigned char> buf(5000);
  for (auto& b : buf) b = static_cast<unsigned char>(gen());
  using tsr::ckpt::detail::crc32;
  for (size_t off : {0, 1, 3, 8, 13})
    for (size_t n = 0; n + off <= buf.size(); n += (n < 300 ? 1 : 97))
      for (uint32_t seed : {0u, 0xdeadbeefu})
        ASSERT_EQ(crc32(buf.data() + off, n, seed), crc32_bitwise(buf.data() + off, n, seed))
            << "length " << n << " offset " << off;
  EXPECT_EQ(crc32("123456789", 9), 0xcbf43926u);  // the CRC-32 check value
  std::vector<unsigned char> big(1 << 20, 0xa5);
  uint32_t half = crc32(big.data(), big.size() / 2);
  EXPECT_EQ(crc32(big.data() + big.size() / 2, big.size() / 2, half),
            crc32_bitwise(big.data(), big.size(), 0));
}

}  // namespace
