// SPDX-License-Identifier: Apache-2.0
// Finding 8 (second half) of issue 14: non-blocking initialisation, as NCCL has it.
//
// Before the fix `config.blocking = 0` still blocked inside loomCommInitRankConfig until every
// rank had arrived. What must hold: with blocking = 0 the call returns loomInProgress at once
// with a handle; loomCommGetAsyncError reports loomInProgress until the communicator is ready
// (then loomSuccess) or init failed (then the error); calls on it before then are refused
// (loomInvalidUsage) without harm; and loomCommAbort ends it at any point, promptly.
#include <gtest/gtest.h>
#include <loom.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/support/multiprocess.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::test::runRanksWithUniqueId;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Shared between forked ranks: rank 1 starts its init only after rank 0's non-blocking init
// has returned, so a blocking init on rank 0 would wait for a rank that never comes (the
// watchdog ends the unfixed case).
struct Flags {
  std::atomic<int> rank0Returned{0};
};

loomResult_t pollUntilDone(loomComm_t comm, double limitSeconds) {
  const auto start = Clock::now();
  loomResult_t state = loomInProgress;
  while (secondsSince(start) < limitSeconds) {
    LOOM_REQUIRE(loomCommGetAsyncError(comm, &state) == loomSuccess, loomGetLastError(comm));
    if (state != loomInProgress) return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

TEST(NonBlockingInit, ReturnsInProgressAtOnceThenBecomesReady) {
  loom::test::SharedAcrossFork<Flags> flags;
  auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.timeoutMs = 20000;
    loomComm_t comm = nullptr;
    if (rank == 1) {
      while (flags->rank0Returned.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto start = Clock::now();
    const loomResult_t code = loomCommInitRankConfig(&comm, 2, id, rank, &config);
    const double took = secondsSince(start);
    LOOM_REQUIRE(code == loomInProgress || code == loomSuccess,
                 std::string("init returned ") + loomGetErrorString(code) + ": " + loomGetLastError(nullptr));
    LOOM_REQUIRE(comm != nullptr, "no handle");
    if (rank == 0) {
      LOOM_REQUIRE(code == loomInProgress, "rank 0 cannot be ready before rank 1 started");
      LOOM_REQUIRE(took < 0.5, "non-blocking init took " + std::to_string(took) + " s to return");
      // Not ready (rank 1 has not started): a collective is refused, and that does not spoil
      // the init.
      int32_t in = 1, out = -1;
      const loomResult_t early = loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, nullptr);
      LOOM_REQUIRE(early == loomInvalidUsage, std::string("early call: ") + loomGetErrorString(early));
      LOOM_REQUIRE(std::string(loomGetLastError(comm)).find("initiali") != std::string::npos,
                   std::string("early call's message: ") + loomGetLastError(comm));
      LOOM_REQUIRE(out == -1, "a refused call wrote its output");
      flags->rank0Returned.store(1);
    }
    LOOM_REQUIRE(pollUntilDone(comm, 20.0) == loomSuccess, std::string("init did not complete: ") + loomGetLastError(comm));
    const int32_t in = rank + 10;
    int32_t out = -1;
    LOOM_REQUIRE(loomAllReduce(&in, &out, 1, loomInt32, loomSum, comm, nullptr) == loomSuccess, loomGetLastError(comm));
    LOOM_REQUIRE(out == 21, "all-reduce after non-blocking init: " + std::to_string(out));
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 60);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// The peer never comes: loomCommAbort ends the init at once, whatever it is doing, and a
// second rank-0 init with the same settings can follow.
TEST(NonBlockingInit, AbortEndsAnInitThatCannotComplete) {
  auto outcomes = runRanksWithUniqueId(1, [&](int, const loomUniqueId&) {
    for (int delayMs : {0, 1, 20, 200}) {
      loomUniqueId id;  // a fresh job each time: the last one's root has seen a rank 0 already
      LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
      loomConfig_t config = LOOM_CONFIG_INITIALIZER;
      config.blocking = 0;
      config.timeoutMs = 600000;  // only the abort can end it in time
      loomComm_t comm = nullptr;
      const loomResult_t code = loomCommInitRankConfig(&comm, 2, id, 0, &config);  // rank 1 never comes
      LOOM_REQUIRE(code == loomInProgress, std::string("init returned ") + loomGetErrorString(code) + ": " +
                                               loomGetLastError(nullptr));
      std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
      loomResult_t state = loomSuccess;
      LOOM_REQUIRE(loomCommGetAsyncError(comm, &state) == loomSuccess && state == loomInProgress,
                   "a communicator whose peer never came is not ready");
      const auto start = Clock::now();
      LOOM_REQUIRE(loomCommAbort(comm) == loomSuccess, loomGetLastError(nullptr));
      const double took = secondsSince(start);
      LOOM_REQUIRE(took < 1.0, "abort of a pending init took " + std::to_string(took) + " s");
      LOOM_REQUIRE(loomCommGetAsyncError(comm, &state) == loomInvalidArgument, "the aborted handle is still live");
    }
  }, 60);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

// An init that fails reports the failure through loomCommGetAsyncError, and destroy frees it.
TEST(NonBlockingInit, AFailedInitIsReportedByGetAsyncError) {
  auto outcomes = runRanksWithUniqueId(1, [&](int, const loomUniqueId& id) {
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.timeoutMs = 300;  // rank 1 never comes: the rendezvous times out
    loomComm_t comm = nullptr;
    const loomResult_t code = loomCommInitRankConfig(&comm, 2, id, 0, &config);
    LOOM_REQUIRE(code == loomInProgress, std::string("init returned ") + loomGetErrorString(code));
    const loomResult_t state = pollUntilDone(comm, 10.0);
    LOOM_REQUIRE(state != loomInProgress && state != loomSuccess,
                 std::string("a timed-out init reported ") + loomGetErrorString(state));
    const std::string message = loomGetLastError(comm);
    LOOM_REQUIRE(message.find("rank") != std::string::npos, "the init error does not say what failed: " + message);
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 60);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].describe();
}

}  // namespace
