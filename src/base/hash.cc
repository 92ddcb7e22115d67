// SPDX-License-Identifier: Apache-2.0
#include "base/hash.h"

namespace loom {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed) {
  uint64_t hash = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace loom
