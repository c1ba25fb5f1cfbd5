// CRC-32 (zlib's: the gzip / ISO-HDLC polynomial, reflected) of checkpoint blocks.
// zlib 1.2's table-driven crc32 runs at 1-3 GB/s, slower than reading a file from the
// page cache, so on x86 with PCLMULQDQ the bulk is folded 64 bytes at a time with
// carry-less multiplies (Gopal et al., "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ Instruction", Intel 2009; the constants are those of Chromium's
// zlib, crc32_simd.c) and zlib finishes the tail. Tests check it against zlib.
#include <immintrin.h>
#include <zlib.h>

#include "tsr/checkpoint/format.h"

namespace tsr::ckpt::detail {
namespace {

// x folded forward (by the distance k encodes) and xored into next.
[[gnu::target("pclmul,sse4.1")]] inline __m128i fold_in(__m128i x, __m128i next, __m128i k) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, lo), next);
}

// The CRC register (pre- and post-inverted by the caller) over len bytes, len >= 64 and
// a multiple of 16.
[[gnu::target("pclmul,sse4.1")]] uint32_t fold(const unsigned char* buf, size_t len, uint32_t crc) {
  alignas(16) static const uint64_t k1k2[] = {0x0154442bd4, 0x01c6e41596};
  alignas(16) static const uint64_t k3k4[] = {0x01751997d0, 0x00ccaa009e};
  alignas(16) static const uint64_t k5k0[] = {0x0163cd6124, 0x0000000000};
  alignas(16) static const uint64_t poly[] = {0x01db710641, 0x01f7011641};
  auto load = [](const unsigned char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  };
  __m128i x1 = load(buf), x2 = load(buf + 16), x3 = load(buf + 32), x4 = load(buf + 48);
  x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(k1k2));
  buf += 64;
  len -= 64;
  // Four independent 128-bit lanes, each folded forward by 512 bits per step.
  for (; len >= 64; buf += 64, len -= 64) {
    x1 = fold_in(x1, load(buf), k);
    x2 = fold_in(x2, load(buf + 16), k);
    x3 = fold_in(x3, load(buf + 32), k);
    x4 = fold_in(x4, load(buf + 48), k);
  }
  // The four lanes into one, then the remaining 16-byte blocks.
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(k3k4));
  x1 = fold_in(x1, x2, k);
  x1 = fold_in(x1, x3, k);
  x1 = fold_in(x1, x4, k);
  for (; len >= 16; buf += 16, len -= 16) x1 = fold_in(x1, load(buf), k);
  // 128 -> 64 bits.
  __m128i mask = _mm_setr_epi32(~0, 0, ~0, 0);
  x2 = _mm_clmulepi64_si128(x1, k, 0x10);
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
  k = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k5k0));
  x2 = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x00), x2);
  // Barrett reduction to 32 bits.
  k = _mm_load_si128(reinterpret_cast<const __m128i*>(poly));
  x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x10);
  x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, mask), k, 0x00);
  x1 = _mm_xor_si128(x1, x2);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool has_pclmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc, bool use_zlib_only) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (!use_zlib_only && n >= 64 && has_pclmul()) {
    size_t bulk = n & ~size_t{15};
    crc = ~fold(p, bulk, ~crc);
    p += bulk;
    n -= bulk;
  }
  return static_cast<uint32_t>(crc32_z(crc, p, n));
}

}  // namespace tsr::ckpt::detail
