// SPDX-License-Identifier: Apache-2.0
// The data-movement schedules of issue 15 (all-to-all, all-to-all-v, gather, scatter, the
// barrier), proven for n = 1..16 with the provenance simulator (tools/sim/movement_simulator.h):
// every output byte holds exactly the input byte the collective promises, nothing else is
// written (gaps, inputs, non-roots' unused buffers, which are NULL here so even a read fails),
// no deadlock when every message is a rendezvous, matching sizes, no two unordered steps of a
// rank touching the same bytes, and for the barrier that no rank can finish before every rank
// has started. The last tests break schedules on purpose to show the checks catch it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "base/error.h"
#include "tools/sim/movement_collectives.h"
#include "tools/sim/random_programs.h"

namespace loom::algo {
namespace {

// Empty, one element, fewer than ranks, odd, an odd count that grows with n, and a longer one.
std::vector<size_t> meshCountsFor(int n) { return {0, 1, 2, 7, static_cast<size_t>(2 * n + 1), 33}; }

MovementCase movementCase(Collective collective, int n, size_t count, int root = 0, bool inPlace = false,
                          size_t elementBytes = 4) {
  MovementCase movement;
  movement.shape.collective = collective;
  movement.shape.nranks = n;
  movement.shape.count = count;
  movement.shape.root = root;
  movement.shape.elementBytes = elementBytes;
  movement.shape.pieceBytes = 16;  // the mesh schedules send whole blocks whatever the piece size
  movement.inPlace = inPlace;
  return movement;
}

std::string label(const MovementCase& movement) {
  const CollectiveShape& shape = movement.shape;
  return std::string(collectiveName(shape.collective)) + " n=" + std::to_string(shape.nranks) +
         " count=" + std::to_string(shape.count) + " x " + std::to_string(shape.elementBytes) +
         " bytes root=" + std::to_string(shape.root) + (movement.inPlace ? " in-place" : " out-of-place");
}

TEST(MeshSchedules, AllToAllIsExactForEveryRankCount) {
  for (int n = 1; n <= 16; ++n) {
    for (size_t count : meshCountsFor(n)) {
      for (size_t elementBytes : {1, 2, 4, 8}) {
        const MovementCase movement = movementCase(Collective::AllToAll, n, count, 0, false, elementBytes);
        ASSERT_EQ(proveMovement(movement), "") << label(movement);
      }
    }
  }
}

// Each rank sends each other rank its block once, and nothing more: n(n-1) messages.
TEST(MeshSchedules, AllToAllSendsEveryOffDiagonalBlockOnce) {
  for (int n = 1; n <= 16; ++n) {
    for (size_t count : {0, 7}) {
      MovementResult result;
      ASSERT_EQ(proveMovement(movementCase(Collective::AllToAll, n, count), &result), "");
      const size_t pairs = static_cast<size_t>(n) * static_cast<size_t>(n - 1);
      EXPECT_EQ(result.messages, count == 0 ? 0 : pairs) << "n=" << n;
      EXPECT_EQ(result.bytes, pairs * count * 4) << "n=" << n;
    }
  }
}

TEST(MeshSchedules, AllToAllvIsExactWithRandomLayouts) {
  for (int n = 1; n <= 16; ++n) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      const std::vector<VectorLayout> layouts = randomLayouts(n, seed * 1000 + static_cast<uint64_t>(n));
      for (size_t elementBytes : {1, 4}) {
        MovementCase movement = movementCase(Collective::AllToAllv, n, 0, 0, false, elementBytes);
        movement.layouts = &layouts;
        MovementResult result;
        ASSERT_EQ(proveMovement(movement, &result), "") << label(movement) << " seed " << seed;
        size_t offDiagonal = 0;  // elements that travel between two ranks
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) offDiagonal += i == j ? 0 : layouts[i].sendCounts[j];
        }
        EXPECT_EQ(result.bytes, offDiagonal * elementBytes) << "n=" << n << " seed " << seed;
      }
    }
  }
}

