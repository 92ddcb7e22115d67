// SPDX-License-Identifier: Apache-2.0
// Every schedule, checked symbolically for n = 1..16: each rank ends with exactly the right
// contributions, each counted once, avg divided once, no deadlock, matching message sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "algorithms/schedule.h"
#include "base/error.h"
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

// Pieces of 16 elements: many pieces at most counts, so the schedules really pipeline.
CollectiveShape pipelinedShape(Collective collective, int n, size_t count, int root, bool average,
                               bool deterministic) {
  CollectiveShape shape;
  shape.collective = collective;
  shape.nranks = n;
  shape.count = count;
  shape.root = root;
  shape.average = average;
  shape.deterministic = deterministic;
  shape.pieceBytes = 8 * 16;
  return shape;
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
              checkShape(pipelinedShape(collective, n, count, root, average, false), inPlace);
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

// The sets the simulators keep, on both sides of one word: inline (up to 64 ranks) and on the
// heap, copied and moved between the two (under ASan in CI), the flag apart from the ranks.
TEST(RankSets, HoldAnyNumberOfRanks) {
  for (int n : {1, 63, 64, 65, 130, 512}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    RankSet set(n);
    EXPECT_TRUE(set.empty());
    for (int r = n - 1; r >= 0; r -= 3) set.set(r);
    EXPECT_EQ(set.count(), (n + 2) / 3);
    EXPECT_TRUE(set.test(n - 1));
    EXPECT_FALSE(set.test(n));  // outside the room: not a member, not an error
    EXPECT_THROW(RankSet(n).set(static_cast<int>(64 * RankSet(n).words())), Error);
    RankSet everyone = RankSet::all(n);
    EXPECT_EQ(everyone.count(), n);
    EXPECT_EQ(everyone.firstAbsent(n), -1);
    EXPECT_TRUE(everyone.intersects(set));
    RankSet rest(n);
    for (int r = 0; r < n; ++r) {
      if (!set.test(r)) rest.set(r);
    }
    EXPECT_FALSE(rest.intersects(set));
    RankSet joined = rest;  // a copy
    joined |= set;
    EXPECT_EQ(joined, everyone);
    joined.setDivided();
    EXPECT_FALSE(joined == everyone);  // the flag is part of the value, not a rank
    EXPECT_EQ(joined.count(), n);
    RankSet moved = std::move(joined);
    EXPECT_TRUE(moved.divided());
    EXPECT_EQ(RankSet::of(n, n - 1).describe(), "{" + std::to_string(n - 1) + "}");
    EXPECT_EQ(moved.describe(), (n > 1 ? "{0-" + std::to_string(n - 1) : std::string("{0")) + "} divided");
    moved = RankSet();  // heap to inline and back
    EXPECT_TRUE(moved.empty());
    moved = set;
    EXPECT_EQ(moved, set);
    // A set of a small room joined with one of a larger room grows; equality ignores room.
    RankSet small = RankSet::of(1, 0);
    small |= RankSet::of(n, n - 1);
    EXPECT_EQ(small.count(), n > 1 ? 2 : 1);
    EXPECT_EQ(small.firstAbsent(n), n > 1 ? 1 : -1);

    RankSets sets(n, 5);
    for (int i = 0; i < 5; ++i) sets.set(static_cast<size_t>(i), i * 37 % n);
    sets.setDivided(4);
    sets.copy(1, sets, 0, 4);  // overlapping, as memmove
    EXPECT_TRUE(sets.equals(1, RankSet::of(n, 0)));
    EXPECT_FALSE(sets.divided(4));  // set 3's flag came along with its ranks
    EXPECT_TRUE(sets.equals(4, RankSet::of(n, 111 % n)));
    EXPECT_EQ(sets.get(3), RankSet::of(n, 74 % n));
    EXPECT_TRUE(sets.intersects(0, sets, 1));
    sets.unite(0, sets, 2);
    EXPECT_EQ(sets.get(0).count(), 37 % n == 0 ? 1 : 2);
  }
}

// --- Past 64 ranks: the simulator holds sets of any number of ranks (tools/sim/rank_set.h). ---
// 63, 64 and 65 ranks sit around the edge of one 64-bit word of ranks, 130 spans three words
// and 512 is 64 hosts of 8. Every rank holds a set of n ranks per element, so counts stay small:
// all-gather's and reduce-scatter's buffers are n blocks of `count` (1 or 2 elements a block),
// the others' `count` elements (n: one a block, 2n + 3: uneven blocks), pieces of 16 elements.

bool blockPerRank(Collective collective) {
  return collective == Collective::AllGather || collective == Collective::ReduceScatter;
}

// Every collective in and out of place, avg and not, the first and last rank as root; both
// counts of each collective, or only the larger one (`bothCounts` false: fewer shapes).
void checkEveryCollectiveAt(int n, bool bothCounts) {
  for (Collective collective : kCollectives) {
    const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
    const size_t un = static_cast<size_t>(n);
    std::vector<size_t> counts = blockPerRank(collective) ? std::vector<size_t>{1, 2}
                                                          : std::vector<size_t>{un, 2 * un + 3};
    if (!bothCounts) counts.erase(counts.begin());
    for (size_t count : counts) {
      for (bool inPlace : {false, true}) {
        for (bool average : {false, true}) {
          if (average && !hasOp(collective)) continue;
          for (int root : rooted ? std::vector<int>{0, n - 1} : std::vector<int>{0}) {
            checkShape(pipelinedShape(collective, n, count, root, average, false), inPlace);
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
}

TEST(Schedules, EveryCollectiveIsExactAroundSixtyFourRanks) {
  for (int n : {63, 64, 65}) {
    checkEveryCollectiveAt(n, true);
    if (HasFailure()) return;
  }
}

TEST(Schedules, EveryCollectiveIsExactAtOneHundredThirtyRanks) { checkEveryCollectiveAt(130, false); }

// Deterministic mode gathers every rank's whole input on every rank (n^2 x the input in
// all): 3 elements, or reduce-scatter's 1 a rank (n in all), in and out of place around 64
// ranks; all-reduce and reduce once each at 130.
TEST(Schedules, DeterministicReductionsAreExactPastSixtyFourRanks) {
  for (int n : {63, 64, 65, 130}) {
    for (Collective collective : {Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce}) {
      for (bool inPlace : {false, true}) {
        if (n > 65 && (inPlace || collective == Collective::ReduceScatter)) continue;
        const size_t count = collective == Collective::ReduceScatter ? 1 : 3;
        checkShape(pipelinedShape(collective, n, count, n - 1, /*average=*/!inPlace, true), inPlace);
        if (HasFailure()) return;
      }
    }
  }
}

// The check looks at every word: rank 64 missing from one element of 65 ranks' all-reduce.
TEST(Schedules, VerificationSeesRanksPastTheFirstWord) {
  const CollectiveShape shape = pipelinedShape(Collective::AllReduce, 65, 65, 0, true, false);
  SimulationOutput output = simulate(shape, false);
  ASSERT_EQ(verifySymbolic(shape, false, output), "");
  output.recv[3].bits(7)[1] &= ~uint64_t{1};  // rank 64: word 1, bit 0
  EXPECT_EQ(verifySymbolic(shape, false, output),
            "allreduce n=65 count=65 root=0 out-of-place: rank 3 element 7 is {0-63} divided, expected {0-64} divided");
}

// 512 ranks, one test per collective (each a few hundred ms in a release build: building 512
// schedules of ~4n steps is most of it).
constexpr int kWide = 512;

TEST(Schedules, AllReduceIsExactAtFiveHundredTwelveRanks) {
  checkShape(pipelinedShape(Collective::AllReduce, kWide, kWide, 0, true, false), false);
}

TEST(Schedules, AllGatherIsExactAtFiveHundredTwelveRanks) {
  checkShape(pipelinedShape(Collective::AllGather, kWide, 1, 0, false, false), true);
}

TEST(Schedules, ReduceScatterIsExactAtFiveHundredTwelveRanks) {
  checkShape(pipelinedShape(Collective::ReduceScatter, kWide, 1, 0, true, false), false);
}

TEST(Schedules, BroadcastAndReduceAreExactAtFiveHundredTwelveRanks) {
  checkShape(pipelinedShape(Collective::Broadcast, kWide, kWide, kWide - 1, false, false), false);
  checkShape(pipelinedShape(Collective::Reduce, kWide, kWide, kWide / 2, true, false), true);
}

TEST(Schedules, DeterministicAllReduceIsExactAtFiveHundredTwelveRanks) {
  checkShape(pipelinedShape(Collective::AllReduce, kWide, 1, 0, true, true), false);
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
