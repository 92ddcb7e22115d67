// SPDX-License-Identifier: Apache-2.0
// A seeded random generator whose every output is fixed by its specification (xoshiro256**,
// seeded through SplitMix64), so a seed gives the same episodes with any compiler and standard
// library. The <random> engines are portable too, but their distributions are not: the standard
// leaves std::uniform_real_distribution's algorithm to the implementation, so uniform numbers
// here are made straight from the raw bits.
#pragma once

#include <cstdint>

namespace policy_gradient {

class Random {
 public:
  explicit Random(uint64_t seed);

  uint64_t nextBits();
  // Uniform in [0, 1): the top 53 bits as a double's mantissa, so every value is exact.
  double uniform();
  // Uniform in [low, high).
  double uniform(double low, double high);

 private:
  uint64_t state_[4];
};

// Independent streams from one user seed: SplitMix64 of (seed, stream) so that rank r's training
// episodes, its evaluation episodes and the weight initialisation never share a sequence.
uint64_t deriveSeed(uint64_t seed, uint64_t stream);

}  // namespace policy_gradient
