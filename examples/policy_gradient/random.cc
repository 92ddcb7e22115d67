// SPDX-License-Identifier: Apache-2.0
#include "random.h"

namespace policy_gradient {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): spreads any 64-bit input over the whole state space,
// which is what xoshiro's authors recommend for seeding (an all-zero state would be stuck).
uint64_t splitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Random::Random(uint64_t seed) {
  for (uint64_t& word : state_) word = splitMix64(seed);
}

// xoshiro256** 1.0 (Blackman and Vigna 2018).
uint64_t Random::nextBits() {
  const uint64_t result = rotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotateLeft(state_[3], 45);
  return result;
}

double Random::uniform() { return static_cast<double>(nextBits() >> 11) * 0x1.0p-53; }

double Random::uniform(double low, double high) { return low + (high - low) * uniform(); }

uint64_t deriveSeed(uint64_t seed, uint64_t stream) {
  uint64_t x = seed;
  uint64_t mixed = splitMix64(x);
  x = mixed ^ (stream * 0xd1b54a32d192ed03ull);
  return splitMix64(x);
}

}  // namespace policy_gradient
