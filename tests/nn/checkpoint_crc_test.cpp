// The checkpoint CRC-32 (PCLMULQDQ-folded where the CPU has it) equals zlib's on every
// length and alignment, and continues a running CRC as zlib does.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tsr/checkpoint/format.h"

namespace {

TEST(CheckpointCrc, MatchesZlibOnEveryLengthAndAlignment) {
  std::mt19937 gen(7);
  std::vector<unsigned char> buf(5000);
  for (auto& b : buf) b = static_cast<unsigned char>(gen());
  using tsr::ckpt::detail::crc32;
  for (size_t off : {0, 1, 3, 8, 13})
    for (size_t n = 0; n + off <= buf.size(); n += (n < 300 ? 1 : 97))
      for (uint32_t seed : {0u, 0xdeadbeefu})
        ASSERT_EQ(crc32(buf.data() + off, n, seed), crc32(buf.data() + off, n, seed, true))
            << "length " << n << " offset " << off;
  EXPECT_EQ(crc32("123456789", 9), 0xcbf43926u);  // the CRC-32 check value
  std::vector<unsigned char> big(1 << 20, 0xa5);
  EXPECT_EQ(crc32(big.data(), big.size()), crc32(big.data(), big.size(), 0, true));
}

}  // namespace
