#pragma once
// Byte copies for collectives whose buffers are larger than the cache: non-temporal
// stores skip reading each destination line into the cache just to overwrite it,
// which saves a third of the memory traffic of a copy.
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tsr::detail {

/** Copies `bytes` from src to dst (no overlap); with `streaming`, bypasses the cache
 *  for the destination, and the caller must store_fence() before peers read it. */
inline void copy_bytes(void* dst, const void* src, int64_t bytes, bool streaming) {
#if defined(__SSE2__)
  if (streaming && bytes >= 256) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const int64_t head = (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    const int64_t body = bytes / 64 * 64;
    for (int64_t i = 0; i < body; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
      __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
    }
    std::memcpy(d + body, s + body, bytes - body);
    return;
  }
#endif
  (void)streaming;
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

/** Makes this thread's non-temporal stores visible before it signals its peers. */
inline void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace tsr::detail
