// SPDX-License-Identifier: Apache-2.0
// StagedWrites (algorithms/staged_copies.h): which output bytes are final as a schedule's steps
// complete, the rule that lets a device buffer's output go back while the call still runs.
// For every kind of schedule, in and out of place, with the steps completed in random orders
// that respect their dependencies: every byte a step writes is reported final exactly once,
// only once no step left to run writes it, and nothing else is reported (the send buffer and
// the scratch buffer never are).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "algorithms/executor.h"
#include "algorithms/schedule.h"
#include "algorithms/staged_copies.h"

namespace loom::algo {
namespace {

// Records each report, checking it against the steps that have not completed yet.
class RecordingCopies final : public StagedCopies {
 public:
  RecordingCopies(const Schedule& schedule, const ExecutionBuffers& buffers, const std::vector<uint8_t>& done)
      : schedule_(schedule), buffers_(buffers), done_(done) {}
  void expect(const char*, size_t) override {}
  void startInput() override {}
  bool arrived(const char*, size_t) override { return true; }
  void finished(const char* begin, size_t bytes) override {
    ASSERT_GT(bytes, 0u);
    for (size_t i = 0; i < schedule_.steps.size(); ++i) {
      const Step& step = schedule_.steps[i];
      if (done_[i] || !writesStagedMemory(step)) continue;
      const char* dst = base(step.dst.buffer) + step.dst.offset;
      ASSERT_FALSE(dst < begin + bytes && begin < dst + step.dst.bytes)
          << "reported final while step " << i << " (" << describe(step) << ") still writes it";
    }
    reports.emplace_back(begin, bytes);
  }
  const char* base(Buffer buffer) const {
    switch (buffer) {
      case Buffer::Send: return static_cast<const char*>(buffers_.send);
      case Buffer::Recv: return static_cast<const char*>(buffers_.recv);
      case Buffer::Scratch: return static_cast<const char*>(buffers_.scratch);
      default: return (*buffers_.user)[userBufferIndex(buffer)].base;
    }
  }
  std::vector<std::pair<const char*, size_t>> reports;

