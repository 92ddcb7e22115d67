// SPDX-License-Identifier: Apache-2.0
// Issue 14, finding 6, default mode: what must hold on every path (direct engine, ring over
// shared memory, ring over TCP) whatever the element's position and whichever rank holds a
// special value:
//   - floating-point avg never overflows when the mean is representable (30000 in float16 on
//     3 ranks is 30000, as NCCL's premultiplied avg gives);
//   - NaN propagates through sum, prod, max and min wherever it sits;
//   - max(+0, -0) is +0 and min(+0, -0) is -0 in either order;
//   - the direct engine accumulates 16-bit floats in float32 and rounds once
//     (65504 + 65504 - 65504 is 65504, in any rank order).
#include <gtest/gtest.h>

#include "numerics_support.h"

namespace loom::test::numerics {
namespace {

struct Path {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
  bool direct;  // small calls run on the direct engine
};

const std::vector<Path>& allPaths() {
  static const std::vector<Path> paths = {
      {"direct", {{"LOOM_TRANSPORT", "shm"}}, true},
      {"ring over shm", {{"LOOM_ALGO", "ring"}, {"LOOM_TRANSPORT", "shm"}}, false},
      {"ring over tcp", {{"LOOM_ALGO", "ring"}, {"LOOM_SHM_DISABLE", "1"}}, false},
  };
  return paths;
}

// 7 and 4095 run on the direct engine by default; 65537 float32 takes the ring everywhere.
constexpr size_t kCounts[] = {7, 4095, 65537};

// Every rank holds `value` at every element: the mean is `value`.
void expectAvgIsValue(loomDataType_t type, double value, int nranks) {
  const uint64_t bits = bitsOf(type, value);
  ASSERT_EQ(floatOf(type, bits), value) << "test bug: not exact in " << typeLabel(type);
  for (const Path& path : allPaths()) {
    const bool ok = runOnCommunicators(nranks, path.env, [&](loomComm_t comm, int rank) {
      for (Coll coll : kColls) {
        for (size_t count : kCounts) {
          runAndCheck(comm, rank, nranks, coll, type, loomAvg, count, [&](int, size_t) { return bits; },
                      [&](size_t) { return bits; }, bitwiseEqual, path.name);
        }
      }
    });
    EXPECT_TRUE(ok) << typeLabel(type) << " avg of " << value << " on " << nranks << " ranks, " << path.name;
  }
}

TEST(Numerics, AvgNeverOverflowsWhenTheMeanIsRepresentable) {
  expectAvgIsValue(loomFloat16, 30000.0, 3);
  expectAvgIsValue(loomFloat16, 65504.0, 3);        // float16's largest finite value
  expectAvgIsValue(loomBfloat16, 0x1.8p127, 3);     // 2.55e38: 3 of them overflow bfloat16
  expectAvgIsValue(loomFloat32, 0x1.8p127, 3);      // ... and float32
  expectAvgIsValue(loomFloat64, 0x1.8p1023, 5);     // ... and float64
}

// Element i: the rank i % n holds NaN, the others hold small integers. Every op's result is NaN
// (any payload), on every path and for every position of the NaN.
TEST(Numerics, NanPropagatesWhereverItSits) {
  constexpr int kRanks = 3;
  for (loomDataType_t type : {loomFloat16, loomBfloat16, loomFloat32, loomFloat64}) {
    const uint64_t nan = bitsOf(type, std::nan(""));
    for (const Path& path : allPaths()) {
      const bool ok = runOnCommunicators(kRanks, path.env, [&](loomComm_t comm, int rank) {
        for (loomRedOp_t op : {loomSum, loomProd, loomMax, loomMin, loomAvg}) {
          for (Coll coll : kColls) {
            for (size_t count : {size_t{7}, size_t{65537}}) {
              runAndCheck(
                  comm, rank, kRanks, coll, type, op, count,
                  [&](int r, size_t i) { return static_cast<int>(i % kRanks) == r ? nan : bitsOf(type, double(r + 1)); },
                  [&](size_t) { return nan; },
                  [&](uint64_t got, uint64_t) { return isNanBits(type, got); }, path.name);
            }
          }
        }
      });
      EXPECT_TRUE(ok) << typeLabel(type) << ", " << path.name;
    }
  }
}

// Element i: rank r holds -0 where bit r of (i % 8) is set, else +0. max is +0 unless every
// rank holds -0; min is -0 unless none does. Bitwise, in every order.
TEST(Numerics, SignedZerosInMaxMinDoNotDependOnOrder) {
  constexpr int kRanks = 3;
  for (loomDataType_t type : {loomFloat16, loomBfloat16, loomFloat32, loomFloat64}) {
    const uint64_t plus = bitsOf(type, 0.0), minus = bitsOf(type, -0.0);
    for (const Path& path : allPaths()) {
      const bool ok = runOnCommunicators(kRanks, path.env, [&](loomComm_t comm, int rank) {
        for (loomRedOp_t op : {loomMax, loomMin}) {
          for (Coll coll : kColls) {
            for (size_t count : {size_t{8}, size_t{65536 + 8}}) {
              runAndCheck(
                  comm, rank, kRanks, coll, type, op, count,
                  [&](int r, size_t i) { return ((i % 8) >> r) & 1 ? minus : plus; },
                  [&](size_t i) {
                    if (op == loomMax) return i % 8 == 7 ? minus : plus;
                    return i % 8 == 0 ? plus : minus;
                  },
                  bitwiseEqual, path.name);
            }
          }
        }
      });
      EXPECT_TRUE(ok) << typeLabel(type) << ", " << path.name;
    }
  }
}

// The direct engine sees every rank's input: it sums 16-bit floats in float32 and rounds
// once, so a + b + c is exact where rounding after each rank overflows, in every rank order
// (element i holds permutation i % 6 of the three values). float16: 65504 + 65504 - 65504.
// bfloat16 (float32's range): 0x1.fep127 + 2^119 is the tie that rounds to infinity.
TEST(Numerics, DirectEngineRoundsSixteenBitSumsOnce) {
  constexpr int kRanks = 3;
  constexpr int kPermutations[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (loomDataType_t type : {loomFloat16, loomBfloat16}) {
    const double values[3] = {type == loomFloat16 ? 65504.0 : 0x1.fep127, type == loomFloat16 ? 65504.0 : 0x1p119,
                              type == loomFloat16 ? -65504.0 : -0x1p119};
    const uint64_t sum = bitsOf(type, values[0]);
    const bool ok = runOnCommunicators(kRanks, allPaths()[0].env, [&](loomComm_t comm, int rank) {
      for (Coll coll : kColls) {
        for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
          runAndCheck(
              comm, rank, kRanks, coll, type, loomSum, count,
              [&](int r, size_t i) { return bitsOf(type, values[kPermutations[i % 6][r]]); },
              [&](size_t) { return sum; }, bitwiseEqual, "direct");
        }
      }
    });
    EXPECT_TRUE(ok) << typeLabel(type);
  }
}

}  // namespace
}  // namespace loom::test::numerics
