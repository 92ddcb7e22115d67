// SPDX-License-Identifier: Apache-2.0
// The hierarchical schedules (hierarchical_*.cc, host_rings.h) for K hosts x R ranks, and the
// choice between them and the flat ring (host_layout.h):
//   - symbolically (tools/sim/simulator.h): every collective, sum and avg, in and out of place,
//     for every K x R up to 8 x 8, hosts holding consecutive ranks and interleaved (cyclic)
//     ones; non-uniform layouts fall back to the flat ring, still exact;
//   - numerically, with a small simulator of this file that runs the steps in a random order,
//     reads a send's memory only when the receiver takes it and writes a receive's only then,
//     with one message in flight per peer and direction, which completes only when taken (no
//     buffering at all): avg's scaling (the raw / partial-sum flags the executor follows), exact
//     integer results, no deadlock, and no step that overwrites memory a send in flight still
//     reads (in place);
//   - structurally: ranks on different hosts talk only along the rings of one local index.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "algorithms/host_layout.h"
#include "algorithms/schedule.h"
#include "base/error.h"
#include "tools/sim/simulator.h"
#include "tests/unit/schedule_numeric_sim.h"

namespace loom::algo {
namespace {

const Collective kEveryCollective[] = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                   Collective::Broadcast, Collective::Reduce};

// Host h holds ranks h*R .. h*R+R-1.
HostLayout hostMajor(int hosts, int perHost) {
  std::vector<uint64_t> ids;
  for (int rank = 0; rank < hosts * perHost; ++rank) ids.push_back(static_cast<uint64_t>(rank / perHost));
  return HostLayout::fromHostIds(ids);
}

// srun --distribution=cyclic: rank r on host r mod K.
HostLayout cyclic(int hosts, int perHost) {
  std::vector<uint64_t> ids;
  for (int rank = 0; rank < hosts * perHost; ++rank) ids.push_back(static_cast<uint64_t>(1000 + rank % hosts));
  return HostLayout::fromHostIds(ids);
}

HostLayout fromHosts(const std::vector<int>& hostOfRank) {
  return HostLayout::fromHostIds(std::vector<uint64_t>(hostOfRank.begin(), hostOfRank.end()));
}

std::string describeShape(const CollectiveShape& shape, bool inPlace) {
  return std::string(collectiveName(shape.collective)) + " n=" + std::to_string(shape.nranks) +
         (shape.hosts != nullptr ? " " + shape.hosts->describe() : "") + " count=" + std::to_string(shape.count) +
         " root=" + std::to_string(shape.root) + (inPlace ? " in-place" : " out-of-place") +
         (shape.average ? " avg" : "") + " piece=" + std::to_string(shape.pieceBytes);
}

void checkSymbolic(const CollectiveShape& shape, bool inPlace) {
  SCOPED_TRACE(describeShape(shape, inPlace));
  try {
    const SimulationOutput output = simulate(shape, inPlace);
    EXPECT_EQ(verifySymbolic(shape, inPlace, output), "");
  } catch (const Error& error) {
    ADD_FAILURE() << error.what();
  }
}

void checkNumeric(const CollectiveShape& shape, bool inPlace, uint32_t seed) {
  SCOPED_TRACE(describeShape(shape, inPlace) + " seed=" + std::to_string(seed));
  const numeric_sim::NumericOutcome outcome = numeric_sim::simulateNumerically(shape, inPlace, seed);
  EXPECT_EQ(outcome.runProblem, "");
  if (outcome.runProblem.empty()) {
    EXPECT_EQ(outcome.verifyProblem, "");
  }
}

// Every message between two hosts joins ranks of one local index (the per-local-index rings and
// chains); each hierarchical schedule talks to at most its two host-ring neighbours and its two
// across-host neighbours.
void checkTraffic(const CollectiveShape& shape) {
  const HostLayout& hosts = *shape.hosts;
  for (int r = 0; r < shape.nranks; ++r) {
    CollectiveShape mine = shape;
    mine.rank = r;
    for (const Step& step : buildSchedule(mine).steps) {
      if (step.peer < 0) continue;
      const size_t peer = static_cast<size_t>(step.peer), rank = static_cast<size_t>(r);
      if (hosts.hostOf[peer] != hosts.hostOf[rank]) {
        ASSERT_EQ(hosts.localOf[peer], hosts.localOf[rank])
            << describeShape(mine, false) << ": rank " << r << " talks to rank " << peer << " on another host";
      }
    }
  }
}

CollectiveShape shapeOf(Collective collective, const HostLayout& hosts, size_t count) {
  CollectiveShape shape;
  shape.collective = collective;
  shape.nranks = hosts.nranks();
  shape.count = count;
  shape.hosts = &hosts;
  return shape;
}

// Roots that cover a root at local index 0 and elsewhere, on the first host and elsewhere.
std::vector<int> sampledRoots(const HostLayout& hosts) {
  const int n = hosts.nranks();
  std::vector<int> roots = {0, n - 1, n / 2, hosts.rankAt(hosts.hosts() - 1, 0), hosts.rankAt(0, 1)};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

// ---- The choice ------------------------------------------------------------------------------
TEST(HostLayout, GroupsRanksByHostInRankOrder) {
  const HostLayout layout = HostLayout::fromHostIds({7, 3, 7, 3, 9});
  ASSERT_EQ(layout.hosts(), 3);
  EXPECT_EQ(layout.ranks[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.ranks[1], (std::vector<int>{1, 3}));
  EXPECT_EQ(layout.ranks[2], (std::vector<int>{4}));
  EXPECT_EQ(layout.hostOf, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(layout.localOf, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_FALSE(layout.uniform());
  EXPECT_EQ(layout.ranksPerHost(), 0);
  EXPECT_EQ(layout.describe(), "hosts hold 2, 2, 1 ranks (non-uniform)");

  EXPECT_TRUE(hostMajor(3, 2).hostMajor());
  EXPECT_EQ(hostMajor(3, 2).describe(), "3 hosts x 2 ranks (host-major)");
  EXPECT_FALSE(cyclic(3, 2).hostMajor());
  EXPECT_EQ(cyclic(3, 2).describe(), "3 hosts x 2 ranks (interleaved)");
  EXPECT_EQ(cyclic(3, 2).rankAt(1, 1), 4);
  EXPECT_EQ(cyclic(3, 2).rankAt(-1, 3), 5);  // both taken mod their counts
  EXPECT_EQ(hostMajor(1, 4).describe(), "1 host x 4 ranks");
  EXPECT_EQ(hostMajor(4, 1).describe(), "4 hosts x 1 rank");
}

TEST(HostLayout, ChoiceFollowsTheLayoutAndTheSetting) {
  using S = AlgorithmSetting;
  struct Case {
    HostLayout layout;
    S setting;
    bool hierarchical;
    std::string reason;
  };
  const Case cases[] = {
      {hostMajor(2, 2), S::Auto, true, "hierarchical collectives: 2 hosts x 2 ranks (host-major) (LOOM_ALGO=auto)"},
      {cyclic(2, 2), S::Auto, true, "hierarchical collectives: 2 hosts x 2 ranks (interleaved) (LOOM_ALGO=auto)"},
      {cyclic(2, 2), S::Hierarchical, true,
       "hierarchical collectives: 2 hosts x 2 ranks (interleaved) (LOOM_ALGO=hierarchical)"},
      {cyclic(2, 2), S::Ring, false, "flat ring: LOOM_ALGO=ring (2 hosts x 2 ranks (interleaved))"},
      {fromHosts({0, 0, 1}), S::Auto, false, "flat ring across hosts: hosts hold 2, 1 ranks (non-uniform)"},
      {fromHosts({0, 0, 1}), S::Hierarchical, false,
       "flat ring across hosts: hosts hold 2, 1 ranks (non-uniform); LOOM_ALGO=hierarchical needs as many ranks "
       "on every host"},
      {hostMajor(1, 4), S::Auto, false, "flat ring: 1 host x 4 ranks"},
      {hostMajor(1, 4), S::Hierarchical, false,
       "flat ring: 1 host x 4 ranks (one host: the hierarchical form is the ring)"},
      {hostMajor(3, 1), S::Auto, false,
       "flat ring across hosts: 3 hosts x 1 rank (one rank a host: the hierarchical form is the ring)"},
      {hostMajor(3, 1), S::Hierarchical, false,
       "flat ring across hosts: 3 hosts x 1 rank (one rank a host: the hierarchical form is the ring)"},
  };
  for (const Case& c : cases) {
    const HierarchyChoice choice = chooseHierarchy(c.layout, c.setting);
    EXPECT_EQ(choice.hierarchical, c.hierarchical) << c.reason;
    EXPECT_EQ(choice.reason, c.reason);
  }
  const HierarchyChoice deterministic = chooseHierarchy(hostMajor(2, 2), S::Auto, true);
  EXPECT_TRUE(deterministic.hierarchical);
  EXPECT_NE(deterministic.reason.find("deterministic mode"), std::string::npos) << deterministic.reason;

  EXPECT_EQ(algorithmSetting("auto"), S::Auto);
  EXPECT_EQ(algorithmSetting("ring"), S::Ring);
  EXPECT_EQ(algorithmSetting("hierarchical"), S::Hierarchical);
}

TEST(HostLayout, ScheduleTakesTheHierarchicalFormOnlyWhereItApplies) {
  const HostLayout twoByTwo = cyclic(2, 2), nonUniform = fromHosts({0, 0, 1}), oneHost = hostMajor(1, 3),
                   onePerHost = hostMajor(3, 1);
  for (Collective collective : kEveryCollective) {
    EXPECT_TRUE(usesHierarchy(shapeOf(collective, twoByTwo, 10)));
    EXPECT_FALSE(usesHierarchy(shapeOf(collective, nonUniform, 10)));
    EXPECT_FALSE(usesHierarchy(shapeOf(collective, oneHost, 10)));
    EXPECT_FALSE(usesHierarchy(shapeOf(collective, onePerHost, 10)));
    CollectiveShape flat = shapeOf(collective, twoByTwo, 10);
    flat.hosts = nullptr;
    EXPECT_FALSE(usesHierarchy(flat));
    CollectiveShape deterministic = shapeOf(collective, twoByTwo, 10);
    deterministic.deterministic = true;
    const bool reduces = collective != Collective::AllGather && collective != Collective::Broadcast;
    EXPECT_EQ(usesHierarchy(deterministic), !reduces) << collectiveName(collective);
  }
  for (Collective collective : {Collective::AllToAll, Collective::Gather, Collective::Scatter, Collective::Barrier}) {
    EXPECT_FALSE(usesHierarchy(shapeOf(collective, twoByTwo, 10)));
  }
  // A fallback is the flat ring itself, step for step.
  for (const HostLayout* layout : {&nonUniform, &oneHost, &onePerHost}) {
    for (int rank = 0; rank < layout->nranks(); ++rank) {
      CollectiveShape shape = shapeOf(Collective::AllReduce, *layout, 100);
      shape.rank = rank;
      const Schedule withHosts = buildSchedule(shape);
      shape.hosts = nullptr;
      const Schedule flat = buildSchedule(shape);
      ASSERT_EQ(withHosts.steps.size(), flat.steps.size());
      for (size_t i = 0; i < flat.steps.size(); ++i) EXPECT_EQ(describe(withHosts.steps[i]), describe(flat.steps[i]));
    }
  }
  // A layout for another rank count is a bug of the caller.
  const HostLayout sixRanks = hostMajor(2, 3);
  CollectiveShape mismatched = shapeOf(Collective::AllReduce, sixRanks, 10);
  mismatched.nranks = 4;
  EXPECT_THROW(buildSchedule(mismatched), Error);
}

// ---- Symbolic: the whole grid ----------------------------------------------------------------
// Every K x R up to 8 x 8, host-major and interleaved: all-reduce (sum, avg) at several counts,
// the others at fewer, broadcast and reduce at sampled roots. Pieces of 4 elements, so larger
// counts move as several pieces per unit.
TEST(HierarchicalSchedules, EveryLayoutUpTo8x8IsExact) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 1; k <= 8; ++k) {
    for (int r = 1; r <= 8; ++r) {
      const int n = k * r;
      const bool distinctCyclic = k > 1 && r > 1;
      std::vector<HostLayout> layouts = {hostMajor(k, r)};
      if (distinctCyclic) layouts.push_back(cyclic(k, r));
      for (const HostLayout& hosts : layouts) {
        const size_t small = static_cast<size_t>(std::max(1, n / 2 - 1));  // fewer than K x R: empty units
        for (bool inPlace : {false, true}) {
          for (size_t count : {size_t{0}, size_t{1}, small, static_cast<size_t>(n) + 3, size_t{4} * n + 9}) {
            for (bool average : {false, true}) {
              CollectiveShape shape = shapeOf(Collective::AllReduce, hosts, count);
              shape.average = average;
              shape.pieceBytes = 4 * 8;
              checkSymbolic(shape, inPlace);
            }
          }
          for (size_t count : {size_t{1}, size_t{5}}) {
            CollectiveShape gather = shapeOf(Collective::AllGather, hosts, count);
            gather.pieceBytes = 4 * 8;
            checkSymbolic(gather, inPlace);
            CollectiveShape scatter = shapeOf(Collective::ReduceScatter, hosts, count);
            scatter.pieceBytes = 4 * 8;
            scatter.average = count == 5;
            checkSymbolic(scatter, inPlace);
          }
          for (int root : sampledRoots(hosts)) {
            for (Collective collective : {Collective::Broadcast, Collective::Reduce}) {
              CollectiveShape shape = shapeOf(collective, hosts, 9);
              shape.root = root;
              shape.average = collective == Collective::Reduce && inPlace;
              shape.pieceBytes = 4 * 8;
              checkSymbolic(shape, inPlace);
            }
          }
          if (HasFailure()) return;
        }
        if (distinctCyclic) {
          for (Collective collective : kEveryCollective) checkTraffic(shapeOf(collective, hosts, 3 * n + 1));
        }
      }
    }
  }
  std::printf("8 x 8 grid: %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// Every root of a few layouts, for broadcast and reduce.
TEST(HierarchicalSchedules, EveryRootOfBroadcastAndReduce) {
  for (const HostLayout& hosts : {hostMajor(3, 4), cyclic(4, 3), cyclic(2, 5)}) {
    for (int root = 0; root < hosts.nranks(); ++root) {
      for (bool inPlace : {false, true}) {
        for (Collective collective : {Collective::Broadcast, Collective::Reduce}) {
          CollectiveShape shape = shapeOf(collective, hosts, 13);
          shape.root = root;
          shape.average = collective == Collective::Reduce;
          shape.pieceBytes = 2 * 8;
          checkSymbolic(shape, inPlace);
        }
      }
    }
  }
}

// Non-uniform layouts take the flat ring, exact as ever.
TEST(HierarchicalSchedules, NonUniformLayoutsFallBackToTheFlatRing) {
  const std::vector<std::vector<int>> layouts = {{0, 0, 1}, {0, 1, 0}, {0, 0, 0, 1, 2, 2}, {2, 0, 1, 0, 2, 0}};
  for (const std::vector<int>& hostOfRank : layouts) {
    const HostLayout hosts = fromHosts(hostOfRank);
    for (Collective collective : kEveryCollective) {
      for (bool inPlace : {false, true}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{40}}) {
          for (int root : sampledRoots(hosts)) {
            CollectiveShape shape = shapeOf(collective, hosts, count);
            shape.root = root;
            shape.average = collective == Collective::AllReduce || collective == Collective::ReduceScatter;
            shape.pieceBytes = 3 * 8;
            EXPECT_FALSE(usesHierarchy(shape));
            checkSymbolic(shape, inPlace);
            if (collective != Collective::Broadcast && collective != Collective::Reduce) break;
          }
        }
      }
    }
  }
}

// Many pieces per unit, the message larger than the pieces of every phase.
TEST(HierarchicalSchedules, ManyPiecesOverlapThePhases) {
  for (const HostLayout& hosts : {hostMajor(2, 3), cyclic(3, 2), cyclic(4, 4)}) {
    for (Collective collective : kEveryCollective) {
      for (bool inPlace : {false, true}) {
        CollectiveShape shape = shapeOf(collective, hosts, 1001);
        shape.pieceBytes = 5 * 8;
        shape.root = hosts.nranks() - 1;
        shape.average = collective == Collective::AllReduce || collective == Collective::Reduce;
        checkSymbolic(shape, inPlace);
        shape.count = 301;  // the numeric simulator is slower: fewer pieces, still several a unit
        checkNumeric(shape, inPlace, 7);
      }
    }
  }
}

// Between hosts, each rank sends 2(K-1)/(KR) of an all-reduce's buffer; within its host
// 2(R-1)/R. (The flat ring over host-major ranks sends 2(n-1)/n, partly between hosts.)
TEST(HierarchicalSchedules, AllReduceMovesTheExpectedVolume) {
  for (const HostLayout& hosts : {hostMajor(2, 4), cyclic(4, 2), hostMajor(3, 3)}) {
    const int k = hosts.hosts(), r = hosts.ranksPerHost(), n = k * r;
    CollectiveShape shape = shapeOf(Collective::AllReduce, hosts, 1000 * static_cast<size_t>(n));
    size_t across = 0, within = 0;
    for (int rank = 0; rank < n; ++rank) {
      shape.rank = rank;
      for (const Step& step : buildSchedule(shape).steps) {
        if (step.kind != StepKind::Send) continue;
        const bool crosses = hosts.hostOf[static_cast<size_t>(step.peer)] != hosts.hostOf[static_cast<size_t>(rank)];
        (crosses ? across : within) += step.src.bytes;
      }
    }
    const size_t bytes = shape.count * shape.elementBytes;
    EXPECT_EQ(across, static_cast<size_t>(n) * 2 * (k - 1) * bytes / (static_cast<size_t>(k) * r)) << hosts.describe();
    EXPECT_EQ(within, static_cast<size_t>(n) * 2 * (r - 1) * bytes / r) << hosts.describe();
  }
}

// ---- Numeric: avg's scaling and the in-place hazards -----------------------------------------
// Every K x R from 2 x 2 to 4 x 4 in both placements, and two that fall back to the flat ring.
TEST(HierarchicalSchedules, NumericResultsAreExactInAnyOrder) {
  std::vector<HostLayout> layouts = {fromHosts({0, 1, 0}), fromHosts({0, 0, 1, 2, 2, 2})};
  for (int k = 2; k <= 4; ++k) {
    for (int r = 2; r <= 4; ++r) {
      layouts.push_back(hostMajor(k, r));
      layouts.push_back(cyclic(k, r));
    }
  }
  for (const HostLayout& hosts : layouts) {
    const int n = hosts.nranks();
    for (Collective collective : kEveryCollective) {
      for (bool inPlace : {false, true}) {
        for (size_t count : {size_t{1}, static_cast<size_t>(n) + 1, size_t{29}}) {
          for (bool average : {false, true}) {
            const bool reduces = collective != Collective::AllGather && collective != Collective::Broadcast;
            if (average && !reduces) continue;
            const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
            for (int root : rooted ? sampledRoots(hosts) : std::vector<int>{0}) {
              CollectiveShape shape = shapeOf(collective, hosts, count);
              shape.root = root;
              shape.average = average;
              shape.pieceBytes = 3 * 8;
              checkNumeric(shape, inPlace, static_cast<uint32_t>(count * 31 + root));
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// ---- Beyond 64 ranks -------------------------------------------------------------------------
// 64 hosts x 8 ranks, all-reduce of a small count (most units empty), host-major and cyclic.
TEST(HierarchicalSchedules, AllReduceOf64HostsOf8Ranks) {
  for (const HostLayout& hosts : {hostMajor(64, 8), cyclic(64, 8)}) {
    for (size_t count : {size_t{5}, size_t{131}}) {
      CollectiveShape shape = shapeOf(Collective::AllReduce, hosts, count);
      shape.average = count == 5;
      checkSymbolic(shape, false);
    }
  }
}

// The other four at 64 x 8, one count each (most units empty, some not), one root off the
// first host and off local index 0.
TEST(HierarchicalSchedules, OtherCollectivesOf64HostsOf8Ranks) {
  for (const HostLayout& hosts : {hostMajor(64, 8), cyclic(64, 8)}) {
    for (Collective collective : {Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
                                  Collective::Reduce}) {
      CollectiveShape shape = shapeOf(collective, hosts, collective == Collective::AllGather ||
                                                             collective == Collective::ReduceScatter ? 1 : 67);
      shape.root = 8 * 37 + 5;
      checkSymbolic(shape, collective == Collective::Broadcast);
    }
  }
}

}  // namespace
}  // namespace loom::algo
