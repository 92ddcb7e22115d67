// SPDX-License-Identifier: Apache-2.0
// Input data that makes every expected result exact, and the checks that compare with 0
// tolerance.
//
// Every input value is a small non-negative integer, chosen per (datatype, op, nranks) so that
// every partial result of any reduction order is exactly representable in the datatype:
// - sum/max/min and copies: v(r, g) = (7g + 1 + 3r) mod K, K a power of two with
//   (n + 1) * K below the type's exact-integer limit (127 int8, 255 uint8, 256 bfloat16,
//   2048 half, 65536 otherwise). The 3r term makes ranks differ (3 is odd, K a power of two).
// - avg: ranks come in pairs holding a + b and a - b (an odd last rank holds a), 0 <= b <= a,
//   so the sum is exactly n * a and the quotient a is exact in every type, whichever way the
//   library divides.
// - prod: v(r, g) = 2 when (g + r) mod P == 0, else 1, P chosen so at most 6 ranks hold a 2:
//   the product is 2^k <= 64, exact in every type (int8 included).
// g is the element's global index (e.g. rank r's all-gather block starts at g = r * count), so
// a block that lands in the wrong place is caught too.
#pragma once

#include <loom.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::perf {

size_t typeSize(loomDataType_t type);
const char* typeName(loomDataType_t type);  // nccl-tests' names: "float", "half", ...
const char* opName(loomRedOp_t op);         // "sum", "prod", "max", "min", "avg"

// "float" / "all" / ... -> the list; false on an unknown name.
bool parseTypeList(const std::string& text, std::vector<loomDataType_t>* types);
bool parseOpList(const std::string& text, std::vector<loomRedOp_t>* ops);

class Pattern {
 public:
  // op: the reduction the data feeds; pass loomSum for collectives that only copy.
  Pattern(loomDataType_t type, loomRedOp_t op, int nranks);

  // Fault injection for the tools' own tests: value(0, g) becomes one larger, so rank 0's input
  // no longer matches what reduced()/value() of an unskewed Pattern expect.
  Pattern skewedRank0() const {
    Pattern skewed = *this;
    skewed.skewRank0_ = true;
    return skewed;
  }

  loomDataType_t type() const { return type_; }
  // Input of rank `rank` at global index `g`.
  double value(int rank, size_t g) const;
  // The exact reduction of value(r, g) over all ranks r.
  double reduced(size_t g) const;

 private:
  loomDataType_t type_;
  loomRedOp_t op_;
  int nranks_;
  uint64_t modulus_;    // K
  uint64_t twoPeriod_;  // P
  bool skewRank0_ = false;
};

// Writes value(rank, firstGlobal + i) for i < count into buffer.
void fillInput(void* buffer, size_t count, const Pattern& pattern, int rank, size_t firstGlobal);

// Elements i < count of buffer that differ from value(sourceRank, firstGlobal + i).
size_t countWrongCopied(const void* buffer, size_t count, const Pattern& pattern, int sourceRank,
                        size_t firstGlobal);

// Elements i < count of buffer that differ from reduced(firstGlobal + i).
size_t countWrongReduced(const void* buffer, size_t count, const Pattern& pattern,
                         size_t firstGlobal);

// buffer[i] /= divisor for i < count: how a library without an average op (MPI, Gloo) finishes
// loomAvg after a sum. Integers truncate, as NCCL's avg does; half/bfloat16 divide in float and
// round to nearest even.
void divideInPlace(void* buffer, size_t count, loomDataType_t type, int divisor);

// Fills bytes with 0xff: NaN in float types and -1 / max in integers, never an expected value
// (they are all small and non-negative), so an output the collective failed to write is wrong.
void poison(void* buffer, size_t bytes);

}  // namespace loom::perf