// A rank that sends and receives nothing, and a call where nobody does.
TEST(MeshSchedules, AllToAllvWithEmptyRanksIsExact) {
  for (int n = 1; n <= 16; ++n) {
    std::vector<VectorLayout> layouts = randomLayouts(n, 77 + static_cast<uint64_t>(n));
    for (int silent : {0, n - 1}) {
      for (int j = 0; j < n; ++j) {
        layouts[silent].sendCounts[j] = layouts[silent].recvCounts[j] = 0;
        layouts[j].sendCounts[silent] = layouts[j].recvCounts[silent] = 0;
      }
      MovementCase movement = movementCase(Collective::AllToAllv, n, 0);
      movement.layouts = &layouts;
      ASSERT_EQ(proveMovement(movement), "") << label(movement) << " silent rank " << silent;
    }
    for (VectorLayout& layout : layouts) {
      for (int j = 0; j < n; ++j) layout.sendCounts[j] = layout.recvCounts[j] = 0;
    }
    MovementCase movement = movementCase(Collective::AllToAllv, n, 0);
    movement.layouts = &layouts;
    MovementResult result;
    ASSERT_EQ(proveMovement(movement, &result), "") << label(movement) << " all empty";
    EXPECT_EQ(result.messages, 0u);
  }
}

TEST(MeshSchedules, GatherIsExactForEveryRootInAndOutOfPlace) {
  for (int n = 1; n <= 16; ++n) {
    for (int root = 0; root < n; ++root) {
      for (size_t count : meshCountsFor(n)) {
        for (bool inPlace : {false, true}) {
          const MovementCase movement = movementCase(Collective::Gather, n, count, root, inPlace);
          MovementResult result;
          ASSERT_EQ(proveMovement(movement, &result), "") << label(movement);
          EXPECT_EQ(result.messages, count == 0 ? 0u : static_cast<size_t>(n - 1)) << label(movement);
        }
      }
    }
  }
}

TEST(MeshSchedules, ScatterIsExactForEveryRootInAndOutOfPlace) {
  for (int n = 1; n <= 16; ++n) {
    for (int root = 0; root < n; ++root) {
      for (size_t count : meshCountsFor(n)) {
        for (bool inPlace : {false, true}) {
          const MovementCase movement = movementCase(Collective::Scatter, n, count, root, inPlace);
          MovementResult result;
          ASSERT_EQ(proveMovement(movement, &result), "") << label(movement);
          EXPECT_EQ(result.messages, count == 0 ? 0u : static_cast<size_t>(n - 1)) << label(movement);
        }
      }
    }
  }
}

// The in-place root's own block is already where it belongs: the copy onto itself writes nothing.
TEST(MeshSchedules, InPlaceRootsLeaveTheirOwnBlockUnwritten) {
  for (Collective collective : {Collective::Gather, Collective::Scatter}) {
    const MovementCase movement = movementCase(collective, 5, 3, 2, true);
    const MovementProblem problem = movementProblem(movement);
    const MovementResult result = simulateMovement(problem.programs);
    const Region& own = problem.programs[2].buffers[static_cast<size_t>(
        collective == Collective::Gather ? Buffer::Send : Buffer::Recv)];
    for (size_t i = 0; i < own.bytes; ++i) EXPECT_EQ(result.writes[2][own.at + i], 0u) << label(movement);
  }
}

TEST(MeshSchedules, BarrierHoldsEveryRankUntilAllHaveStarted) {
  for (int n = 1; n <= 16; ++n) {
    MovementResult result;
    EXPECT_EQ(proveMovement(movementCase(Collective::Barrier, n, 0), &result), "") << "n=" << n;
    int rounds = 0;
    while ((1 << rounds) < n) ++rounds;
    EXPECT_EQ(result.messages, static_cast<size_t>(n * rounds)) << "n=" << n;  // one byte a round
    EXPECT_EQ(result.bytes, result.messages);
  }
}

// --- Past 64 ranks: the simulator follows causality as sets of any number of ranks
// (tools/sim/rank_set.h). 64 and 65 sit at the edge of one 64-bit word, 200 and 300 well past
// it. Small counts: every rank's arena is labelled byte by byte, and all-to-all's n^2 messages
// stop at 200 ranks (CI runs these under ASan too). ---

constexpr int kWideRanks[] = {64, 65, 200};

TEST(MeshSchedules, AllToAllIsExactPastSixtyFourRanks) {
  for (int n : kWideRanks) {
    for (size_t count : {size_t{1}, size_t{3}}) {
      if (n > 65 && count > 1) continue;
      const MovementCase movement = movementCase(Collective::AllToAll, n, count);
      MovementResult result;
      ASSERT_EQ(proveMovement(movement, &result), "") << label(movement);
      EXPECT_EQ(result.messages, static_cast<size_t>(n) * static_cast<size_t>(n - 1)) << label(movement);
    }
  }
}

TEST(MeshSchedules, AllToAllvIsExactPastSixtyFourRanks) {
  for (int n : kWideRanks) {
    const std::vector<VectorLayout> layouts = randomLayouts(n, 4242 + static_cast<uint64_t>(n), 2);
    MovementCase movement = movementCase(Collective::AllToAllv, n, 0, 0, false, 2);
    movement.layouts = &layouts;
    ASSERT_EQ(proveMovement(movement), "") << label(movement);
  }
}

