// SPDX-License-Identifier: Apache-2.0
// Point-to-point batches (pointToPointBatch, issue 15), proven with the provenance simulator
// for n = 1..16: random valid programs (self sends and receives, zero-byte operations, any
// interleaving that keeps each pair's order) and the all-pairs exchange where every rank sends
// to all before it receives. Each receive ends holding exactly the bytes of its matching send,
// no send buffer is written, nothing deadlocks when every message is a rendezvous, and a
// mismatched or missing partner is an error the simulator reports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "base/error.h"
#include "tools/sim/peer_batches.h"
#include "tools/sim/random_programs.h"

namespace loom::algo {
namespace {

std::string simulationError(const BatchProgram& batch) {
  try {
    simulateMovement(batchPrograms(batch));
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// Messages between different ranks (a send to oneself is a local copy, not a message).
size_t crossRankMessages(const BatchProgram& batch, size_t* bytes) {
  size_t messages = 0;
  *bytes = 0;
  for (size_t r = 0; r < batch.size(); ++r) {
    for (const PeerOperation& operation : batch[r]) {
      if (!operation.send || operation.peer == static_cast<int>(r) || operation.bytes == 0) continue;
      ++messages;
      *bytes += operation.bytes;
    }
  }
  return messages;
}

TEST(PeerBatches, RandomBatchesDeliverEveryMessageExactly) {
  for (int n = 1; n <= 16; ++n) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const BatchProgram batch = randomBatch(n, seed * 100 + static_cast<uint64_t>(n));
      MovementResult result;
      ASSERT_EQ(proveBatch(batch, &result), "") << "n=" << n << " seed " << seed;
      size_t bytes = 0;
      EXPECT_EQ(result.messages, crossRankMessages(batch, &bytes)) << "n=" << n << " seed " << seed;
      EXPECT_EQ(result.bytes, bytes) << "n=" << n << " seed " << seed;
    }
  }
}

TEST(PeerBatches, EveryRankSendingToAllBeforeReceivingCompletes) {
  for (int n = 1; n <= 16; ++n) {
    for (size_t bytes : {0, 1, 7, 64}) {
      const BatchProgram batch = allPairsBatch(n, bytes);
      MovementResult result;
      ASSERT_EQ(proveBatch(batch, &result), "") << "n=" << n << " bytes " << bytes;
      EXPECT_EQ(result.messages, bytes == 0 ? 0u : static_cast<size_t>(n * (n - 1))) << "n=" << n;
    }
  }
}

// Past 64 ranks (tools/sim/rank_set.h): 64 and 65 at the edge of one 64-bit word of ranks, 200
// well past it, where every rank sends to all before receiving (n^2 messages); random batches
// up to 130.
TEST(PeerBatches, EveryRankSendingToAllCompletesPastSixtyFourRanks) {
  for (int n : {64, 65, 200}) {
    const BatchProgram batch = allPairsBatch(n, 3);
    MovementResult result;
    ASSERT_EQ(proveBatch(batch, &result), "") << "n=" << n;
    EXPECT_EQ(result.messages, static_cast<size_t>(n) * static_cast<size_t>(n - 1)) << "n=" << n;
    EXPECT_EQ(result.bytes, result.messages * 3) << "n=" << n;
  }
}

TEST(PeerBatches, RandomBatchesDeliverEveryMessagePastSixtyFourRanks) {
  for (int n : {64, 65, 130}) {
    const BatchProgram batch = randomBatch(n, 100 + static_cast<uint64_t>(n));
    MovementResult result;
    ASSERT_EQ(proveBatch(batch, &result), "") << "n=" << n;
    size_t bytes = 0;
    EXPECT_EQ(result.messages, crossRankMessages(batch, &bytes)) << "n=" << n;
    EXPECT_EQ(result.bytes, bytes) << "n=" << n;
  }
}

// Both ranks receive before they send, in issue order: the lanes run at once, so no deadlock.
TEST(PeerBatches, ReceivingFirstOnBothSidesCompletes) {
  BatchProgram batch(2);
  for (int r = 0; r < 2; ++r) {
    batch[r] = {PeerOperation{false, 1 - r, 8, 0}, PeerOperation{false, 1 - r, 3, 0},
                PeerOperation{true, 1 - r, 8, 0}, PeerOperation{true, 1 - r, 3, 0}};
  }
  numberMessages(batch);
  EXPECT_EQ(proveBatch(batch), "");
}

// Every field of every step, as text: two schedules are the same plan when these are equal.
std::string describeSteps(const Schedule& schedule) {
  std::string text;
  auto range = [](const Range& r) {
    return std::to_string(static_cast<int>(r.buffer)) + ":" + std::to_string(r.offset) + "+" + std::to_string(r.bytes);
  };
  for (const Step& step : schedule.steps) {
    text += std::to_string(static_cast<int>(step.kind)) + " peer " + std::to_string(step.peer) + " dst " +
            range(step.dst) + " src " + range(step.src) + " after " + std::to_string(step.dependsOn) + "," +
            std::to_string(step.alsoDependsOn) + " message " + std::to_string(step.message) + "\n";
  }
  return text + "reach " + std::to_string(schedule.reach[0]) + "," + std::to_string(schedule.reach[1]) + "," +
         std::to_string(schedule.reach[2]);
}

// A rank repeating an exchange keeps its schedule and only renumbers it (core/peer_ops.cc):
// that must give exactly the schedule a fresh build gives, with self copies and zero-byte
// operations in the batch; and any change of direction, peer, size or length is a new shape.
TEST(PeerBatches, ARenumberedScheduleIsTheFreshBuild) {
  const int rank = 1;
  std::vector<PeerOperation> first = {
      PeerOperation{true, 2, 8, 1},  PeerOperation{false, 0, 8, 1}, PeerOperation{true, 1, 4, 0},
      PeerOperation{true, 3, 0, 0},  PeerOperation{false, 1, 4, 0}, PeerOperation{true, 2, 100, 2},
      PeerOperation{false, 3, 7, 1}, PeerOperation{false, 0, 1, 2}};
  std::vector<PeerOperation> again = first;
  for (PeerOperation& operation : again) {
    if (operation.bytes > 0 && operation.peer != rank) operation.message += 40;  // a later repetition
  }
  Schedule kept = pointToPointBatch(rank, first);
  ASSERT_TRUE(samePointToPointShape(first, again));
  renumberPointToPointBatch(rank, again, kept);
  EXPECT_EQ(describeSteps(kept), describeSteps(pointToPointBatch(rank, again)));
  EXPECT_NE(describeSteps(kept), describeSteps(pointToPointBatch(rank, first)));  // the numbers did change

  auto changed = [&](auto edit) {
    std::vector<PeerOperation> other = first;
    edit(other);
    return !samePointToPointShape(first, other);
  };
  EXPECT_TRUE(changed([](auto& ops) { ops[0].send = false; }));
  EXPECT_TRUE(changed([](auto& ops) { ops[1].peer = 3; }));
  EXPECT_TRUE(changed([](auto& ops) { ops[3].bytes = 1; }));  // a zero-byte operation starts moving bytes
  EXPECT_TRUE(changed([](auto& ops) { ops.pop_back(); }));
  EXPECT_TRUE(changed([](auto& ops) { std::swap(ops[0], ops[5]); }));  // same sizes in another order
  EXPECT_FALSE(changed([](auto& ops) { ops[0].message = 99; }));
}

TEST(PeerBatches, SelfSendsAreLocalCopiesMatchedInOrder) {
  BatchProgram batch(1);
  batch[0] = {PeerOperation{true, 0, 1, 0}, PeerOperation{false, 0, 1, 0}, PeerOperation{true, 0, 5, 0},
              PeerOperation{true, 0, 9, 0}, PeerOperation{false, 0, 5, 0}, PeerOperation{false, 0, 9, 0}};
  numberMessages(batch);
  ASSERT_EQ(proveBatch(batch), "");
  const Schedule schedule = pointToPointBatch(0, batch[0]);
  ASSERT_EQ(schedule.steps.size(), 3u);
  for (const Step& step : schedule.steps) EXPECT_EQ(step.kind, StepKind::Copy);
}

TEST(PeerBatches, ZeroByteOperationsAreNoSteps) {
  BatchProgram batch(3);
  for (int r = 0; r < 3; ++r) {
    for (int peer = 0; peer < 3; ++peer) {
      batch[r].push_back(PeerOperation{true, peer, 0, 0});
      batch[r].push_back(PeerOperation{false, peer, 0, 0});
    }
  }
  numberMessages(batch);
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(pointToPointBatch(r, batch[r]).steps.empty());
  EXPECT_EQ(proveBatch(batch), "");
}

TEST(PeerBatches, MismatchedSizesAreAnError) {
  BatchProgram batch(2);
  batch[0] = {PeerOperation{true, 1, 8, 1}};
  batch[1] = {PeerOperation{false, 0, 7, 1}};
  EXPECT_EQ(simulationError(batch),
            "movement simulator: rank 1 step 0 (recv op0[0+7] from 0): message of 8 bytes from rank 0 (its "
            "step 0) does not match the receive's size");
  EXPECT_THROW(batchPromise(batch, batchPrograms(batch)), Error);
}

TEST(PeerBatches, ASendWithoutReceiveIsADeadlock) {
  BatchProgram batch(2);
  batch[0] = {PeerOperation{true, 1, 8, 0}, PeerOperation{true, 1, 8, 0}};
  batch[1] = {PeerOperation{false, 0, 8, 0}};
  numberMessages(batch);
  EXPECT_EQ(simulationError(batch),
            "movement simulator: deadlock: steps that can never run: rank 0 step 1 (send op1[0+8] to 1)");
}

TEST(PeerBatches, MisnumberedMessagesAreAnError) {
  BatchProgram batch(2);
  batch[0] = {PeerOperation{true, 1, 8, 1}};
  batch[1] = {PeerOperation{false, 0, 8, 2}};
  EXPECT_NE(simulationError(batch).find("message tagged 1 by rank 0 (its step 0) meets a receive tagged 2"),
            std::string::npos);
}

TEST(PeerBatches, ASelfSendOfAnotherSizeIsRefused) {
  const std::vector<PeerOperation> operations = {PeerOperation{true, 2, 8, 1}, PeerOperation{false, 2, 4, 1}};
  try {
    pointToPointBatch(2, operations);
    FAIL() << "a self send of 8 bytes met a receive of 4";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomInvalidUsage);
  }
}

// The promise checker catches a receive landing in its neighbour's buffer.
TEST(PeerBatches, CatchesSwappedDeliveries) {
  BatchProgram batch(2);
  batch[0] = {PeerOperation{true, 1, 8, 0}, PeerOperation{true, 1, 8, 0}};
  batch[1] = {PeerOperation{false, 0, 8, 0}, PeerOperation{false, 0, 8, 0}};
  numberMessages(batch);
  std::vector<RankProgram> programs = batchPrograms(batch);
  const Promise promise = batchPromise(batch, programs);
  std::vector<Step>& steps = programs[1].schedule.steps;
  std::swap(steps[0].dst, steps[1].dst);
  EXPECT_EQ(verifyPromise(programs, promise, simulateMovement(programs)),
            "rank 1 op0 byte 0 holds rank 0 op1 byte 0, expected rank 0 op0 byte 0");
}

}  // namespace
}  // namespace loom::algo
