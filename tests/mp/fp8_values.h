// SPDX-License-Identifier: Apache-2.0
// The fp8 suite's data (test_fp8_collectives.cc): what each rank sends and what each element's
// result must be, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom.h"

namespace loom::test {

// Stands for the PreMulSum operator (scalar 1/2) among the suite's ops.
inline constexpr int kFp8PreMulSum = -1;

// The values of one case: the input bits of (rank, element) and the exact result of an element
// over all ranks. Each input is drawn as a small integer (a multiple of the element's unit, a
// factor, or a pattern for max/min) and turned into bits through tables made once per case
// with fp8::exactBits, which throws if a value is not exact (a bug of this test): the
// reference is exact arithmetic on those integers, cheap enough for 8 ranks x 524k elements.
class Fp8Values {
 public:
  Fp8Values(loomDataType_t type, int op, int nranks, uint64_t seed);
  uint8_t inputBits(int rank, size_t i) const;
  uint8_t expectedBits(size_t i) const;

 private:
  size_t unitIndex(size_t i) const;
  // The integer behind input (rank, i): a multiple of the unit (sum, avg, PreMulSum), a factor
  // index (prod) or a non-NaN pattern (max, min).
  int draw(int rank, size_t i) const;
  // Factor index -> bits: +0, -0, 1, -1, 2, -2, 1/2, -1/2 (odd indices negative).
  uint8_t factorBits(int factor) const;

  loomDataType_t type_;
  int op_, n_;
  uint64_t seed_;
  int units_, exponents_;
  std::vector<uint8_t> scaled_, scaledResult_;  // [unit index][k + 16]: bits of k * unit (* 1/2)
  std::vector<uint8_t> power_;                  // [j + 8]: bits of 2^j
  double decoded_[256];
};

}  // namespace loom::test
