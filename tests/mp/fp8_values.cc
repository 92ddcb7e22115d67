// SPDX-License-Identifier: Apache-2.0
// The fp8 suite's inputs and exact results (fp8_values.h). Compiled once, into the tests' support
// library: it runs for every element of every rank, so it runs at the build's optimisation, also
// where the test programs' own code has none.
#include "tests/mp/fp8_values.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tests/support/fp8_reference.h"
#include "tests/support/splitmix.h"

namespace loom::test {

namespace ref = fp8;

Fp8Values::Fp8Values(loomDataType_t type, int op, int nranks, uint64_t seed)
    : type_(type), op_(op), n_(nranks), seed_(seed) {
  const bool e4m3 = type == loomFloat8e4m3;
  const int limit = e4m3 ? 16 : 8;  // integers up to this are exact (4 and 3 significant bits)
  units_ =
      std::max(1, limit / nranks);  // |value| in units, so any subset sum stays within the limit
  // Exponents of the unit: the whole range sums can use. avg: 2^-k scaling (k <= 4) must stay
  // above the smallest subnormal; PreMulSum: so must the product with 1/2.
  int minExponent = e4m3 ? -9 : -16;
  const int maxExponent = e4m3 ? 4 : 12;
  if (op == loomAvg) minExponent += 4;
  if (op == kFp8PreMulSum) minExponent += 1;
  exponents_ = maxExponent - minExponent + 1;
  const double scale = op == kFp8PreMulSum ? 0.5 : 1.0;  // what the result multiplies the sum by
  for (int e = 0; e < exponents_; ++e) {
    for (int k = -16; k <= 16; ++k) {
      const double unit = std::ldexp(1.0, minExponent + e);
      scaled_.push_back(std::abs(k) <= units_ ? ref::exactBits(type, k * unit) : 0);
      scaledResult_.push_back(std::abs(k) <= limit ? ref::exactBits(type, k * unit * scale) : 0);
    }
  }
  for (int bits = 0; bits < 256; ++bits)
    decoded_[bits] = ref::decode(type, static_cast<uint8_t>(bits));
  for (int j = -8; j <= 8; ++j) power_.push_back(ref::exactBits(type, std::ldexp(1.0, j)));
}

uint8_t Fp8Values::inputBits(int rank, size_t i) const {
  const int drawn = draw(rank, i);
  switch (op_) {
    case loomProd:
      return factorBits(drawn);
    case loomMax:
    case loomMin:
      return static_cast<uint8_t>(drawn);
    default:
      return scaled_[unitIndex(i) * 33 + drawn + 16];
  }
}

uint8_t Fp8Values::expectedBits(size_t i) const {
  if (op_ == loomMax || op_ == loomMin) {
    auto best = static_cast<uint8_t>(draw(0, i));
    for (int r = 1; r < n_; ++r) {
      const auto bits = static_cast<uint8_t>(draw(r, i));
      const double x = decoded_[bits], acc = decoded_[best];
      const bool takeX =
          x == acc ? std::signbit(acc) == (op_ == loomMax) : (x > acc) == (op_ == loomMax);
      if (takeX) best = bits;
    }
    return best;
  }
  if (op_ == loomProd) {
    bool zero = false, negative = false;
    int exponent = 0;
    for (int r = 0; r < n_; ++r) {
      const int factor = draw(r, i);  // 0, 1: +-0; then +-1, +-2, +-1/2
      zero = zero || factor < 2;
      negative = negative != (factor % 2 == 1);
      exponent += factor < 4 ? 0 : factor < 6 ? 1 : -1;
    }
    const uint8_t sign = negative ? 0x80 : 0x00;
    return static_cast<uint8_t>(sign | (zero ? 0 : power_[exponent + 8]));
  }
  int sum = 0;
  for (int r = 0; r < n_; ++r) sum += draw(r, i);
  if (op_ == loomAvg) sum /= n_;  // exact: the inputs sum to n * mean
  return scaledResult_[unitIndex(i) * 33 + sum + 16];
}

size_t Fp8Values::unitIndex(size_t i) const { return (i * 7 + seed_) % static_cast<size_t>(exponents_); }

// The integer behind input (rank, i): a multiple of the unit (sum, avg, PreMulSum), a factor
// index (prod) or a non-NaN pattern (max, min).
int Fp8Values::draw(int rank, size_t i) const {
  const uint64_t h = mix(seed_ * 0xd1b54a32d192ed03ull +
                         static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull + i);
  switch (op_) {
    case loomProd:  // 1 in 16 a signed zero, else one of +-1, +-2, +-1/2
      return h % 16 == 0 ? static_cast<int>((h >> 4) & 1) : 2 + static_cast<int>((h >> 8) % 6);
    case loomMax:
    case loomMin: {
      auto bits = static_cast<uint8_t>(h);
      while (ref::isNan(type_, bits))
        bits = static_cast<uint8_t>(bits + 1);  // infinities are fine
      return bits;
    }
    case loomAvg: {
      // Around the mean t: +d on even ranks, -d on the odd one after each, 0 on an unpaired last.
      const uint64_t e = mix(seed_ ^ (i << 8));
      const int t = static_cast<int>(e % (2 * units_ + 1)) - units_;
      const int d = static_cast<int>((e >> 8) % (units_ - std::abs(t) + 1));
      const int offset = (rank % 2 == 0) ? (rank + 1 < n_ ? d : 0) : -d;
      return t + offset;
    }
    default:  // sum, PreMulSum
      return static_cast<int>(h % (2 * units_ + 1)) - units_;
  }
}

// Factor index -> bits: +0, -0, 1, -1, 2, -2, 1/2, -1/2 (odd indices negative).
uint8_t Fp8Values::factorBits(int factor) const {
  const uint8_t sign = factor % 2 ? 0x80 : 0x00;
  if (factor < 2) return sign;
  return static_cast<uint8_t>(sign | power_[8 + (factor < 4 ? 0 : factor < 6 ? 1 : -1)]);
}

}  // namespace loom::test
