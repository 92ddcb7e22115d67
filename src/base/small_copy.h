// SPDX-License-Identifier: Apache-2.0
// Copies that are usually a few bytes, inline. An 8-byte message is copied twice on its way (into
// its slot, out of it), and a call into the C library's memcpy costs more than such a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace loom {

// memcpy(dst, src, bytes): up to 16 bytes as two possibly overlapping loads and stores of one
// width, larger copies through memcpy.
inline void copyBytes(void* dst, const void* src, size_t bytes) {
  auto* to = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
  auto pair = [&](auto word) {  // the first and the last sizeof(word) bytes
    using Word = decltype(word);
    Word head, tail;
    std::memcpy(&head, from, sizeof(Word));
    std::memcpy(&tail, from + bytes - sizeof(Word), sizeof(Word));
    std::memcpy(to, &head, sizeof(Word));
    std::memcpy(to + bytes - sizeof(Word), &tail, sizeof(Word));
  };
  if (bytes > 16) {
    std::memcpy(dst, src, bytes);
  } else if (bytes >= 8) {
    pair(uint64_t{});
  } else if (bytes >= 4) {
    pair(uint32_t{});
  } else if (bytes >= 2) {
    pair(uint16_t{});
  } else if (bytes == 1) {
    *to = *from;
  }
}

}  // namespace loom