TEST(MeshSchedules, GatherAndScatterAreExactPastSixtyFourRanks) {
  for (int n : {64, 65, 300}) {
    for (Collective collective : {Collective::Gather, Collective::Scatter}) {
      for (int root : {0, n - 1}) {
        for (bool inPlace : {false, true}) {
          const MovementCase movement = movementCase(collective, n, 5, root, inPlace);
          MovementResult result;
          ASSERT_EQ(proveMovement(movement, &result), "") << label(movement);
          EXPECT_EQ(result.messages, static_cast<size_t>(n - 1)) << label(movement);
        }
      }
    }
  }
}

// Around each power of two the barrier gains a round; every rank hears from all n.
TEST(MeshSchedules, BarrierHoldsEveryRankPastSixtyFourRanks) {
  for (int n : {64, 65, 127, 128, 129, 300, 512}) {
    MovementResult result;
    ASSERT_EQ(proveMovement(movementCase(Collective::Barrier, n, 0), &result), "") << "n=" << n;
    int rounds = 0;
    while ((1 << rounds) < n) ++rounds;
    EXPECT_EQ(result.messages, static_cast<size_t>(n * rounds)) << "n=" << n;
    for (int r = 0; r < n; ++r) ASSERT_EQ(result.heardFrom[r].count(), n) << "n=" << n << " rank " << r;
  }
}

// --- The checks have teeth: broken schedules are caught. ---

std::string simulationError(const std::vector<RankProgram>& programs) {
  try {
    simulateMovement(programs);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

int findStep(const Schedule& schedule, StepKind kind, int peer) {
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    if (schedule.steps[i].kind == kind && schedule.steps[i].peer == peer) return static_cast<int>(i);
  }
  return -1;
}

TEST(MovementSimulator, CatchesAMisroutedBlock) {
  MovementProblem problem = movementProblem(movementCase(Collective::AllToAll, 4, 3));
  std::vector<Step>& steps = problem.programs[1].schedule.steps;
  std::swap(steps[static_cast<size_t>(findStep(problem.programs[1].schedule, StepKind::Recv, 0))].dst,
            steps[static_cast<size_t>(findStep(problem.programs[1].schedule, StepKind::Recv, 2))].dst);
  const MovementResult result = simulateMovement(problem.programs);
  EXPECT_EQ(verifyPromise(problem.programs, problem.promise, result),
            "rank 1 recv byte 0 holds rank 2 send byte 12, expected rank 0 send byte 12");
}

TEST(MovementSimulator, CatchesAWriteIntoAGap) {
  // Rank 0 receives 2 elements from itself at 0 and 2 from rank 1 at 5: elements 2..4 are a gap.
  std::vector<VectorLayout> layouts(2);
  layouts[0] = VectorLayout{{2, 1}, {0, 2}, {2, 2}, {0, 5}};
  layouts[1] = VectorLayout{{2, 1}, {0, 2}, {1, 1}, {0, 1}};
  MovementCase movement = movementCase(Collective::AllToAllv, 2, 0, 0, false, 1);
  movement.layouts = &layouts;
  ASSERT_EQ(proveMovement(movement), "");
  MovementProblem problem = movementProblem(movement);
  Step& recv = problem.programs[0].schedule.steps[static_cast<size_t>(findStep(problem.programs[0].schedule, StepKind::Recv, 1))];
  recv.dst.offset = 3;  // into the gap
  const MovementResult result = simulateMovement(problem.programs);
  EXPECT_EQ(verifyPromise(problem.programs, problem.promise, result),
            "rank 0 recv byte 3 was written 1 time(s), outside what the operation may write");
}

TEST(MovementSimulator, CatchesATouchOfANonRootsNullBuffer) {
  MovementProblem problem = movementProblem(movementCase(Collective::Scatter, 3, 4, 0));
  problem.programs[1].schedule.steps.push_back(
      Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, 4}, Range{Buffer::Send, 0, 4}});
  EXPECT_NE(simulationError(problem.programs).find("touches send, which is NULL on this rank"), std::string::npos);
}

TEST(MovementSimulator, CatchesUnorderedStepsWritingTheSameBytes) {
  MovementProblem problem = movementProblem(movementCase(Collective::AllToAll, 3, 2));
  Schedule& schedule = problem.programs[0].schedule;
  schedule.steps[static_cast<size_t>(findStep(schedule, StepKind::Recv, 2))].dst =
      schedule.steps[static_cast<size_t>(findStep(schedule, StepKind::Recv, 1))].dst;
  EXPECT_NE(simulationError(problem.programs).find("may run at the same time as step"), std::string::npos);
}

