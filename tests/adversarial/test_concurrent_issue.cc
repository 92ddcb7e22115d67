// SPDX-License-Identifier: Apache-2.0
// Finding 2 of issue 14: two threads issuing on one communicator without an order of their own.
//
// Calls pair across ranks in the order in which they enter Loom on each rank. Two threads that
// race to issue on one communicator therefore get a rank-dependent pairing (NCCL forbids the
// use outright), and before the fix Loom said nothing: up to half the calls of a run were
// silently paired with the wrong partner. What must hold: two threads *inside* an issuing call
// on one communicator at the same instant is concurrent issue, and the later one returns
// loomInvalidUsage naming the communicator; the refused call is not queued; the communicator
// and the stream stay usable. Issuing from another thread while earlier calls are still
// pending (tests/unit/test_call_order.cc) stays legal, and so does a properly ordered
// hand-off between threads, whose pairing across ranks is exact (second test).
#include <gtest/gtest.h>
#include <loom.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/multiprocess.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::test::runProcesses;
using loom::test::runRanksWithUniqueId;

// Two threads issue on one communicator until at least one overlap has been seen (or a cap of
// 400,000 calls is reached). Each call writes its own output slot on a stream, so a refused
// call that ran anyway, or an accepted one that did not run, shows in the slot.
void raceUntilRefused() {
  loomComm_t comm = nullptr;
  loomUniqueId id;
  LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 5000;
  config.commName = "racy-comm";
  LOOM_REQUIRE(loomCommInitRankConfig(&comm, 1, id, 0, &config) == loomSuccess, loomGetLastError(nullptr));
  loomStream_t stream = nullptr;
  LOOM_REQUIRE(loomStreamCreate(&stream) == loomSuccess, loomGetLastError(nullptr));

  constexpr int kBatch = 20000;  // calls per thread per batch
  constexpr int kMaxBatches = 10;
  int refused = 0;
  std::string refusal;
  for (int batch = 0; batch < kMaxBatches && refused == 0; ++batch) {
    std::vector<int32_t> input(2 * kBatch), output(2 * kBatch, -1);
    std::vector<loomResult_t> codes(2 * kBatch, loomInternalError);
    std::string messages[2];
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int32_t>(i + batch);
    std::atomic<int> ready{0};
    auto issuer = [&](int thread) {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      for (int k = 0; k < kBatch; ++k) {
        const size_t slot = static_cast<size_t>(thread) * kBatch + k;
        codes[slot] = loomAllReduce(&input[slot], &output[slot], 1, loomInt32, loomSum, comm, stream);
        if (codes[slot] == loomInvalidUsage && messages[thread].empty()) messages[thread] = loomGetLastError(comm);
      }
    };
    std::thread other(issuer, 1);
    issuer(0);
    other.join();
    LOOM_REQUIRE(loomStreamSynchronize(stream) == loomSuccess, loomGetLastError(comm));
    for (size_t i = 0; i < input.size(); ++i) {
      LOOM_REQUIRE(codes[i] == loomSuccess || codes[i] == loomInvalidUsage,
                   "call " + std::to_string(i) + " returned " + loomGetErrorString(codes[i]));
      if (codes[i] == loomSuccess) {
        LOOM_REQUIRE(output[i] == input[i], "accepted call " + std::to_string(i) + " did not run");
      } else {
        ++refused;
        LOOM_REQUIRE(output[i] == -1, "refused call " + std::to_string(i) + " ran anyway");
      }
    }
    for (const std::string& message : messages) {
      if (!message.empty() && refusal.empty()) refusal = message;
    }
  }
  std::printf("refused %d calls as concurrent issue\n", refused);
  LOOM_REQUIRE(refused > 0, "two threads issued 400,000 calls on one communicator and no overlap was reported");
  LOOM_REQUIRE(refusal.find("racy-comm") != std::string::npos, "the refusal does not name the communicator: " + refusal);
  LOOM_REQUIRE(refusal.find("concurrent") != std::string::npos, "the refusal does not say why: " + refusal);

  // Still usable, on the stream and on the NULL stream.
  int32_t one = 5, out = 0;
  LOOM_REQUIRE(loomAllReduce(&one, &out, 1, loomInt32, loomSum, comm, stream) == loomSuccess, loomGetLastError(comm));
  LOOM_REQUIRE(loomStreamSynchronize(stream) == loomSuccess && out == 5, loomGetLastError(comm));
  LOOM_REQUIRE(loomAllReduce(&one, &out, 1, loomInt32, loomProd, comm, nullptr) == loomSuccess, loomGetLastError(comm));
  loomResult_t async = loomSuccess;
  LOOM_REQUIRE(loomCommGetAsyncError(comm, &async) == loomSuccess && async == loomSuccess, "an error was recorded");
  LOOM_REQUIRE(loomStreamDestroy(stream) == loomSuccess, loomGetLastError(nullptr));
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
}

TEST(ConcurrentIssue, OverlappingIssueIsRefusedAndNothingOfItRuns) {
  auto outcomes = runProcesses(1, [](int) { raceUntilRefused(); }, 120);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

// The legal form: two threads per rank hand the communicator to each other in a fixed order
// (A, B, A, B, ...), so every rank issues the same sequence and every result is exact.
TEST(ConcurrentIssue, AnOrderedHandOffBetweenThreadsPairsExactly) {
  constexpr int kRounds = 300;
  auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess, loomGetLastError(nullptr));
    std::mutex mutex;
    std::condition_variable changed;
    int next = 0;  // whose call is next: the call number; thread (call % 2) issues it
    auto worker = [&](int thread) {
      for (int call = thread; call < 2 * kRounds; call += 2) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return next == call; });
        lock.unlock();
        // Each call's input names the call: the sum is 3 * call + rank-independent offset.
        const int32_t in = call * (rank + 1);
        int32_t out = -1;
        LOOM_REQUIRE(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, nullptr) == loomSuccess,
                     loomGetLastError(comm));
        LOOM_REQUIRE(out == 3 * call, "call " + std::to_string(call) + " was paired with another: got " +
                                          std::to_string(out));
        lock.lock();
        ++next;
        changed.notify_all();
      }
    };
    std::thread other(worker, 1);
    worker(0);
    other.join();
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 120);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace
