// SPDX-License-Identifier: Apache-2.0
// Ranks that disagree on settings fail together at init, promptly, with a message naming the
// setting — instead of some ranks going on to wait for the others until the timeout.
#include <gtest/gtest.h>
#include <loom.h>
#include <stdlib.h>

#include <chrono>
#include <string>

#include "tests/support/multiprocess.h"
#include "tests/support/stderr_capture.h"

namespace {


// Rank 1 sets `variable` to `value`; everyone else keeps the default.
void expectEveryRankFails(const char* variable, const char* value, loomResult_t expectedOnRank1,
                          const std::string& mention) {
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = loom::test::runRanksWithUniqueId(3, [&](int rank, const loomUniqueId& id) {
    if (rank == 1) setenv(variable, value, 1);
    setenv("LOOM_TRANSPORT", "shm", 1);
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.timeoutMs = 60000;
    loomComm_t comm = nullptr;
    loomResult_t result = loomCommInitRankConfig(&comm, 3, id, rank, &config);
    LOOM_REQUIRE(result != loomSuccess, "rank " + std::to_string(rank) + " initialised anyway");
    LOOM_REQUIRE(comm == nullptr, "comm must stay NULL on failure");
    const std::string message = loomGetLastError(nullptr);
    if (rank == 1) {
      LOOM_REQUIRE(result == expectedOnRank1, "unexpected code " + std::to_string(result) + ": " + message);
      LOOM_REQUIRE(message.find(mention) != std::string::npos, "message lacks '" + mention + "': " + message);
    }
  }, 60);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
  EXPECT_LT(seconds, 30.0) << "ranks waited for the timeout instead of failing together";
}

TEST(InitErrors, PieceSizeMismatchFailsEveryRank) {
  expectEveryRankFails("LOOM_PIECE_BYTES", "4096", loomInvalidUsage, "LOOM_PIECE_BYTES");
}

TEST(InitErrors, ShmGeometryMismatchFailsEveryRank) {
  expectEveryRankFails("LOOM_SHM_SLOTS", "4", loomInvalidUsage, "geometry");
}

TEST(InitErrors, MalformedSettingFailsAtOnceAndTheOthersTimeOut) {
  // The bad rank never reaches the rendezvous, so the others can only time out: they must,
  // within their timeout, with a system error.
  auto outcomes = loom::test::runRanksWithUniqueId(3, [&](int rank, const loomUniqueId& id) {
    if (rank == 1) setenv("LOOM_TIMEOUT_MS", "soon", 1);
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.timeoutMs = 2000;
    loomComm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    loomResult_t result = loomCommInitRankConfig(&comm, 3, id, rank, &config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = loomGetLastError(nullptr);
    if (rank == 1) {
      LOOM_REQUIRE(result == loomInvalidArgument, message);
      LOOM_REQUIRE(message.find("LOOM_TIMEOUT_MS") != std::string::npos, message);
      LOOM_REQUIRE(seconds < 1.0, "the bad setting was not rejected at once");
    } else {
      // Timed out, or saw the root's process (rank 0's) end after its own timeout.
      LOOM_REQUIRE(result == loomSystemError || result == loomRemoteError,
                   "code " + std::to_string(result) + ": " + message);
      LOOM_REQUIRE(seconds < 10.0, "waited " + std::to_string(seconds) + " s with a 2 s timeout");
    }
  }, 60);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace

// Rank 2 never comes. Ranks 0 and 1 wait 1.5 s and 4 s: the root gives up just before rank 0
// would, and tells both who arrived and who did not; meanwhile it says so every
// LOOM_INIT_REPORT_MS in a WARN line (printed whatever LOOM_DEBUG says).
TEST(InitErrors, TheTimeoutNamesTheRanksThatArrivedAndThoseMissing) {
  setenv("LOOM_INIT_REPORT_MS", "200", 1);  // read by the root server, in rank 0's process
  std::string log;
  std::vector<loom::test::RankOutcome> outcomes;
  {
    loom::test::StderrCapture capture;
    outcomes = loom::test::runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
      loomConfig_t config = LOOM_CONFIG_INITIALIZER;
      config.timeoutMs = rank == 0 ? 1500 : 4000;
      loomComm_t comm = nullptr;
      const auto start = std::chrono::steady_clock::now();
      const loomResult_t result = loomCommInitRankConfig(&comm, 3, id, rank, &config);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string message = loomGetLastError(nullptr);
      LOOM_REQUIRE(result == loomSystemError, "code " + std::to_string(result) + ": " + message);
      LOOM_REQUIRE(message.find("arrived 2 of 3: 0-1; missing: 2") != std::string::npos, message);
      LOOM_REQUIRE(message.find("before rank 0's timeout ran out") != std::string::npos, message);
      LOOM_REQUIRE(seconds < 1.5, "took " + std::to_string(seconds) + " s: " + message);
    }, 60);
    log = capture.text();
  }
  unsetenv("LOOM_INIT_REPORT_MS");
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
  EXPECT_NE(log.find("still waiting for ranks after"), std::string::npos) << log;
  EXPECT_NE(log.find("arrived 2 of 3: 0-1; missing: 2"), std::string::npos) << log;
}