TEST(MovementSimulator, CatchesAWriteIntoTheSendBuffer) {
  MovementProblem problem = movementProblem(movementCase(Collective::Gather, 3, 2, 1));
  Schedule& schedule = problem.programs[1].schedule;
  schedule.steps[static_cast<size_t>(findStep(schedule, StepKind::Recv, 2))].dst = Range{Buffer::Send, 0, 8};
  EXPECT_NE(simulationError(problem.programs).find("writes into the send buffer"), std::string::npos);
}

TEST(MovementSimulator, CatchesAMessageOfTheWrongSize) {
  MovementProblem problem = movementProblem(movementCase(Collective::AllToAll, 3, 2));
  Schedule& schedule = problem.programs[2].schedule;
  schedule.steps[static_cast<size_t>(findStep(schedule, StepKind::Send, 0))].src.bytes = 4;
  EXPECT_NE(simulationError(problem.programs).find("message of 4 bytes from rank 2 (its step"), std::string::npos);
}

TEST(MovementSimulator, CatchesADeadlock) {
  // Each rank sends only after it has received: neither ever sends.
  std::vector<RankProgram> programs(2);
  for (int r = 0; r < 2; ++r) {
    programs[r].buffers = {Region{true, 0, 4}, Region{true, 4, 4}, Region{}};
    programs[r].arenaBytes = 8;
    programs[r].schedule.steps.push_back(Step{StepKind::Recv, 1 - r, Range{Buffer::Recv, 0, 4}, {}});
    Step send{StepKind::Send, 1 - r, {}, Range{Buffer::Send, 0, 4}};
    send.dependsOn = 0;
    programs[r].schedule.steps.push_back(send);
  }
  EXPECT_EQ(simulationError(programs),
            "movement simulator: deadlock: steps that can never run: rank 0 step 0 (recv recv[0+4] from 1); "
            "rank 0 step 1 (send send[0+4] to 1); rank 1 step 0 (recv recv[0+4] from 0); "
            "rank 1 step 1 (send send[0+4] to 0)");
}

TEST(MovementSimulator, CatchesABarrierMissingItsLastRound) {
  for (int n : {2, 5, 16}) {
    MovementProblem problem = movementProblem(movementCase(Collective::Barrier, n, 0));
    for (RankProgram& program : problem.programs) program.schedule.steps.resize(program.schedule.steps.size() - 2);
    const std::string wrong = verifyBarrier(simulateMovement(problem.programs));
    EXPECT_NE(wrong.find("can finish before rank"), std::string::npos) << "n=" << n << ": " << wrong;
  }
}

// Without its last round (distance 128) a barrier of 130 leaves each rank r deaf to r+1 and
// r+2: rank 100 to ranks 101 and 102, past the first 64-bit word of ranks.
TEST(MovementSimulator, CatchesABarrierMissingItsLastRoundPastSixtyFourRanks) {
  MovementProblem problem = movementProblem(movementCase(Collective::Barrier, 130, 0));
  for (RankProgram& program : problem.programs) program.schedule.steps.resize(program.schedule.steps.size() - 2);
  const MovementResult result = simulateMovement(problem.programs);
  EXPECT_EQ(verifyBarrier(result),
            "barrier of 130 ranks: rank 0 can finish before rank 1 has started (it hears from 128 ranks)");
  const RankSet& heard = result.heardFrom[100];
  EXPECT_EQ(heard.count(), 128);
  EXPECT_FALSE(heard.test(101));
  EXPECT_FALSE(heard.test(102));
  EXPECT_TRUE(heard.test(103));
  EXPECT_TRUE(heard.test(129));
  EXPECT_EQ(heard.firstAbsent(130), 101);
}

// The barrier as first written: each round's receive waited for nothing, so a round's send
// carried only one chain of earlier messages. n = 8: rank 0 never hears of rank 3.
TEST(MovementSimulator, CatchesABarrierWhoseRoundsDoNotAccumulate) {
  MovementProblem problem = movementProblem(movementCase(Collective::Barrier, 8, 0));
  for (RankProgram& program : problem.programs) {
    for (Step& step : program.schedule.steps) {
      if (step.kind == StepKind::Recv) step.dependsOn = -1;
    }
  }
  EXPECT_EQ(verifyBarrier(simulateMovement(problem.programs)),
            "barrier of 8 ranks: rank 0 can finish before rank 3 has started (it hears from 7 ranks)");
}

}  // namespace
}  // namespace loom::algo
