// SPDX-License-Identifier: Apache-2.0
// A small seeded random generator with a fixed, platform-independent output: xoshiro256**
// seeded through splitmix64. The standard library's distributions are implementation-defined,
// so shuffles and initial weights built on them could differ between machines; these do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ddp {

class Random {
 public:
  explicit Random(uint64_t seed) {
    for (auto& word : state_) word = splitmix(seed);
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, bound) without modulo bias (rejection of the short last range).
  uint64_t below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t value;
    do value = next();
    while (value >= limit);
    return value % bound;
  }

  // Fisher-Yates, so a permutation depends only on the seed.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_[4];
};

// Independent streams for independent purposes (data split, each epoch's order, weights).
inline uint64_t deriveSeed(uint64_t seed, uint64_t purpose, uint64_t index = 0) {
  return seed * 0x9e3779b97f4a7c15ULL ^ (purpose << 48) ^ (index * 0xd1342543de82ef95ULL);
}

}  // namespace ddp
