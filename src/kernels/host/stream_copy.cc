// SPDX-License-Identifier: Apache-2.0
#include "kernels/host/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace loom::kernels {

void streamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  // Head: plain stores up to a 64-byte boundary of the destination, so every streamed line
  // is written whole (partial lines would defeat write combining).
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(out) % 64) % 64);
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  const size_t lines = bytes / 64;
  for (size_t i = 0; i < lines; ++i) {
    const __m128i* from = reinterpret_cast<const __m128i*>(in + i * 64);
    __m128i* to = reinterpret_cast<__m128i*>(out + i * 64);
    const __m128i a = _mm_loadu_si128(from);
    const __m128i b = _mm_loadu_si128(from + 1);
    const __m128i c = _mm_loadu_si128(from + 2);
    const __m128i d = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, d);
  }
  std::memcpy(out + lines * 64, in + lines * 64, bytes - lines * 64);
  _mm_sfence();  // streamed stores are weakly ordered: finish them before any flag
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace loom::kernels