 private:
  const Schedule& schedule_;
  const ExecutionBuffers& buffers_;
  const std::vector<uint8_t>& done_;
};

// Completes `schedule`'s steps in a random order that respects dependsOn and alsoDependsOn, and
// checks the reports against the bytes the steps write.
void checkSchedule(const Schedule& schedule, const ExecutionBuffers& buffers, unsigned seed, const std::string& what) {
  SCOPED_TRACE(what + ", seed " + std::to_string(seed));
  std::vector<uint8_t> done(schedule.steps.size(), 0);
  RecordingCopies copies(schedule, buffers, done);
  StagedWrites writes;
  writes.build(schedule, buffers);
  std::mt19937 random(seed);
  for (size_t completed = 0; completed < schedule.steps.size(); ++completed) {
    std::vector<int> ready;
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      const Step& step = schedule.steps[i];
      if (!done[i] && (step.dependsOn < 0 || done[step.dependsOn]) && (step.alsoDependsOn < 0 || done[step.alsoDependsOn])) {
        ready.push_back(static_cast<int>(i));
      }
    }
    ASSERT_FALSE(ready.empty());
    const int next = ready[random() % ready.size()];
    done[next] = 1;
    writes.done(schedule, next, buffers, copies);
    if (testing::Test::HasFatalFailure()) return;
  }
  // Every written byte reported exactly once; nothing else.
  std::vector<std::pair<const char*, const char*>> written, reported;
  for (const Step& step : schedule.steps) {
    if (!writesStagedMemory(step)) continue;
    const char* dst = copies.base(step.dst.buffer) + step.dst.offset;
    written.emplace_back(dst, dst + step.dst.bytes);
  }
  for (const auto& [begin, bytes] : copies.reports) reported.emplace_back(begin, begin + bytes);
  std::sort(reported.begin(), reported.end());
  for (size_t i = 1; i < reported.size(); ++i) {
    ASSERT_LE(reported[i - 1].second, reported[i].first) << "a byte reported twice";
  }
  const auto covered = [](const std::vector<std::pair<const char*, const char*>>& ranges, const char* byte) {
    return std::any_of(ranges.begin(), ranges.end(), [byte](const auto& r) { return r.first <= byte && byte < r.second; });
  };
  for (const auto& [begin, end] : written) {
    for (const char* byte = begin; byte < end; ++byte) ASSERT_TRUE(covered(reported, byte)) << "a written byte never reported";
  }
  for (const auto& [begin, end] : reported) {
    for (const char* byte = begin; byte < end; ++byte) ASSERT_TRUE(covered(written, byte)) << "an unwritten byte reported";
  }
}

struct Memory {
  std::vector<char> send, recv, scratch;
};

void checkCollective(Collective collective, int nranks, int rank, bool inPlace, bool deterministic, bool average) {
  CollectiveShape shape;
  shape.collective = collective;
  shape.rank = rank;
  shape.nranks = nranks;
  shape.count = 1003;
  shape.elementBytes = 4;
  shape.root = nranks - 1;
  shape.pieceBytes = 512;
  shape.deterministic = deterministic;
  shape.average = average;
  const Schedule schedule = buildSchedule(shape);
  Memory memory;
  memory.send.resize(schedule.reach[0] + 1);
  memory.recv.resize(std::max(schedule.reach[1], schedule.reach[0]) + 1);
  memory.scratch.resize(schedule.scratchBytes + 1);
  ExecutionBuffers buffers{memory.send.data(), memory.recv.data(), memory.scratch.data()};
  // In place: the send buffer is the recv buffer (all-gather: this rank's block of it).
  if (inPlace) buffers.send = collective == Collective::AllGather ? memory.recv.data() + rank * 1003 * 4 : memory.recv.data();
  for (unsigned seed = 0; seed < 4; ++seed) {
    checkSchedule(schedule, buffers, seed,
                  std::string(collectiveName(collective)) + " rank " + std::to_string(rank) + "/" + std::to_string(nranks) +
                      (inPlace ? " in place" : "") + (deterministic ? " deterministic" : "") + (average ? " avg" : ""));
  }
}

TEST(StagedWrites, RingAndChainCollectives) {
  for (Collective collective : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                Collective::Broadcast, Collective::Reduce, Collective::AllToAll, Collective::Gather,
                                Collective::Scatter}) {
    for (int nranks : {1, 2, 3, 4}) {
      for (int rank = 0; rank < nranks; ++rank) {
        for (bool inPlace : {false, true}) {
          if (inPlace && (collective == Collective::AllToAll || collective == Collective::Gather ||
                          collective == Collective::Scatter || collective == Collective::ReduceScatter)) {
            continue;
          }
          checkCollective(collective, nranks, rank, inPlace, false, false);
        }
      }
    }
  }
}

TEST(StagedWrites, DeterministicAndAverage) {
  for (Collective collective : {Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce}) {
    for (int nranks : {2, 3}) {
      for (int rank = 0; rank < nranks; ++rank) {
        checkCollective(collective, nranks, rank, false, true, false);
        checkCollective(collective, nranks, rank, true, true, true);
        checkCollective(collective, nranks, rank, false, false, true);
      }
    }
  }
}

TEST(StagedWrites, PointToPointBatch) {
  // Rank 1 of 3: sends to 0 and 2, receives from both, and a message to itself.
  const std::vector<PeerOperation> operations = {
      {true, 0, 700, 1}, {false, 2, 300, 1}, {true, 1, 64, 1}, {false, 1, 64, 1}, {false, 0, 5000, 1}, {true, 2, 9, 1}};
  const Schedule schedule = pointToPointBatch(1, operations);
  std::vector<std::vector<char>> memory;
  std::vector<UserBuffer> user;
  for (const PeerOperation& operation : operations) memory.emplace_back(operation.bytes + 1);
  for (size_t k = 0; k < operations.size(); ++k) user.push_back(UserBuffer{memory[k].data(), operations[k].bytes});
  ExecutionBuffers buffers;
  buffers.user = &user;
  for (unsigned seed = 0; seed < 8; ++seed) checkSchedule(schedule, buffers, seed, "batch");
}

}  // namespace
}  // namespace loom::algo
