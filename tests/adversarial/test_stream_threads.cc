// SPDX-License-Identifier: Apache-2.0
// Finding 1 of issue 14: two threads enqueueing on one stream must not deadlock it.
//
// Before the fix a call took the communicator's turn number and only then was queued on the
// stream, so a later turn could land in the FIFO ahead of an earlier one: the stream thread
// then waited for a turn that sat behind it in its own queue, for the whole LOOM_TIMEOUT_MS,
// and every call behind that one waited a full timeout too. What must hold: taking the turn
// and queueing are one step, so the FIFO order is the turn order; each call either completes
// or is refused at once (loomInvalidUsage, two threads inside an issuing call at the same
// instant: finding 2), and the stream drains.
//
// Each run happens in a forked child with a watchdog, so the unfixed code fails the test in
// seconds instead of hanging it for 1,000 timeouts.
#include <gtest/gtest.h>
#include <loom.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/call_order.h"
#include "tests/support/multiprocess.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::test::runProcesses;

constexpr int kCallsPerThread = 1000;
constexpr int kThreads = 2;
constexpr int kTimeoutMs = 3000;     // a turn wait that deadlocks ends here (unfixed code)
constexpr double kAtOnceSeconds = 0.5;  // "returns at once": far below any timeout

loomComm_t oneRankComm() {
  loomComm_t comm = nullptr;
  loomUniqueId id;
  LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = kTimeoutMs;
  LOOM_REQUIRE(loomCommInitRankConfig(&comm, 1, id, 0, &config) == loomSuccess, loomGetLastError(nullptr));
  return comm;
}

// Two threads x 1,000 out-of-place all-reduces of one int32 each, on one communicator and one
// stream. Every call writes its own output slot, so after the stream drains a slot holds its
// input exactly when its call was accepted.
void twoThreadsOneStream(int rounds) {
  loomComm_t comm = oneRankComm();
  loomStream_t stream = nullptr;
  LOOM_REQUIRE(loomStreamCreate(&stream) == loomSuccess, loomGetLastError(nullptr));
  for (int round = 0; round < rounds; ++round) {
    std::vector<int32_t> input(kThreads * kCallsPerThread), output(input.size(), -1);
    std::vector<loomResult_t> codes(input.size(), loomInternalError);
    std::vector<std::string> refusals(kThreads);
    std::atomic<double> slowest{0.0};
    std::atomic<int> go{0};
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int32_t>(i * 7 + round);
    auto issuer = [&](int thread) {
      go.fetch_add(1);
      while (go.load() < kThreads) {
      }
      for (int k = 0; k < kCallsPerThread; ++k) {
        const size_t slot = static_cast<size_t>(thread) * kCallsPerThread + k;
        const auto start = Clock::now();
        codes[slot] = loomAllReduce(&input[slot], &output[slot], 1, loomInt32, loomSum, comm, stream);
        const double took = std::chrono::duration<double>(Clock::now() - start).count();
        double seen = slowest.load();
        while (took > seen && !slowest.compare_exchange_weak(seen, took)) {
        }
        if (codes[slot] == loomInvalidUsage && refusals[thread].empty()) refusals[thread] = loomGetLastError(comm);
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(issuer, t);
    for (auto& thread : threads) thread.join();

    const auto drainStart = Clock::now();
    const loomResult_t drained = loomStreamSynchronize(stream);
    const double drainSeconds = std::chrono::duration<double>(Clock::now() - drainStart).count();
    LOOM_REQUIRE(drained == loomSuccess, std::string("the stream did not drain cleanly: ") + loomGetLastError(comm));
    LOOM_REQUIRE(drainSeconds < 2.0, "draining took " + std::to_string(drainSeconds) + " s");
    LOOM_REQUIRE(slowest.load() < kAtOnceSeconds,
                 "an enqueue took " + std::to_string(slowest.load()) + " s: it waited instead of returning at once");
    int accepted = 0;
    for (size_t i = 0; i < input.size(); ++i) {
      LOOM_REQUIRE(codes[i] == loomSuccess || codes[i] == loomInvalidUsage,
                   "call " + std::to_string(i) + " returned " + loomGetErrorString(codes[i]));
      if (codes[i] == loomSuccess) {
        ++accepted;
        LOOM_REQUIRE(output[i] == input[i], "accepted call " + std::to_string(i) + " produced " +
                                                std::to_string(output[i]) + ", expected " + std::to_string(input[i]));
      } else {
        LOOM_REQUIRE(output[i] == -1, "refused call " + std::to_string(i) + " ran anyway");
      }
    }
    for (const std::string& refusal : refusals) {
      if (!refusal.empty()) {
        LOOM_REQUIRE(refusal.find("concurrent") != std::string::npos, "refusal does not say why: " + refusal);
      }
    }
    LOOM_REQUIRE(accepted > 0, "every call was refused");
    loomResult_t async = loomSuccess;
    LOOM_REQUIRE(loomCommGetAsyncError(comm, &async) == loomSuccess && async == loomSuccess,
                 std::string("the communicator recorded an error: ") + loomGetLastError(comm));
  }
  LOOM_REQUIRE(loomStreamDestroy(stream) == loomSuccess, loomGetLastError(nullptr));
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
}

TEST(StreamThreads, TwoThreadsOnOneStreamNeverWaitForATimeout) {
  // 100 rounds of 2 x 1,000 calls: the unfixed code's window (between taking the turn and
  // queueing) is a few hundred nanoseconds, so a round deadlocks only now and then; the
  // watchdog ends it. The fixed code finishes all rounds in a few seconds.
  auto outcomes = runProcesses(1, [](int) { twoThreadsOneStream(100); }, 60);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

// The turn itself: when a call's wait for its turn fails (the call before it never ends its
// turn within the timeout), every call queued behind it fails at once with the same error,
// instead of each waiting a full timeout for a turn that will never come.
TEST(StreamThreads, AFailedTurnWaitFailsEveryCallBehindItAtOnce) {
  loom::CallOrder order;
  std::atomic<bool> stop{false};
  const uint64_t stuck = order.takeTicket();  // taken and never run: its turn never ends
  (void)stuck;
  ASSERT_TRUE(order.waitForTurn(0, 1000, stop));  // ticket 0's own turn has come
  const uint64_t first = order.takeTicket();
  const auto start = Clock::now();
  EXPECT_FALSE(order.waitForTurn(first, 300, stop));
  const double firstWait = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(firstWait, 0.25);
  for (int k = 0; k < 5; ++k) {
    const uint64_t behind = order.takeTicket();
    const auto behindStart = Clock::now();
    EXPECT_FALSE(order.waitForTurn(behind, 2000, stop)) << "ticket " << behind << " got a turn";
    const double waited = std::chrono::duration<double>(Clock::now() - behindStart).count();
    EXPECT_LT(waited, 0.1) << "ticket " << behind << " waited " << waited << " s for a turn that cannot come";
  }
}

}  // namespace
