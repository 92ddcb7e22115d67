// SPDX-License-Identifier: Apache-2.0
// splitmix64: the one seeded mixer the tests use to draw reproducible values from (seed, index).
#pragma once

#include <cstdint>

namespace loom::test {

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace loom::test
