// SPDX-License-Identifier: Apache-2.0
// Every schedule, checked symbolically for n = 1..16: each rank ends with exactly the right
// contributions, each counted once, avg divided once, no deadlock, matching message sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "algorithms/schedule.h"
#include "tools/sim/simulator.h"

namespace loom::algo {
namespace {

const Collective kCollectives[] = {Collective::AllReduce, Collective::AllGather,
                                   Collective::ReduceScatter, Collective::Broadcast,
                                   Collective::Reduce};

std::vector<size_t> countsFor(int n) {
  // Empty, fewer elements than ranks, exactly n, uneven, and long enough for many pieces.
  return {0, 1, 2, static_cast<size_t>(n - 1 > 0 ? n - 1 : 1), static_cast<size_t>(n),
          static_cast<size_t>(n + 1), 7, 100, 1003};
}

void checkShape(CollectiveShape shape, bool inPlace) {
  SCOPED_TRACE(std::string(collectiveName(shape.collective)) + " n=" + std::to_string(shape.nranks) +
               " count=" + std::to_string(shape.count) + " root=" + std::to_string(shape.root) +
               (inPlace ? " in-place" : " out-of-place") + (shape.average ? " avg" : ""));
  SimulationOutput output = simulate(shape, inPlace);
  EXPECT_EQ(verifySymbolic(shape, inPlace, output), "");
}

TEST(Schedules, EveryCollectiveAndRankCountIsExact) {
  for (int n = 1; n <= 16; ++n) {
    for (Collective collective : kCollectives) {
      for (size_t count : countsFor(n)) {
        for (bool inPlace : {false, true}) {
          for (bool average : {false, true}) {
            const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
            if (average && (collective == Collective::AllGather || collective == Collective::Broadcast)) continue;
            std::vector<int> roots = rooted ? std::vector<int>{0, n / 2, n - 1} : std::vector<int>{0};
            for (int root : roots) {
              CollectiveShape shape;
              shape.collective = collective;
              shape.nranks = n;
              shape.count = count;
              shape.root = root;
              shape.average = average;
              shape.pieceBytes = 8 * 16;  // 16 elements a piece: many pieces, real pipelining
              checkShape(shape, inPlace);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// A topology may order the ring differently from the ranks: every collective must still give
// each rank exactly its promised contributions (all-gather blocks by rank, reduce-scatter's
// block r on rank r, the root's result at the root).
TEST(Schedules, EveryCollectiveIsExactInAnyRingOrder) {
  for (int n = 1; n <= 8; ++n) {
    std::vector<std::vector<int>> orders;
    std::vector<int> reversed(static_cast<size_t>(n)), strided;
    for (int i = 0; i < n; ++i) reversed[static_cast<size_t>(i)] = n - 1 - i;
    for (int start = 0; start < 2; ++start) {
      for (int i = start; i < n; i += 2) strided.push_back(i);  // 0 2 4 .. 1 3 5 ..
    }
    orders = {reversed, strided};
    for (const std::vector<int>& order : orders) {
      for (Collective collective : kCollectives) {
        for (size_t count : {size_t{1}, static_cast<size_t>(n + 1), size_t{100}}) {
          for (bool inPlace : {false, true}) {
            const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
            for (int root : rooted ? std::vector<int>{0, n - 1} : std::vector<int>{0}) {
              CollectiveShape shape;
              shape.collective = collective;
              shape.nranks = n;
              shape.count = count;
              shape.root = root;
              shape.average = collective == Collective::AllReduce || collective == Collective::ReduceScatter;
              shape.pieceBytes = 8 * 16;
              shape.ringOrder = &order;
              checkShape(shape, inPlace);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

TEST(Schedules, RingInRingOrderTalksOnlyToRingNeighbours) {
  const std::vector<int> order = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int rank = 0; rank < 8; ++rank) {
    CollectiveShape shape;
    shape.nranks = 8;
    shape.rank = rank;
    shape.count = 1000;
    shape.ringOrder = &order;
    const size_t position = static_cast<size_t>(std::find(order.begin(), order.end(), rank) - order.begin());
    const int next = order[(position + 1) % 8];
    const int previous = order[(position + 7) % 8];
    for (const Step& step : buildSchedule(shape).steps) {
      if (step.kind == StepKind::Send) {
        EXPECT_EQ(step.peer, next);
      }
      if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) {
        EXPECT_EQ(step.peer, previous);
      }
    }
  }
}

TEST(Schedules, RingAllReduceMovesTheOptimalVolume) {
  // Each rank sends 2(n-1)/n of the buffer: the bandwidth-optimal amount.
  for (int n : {2, 3, 4, 8}) {
    CollectiveShape shape;
    shape.nranks = n;
    shape.count = 1000 * n;
    SimulationOutput output = simulate(shape, false);
    EXPECT_EQ(output.bytes, static_cast<size_t>(n) * 2 * (n - 1) * 1000 * 8) << "n=" << n;
  }
}

TEST(Schedules, PiecesRespectElementBoundaries) {
  CollectiveShape shape;
  shape.nranks = 3;
  shape.count = 1001;
  shape.elementBytes = 2;
  shape.pieceBytes = 33;  // rounds down to 16 elements of 2 bytes
  for (int r = 0; r < 3; ++r) {
    shape.rank = r;
    for (const Step& step : buildSchedule(shape).steps) {
      const Range& range = step.kind == StepKind::Send ? step.src : step.dst;
      EXPECT_EQ(range.offset % 2, 0u);
      EXPECT_EQ(range.bytes % 2, 0u);
      EXPECT_LE(range.bytes, 32u);
      EXPECT_GT(range.bytes, 0u);
    }
  }
}

TEST(Schedules, SplitBlockCoversEverythingOnce) {
  for (size_t count : {0, 1, 5, 17, 1000003}) {
    for (int parts = 1; parts <= 9; ++parts) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Block block = splitBlock(count, parts, i);
        EXPECT_EQ(block.first, next);
        next += block.size;
      }
      EXPECT_EQ(next, count);
    }
  }
}

}  // namespace
}  // namespace loom::algo
