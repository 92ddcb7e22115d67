// SPDX-License-Identifier: Apache-2.0
// loomCommInitFromEnv under each launcher's environment (loomrun, torchrun, Open MPI, Slurm):
// the ranks are forked processes that set their variables before the call; rank 0 hosts the
// rendezvous at the agreed address and the others retry until it is up. Missing or malformed
// variables fail fast with loomInvalidArgument and a message naming the variables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/support/free_port.h"
#include "tests/support/multiprocess.h"
#include "tests/support/stderr_capture.h"

namespace loom::test {
namespace {

const char* const kLauncherVariables[] = {
    "LOOM_RANK",    "LOOM_WORLD_SIZE",      "LOOM_COMM_ID",         "LOOM_COMM_SECRET",
    "RANK",         "WORLD_SIZE",           "MASTER_ADDR",          "MASTER_PORT",
    "LOCAL_RANK",   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
    "SLURM_NTASKS", "TORCHELASTIC_RUN_ID",  "SLURM_JOB_ID",         "SLURM_STEP_ID"};

void clearLauncherEnvironment() {
  for (const char* name : kLauncherVariables) unsetenv(name);
}

// One rank of an env-initialised job: `setVariables(rank)` fills the environment, then the rank
// joins, checks its place, all-reduces and leaves.
void envRank(int rank, int n, const std::function<void(int)>& setVariables, bool delayRoot) {
  clearLauncherEnvironment();
  setVariables(rank);
  setenv("LOOM_TIMEOUT_MS", "30000", 1);
  // Rank 0 late: the others must retry until the root listens.
  if (delayRoot && rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  loomComm_t comm = nullptr;
  loomResult_t rc = loomCommInitFromEnv(&comm);
  LOOM_REQUIRE(rc == loomSuccess, std::string("loomCommInitFromEnv: ") + loomGetErrorString(rc) +
                                      ": " + loomGetLastError(nullptr));
  int count = -1, me = -1;
  LOOM_REQUIRE(loomCommCount(comm, &count) == loomSuccess && count == n, "loomCommCount");
  LOOM_REQUIRE(loomCommUserRank(comm, &me) == loomSuccess && me == rank, "loomCommUserRank");
  constexpr size_t kCount = 257;
  std::vector<int32_t> values(kCount, rank + 1), sums(kCount, 0);
  rc = loomAllReduce(values.data(), sums.data(), kCount, loomInt32, loomSum, comm, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, std::string("allreduce: ") + loomGetLastError(comm));
  for (int32_t sum : sums) LOOM_REQUIRE(sum == n * (n + 1) / 2, "allreduce result");
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
}

void runEnvJob(int n, const std::function<void(int)>& setVariables, bool delayRoot = false) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const auto outcomes = runProcesses(
      n, [&](int rank) { envRank(rank, n, setVariables, delayRoot); }, 90);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

TEST(EnvInit, Loomrun) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
    setenv("LOOM_WORLD_SIZE", "3", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
    setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789ABCDEF", 1);
  });
}

TEST(EnvInit, LoomrunRootStartsLast) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  runEnvJob(
      4,
      [&](int rank) {
        setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
        setenv("LOOM_WORLD_SIZE", "4", 1);
        setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
        setenv("LOOM_COMM_SECRET", "fedcba9876543210fedcba9876543210", 1);
      },
      /*delayRoot=*/true);
}

TEST(EnvInit, Torchrun) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "3", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    setenv("TORCHELASTIC_RUN_ID", "test-run-17", 1);
  });
}

TEST(EnvInit, OpenMpi) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("OMPI_COMM_WORLD_RANK", std::to_string(rank).c_str(), 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
    setenv("LOOM_COMM_SECRET", "00000000000000000000000000000001", 1);
  });
}

TEST(EnvInit, Slurm) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_NTASKS", "3", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
  });
}

// In this process: every case must fail before any rendezvous, so nothing can hang.
class EnvInitErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    clearLauncherEnvironment();
    setenv("LOOM_TIMEOUT_MS", "2000", 1);  // a wrongly accepted environment fails, not hangs
  }
  void TearDown() override {
    clearLauncherEnvironment();
    unsetenv("LOOM_TIMEOUT_MS");
  }

  // Expects loomInvalidArgument, fast, with a message mentioning every word in `names`.
  void expectInvalid(const std::vector<std::string>& names) {
    loomComm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const loomResult_t rc = loomCommInitFromEnv(&comm);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc == loomSuccess) loomCommDestroy(comm);
    EXPECT_EQ(rc, loomInvalidArgument) << loomGetErrorString(rc);
    EXPECT_LT(seconds, 2.0) << "an environment error must not wait for a rendezvous";
    const std::string message = loomGetLastError(nullptr);
    for (const std::string& name : names) {
      EXPECT_NE(message.find(name), std::string::npos)
          << "message does not name " << name << ": " << message;
    }
    // The function's name once, in front (api::guarded puts it there; nothing below repeats it).
    EXPECT_EQ(message.rfind("loomCommInitFromEnv: ", 0), 0u) << message;
    EXPECT_EQ(message.find("loomCommInitFromEnv", 1), std::string::npos) << "named twice: " << message;
  }
};

TEST_F(EnvInitErrors, NoLauncherAtAllNamesEveryConvention) {
  expectInvalid({"LOOM_RANK", "LOOM_WORLD_SIZE", "LOOM_COMM_ID", "RANK", "WORLD_SIZE",
                 "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"});
  EXPECT_EQ(std::string(loomGetLastError(nullptr)).rfind("loomCommInitFromEnv: no launcher environment found: ", 0), 0u)
      << loomGetLastError(nullptr);
}

TEST_F(EnvInitErrors, LoomRankWithoutTheRest) {
  setenv("LOOM_RANK", "0", 1);
  expectInvalid({"LOOM_WORLD_SIZE", "LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, OpenMpiWithoutCommId) {
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  expectInvalid({"LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, SlurmWithoutCommId) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "2", 1);
  expectInvalid({"LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, MalformedRank) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_COMM_ID", "127.0.0.1:1", 1);  // never contacted: the checks come first
  setenv("LOOM_RANK", "one", 1);
  expectInvalid({"LOOM_RANK"});
  setenv("LOOM_RANK", "2", 1);  // not in a world of 2
  expectInvalid({"under loomrun, rank 2 is not in a world of size 2"});
  setenv("LOOM_RANK", "-1", 1);
  expectInvalid({});
}

TEST_F(EnvInitErrors, MalformedSecret) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_RANK", "1", 1);
  setenv("LOOM_COMM_ID", "127.0.0.1:1", 1);  // never contacted: the checks come first
  setenv("LOOM_COMM_SECRET", "not-hex", 1);
  expectInvalid({"LOOM_COMM_SECRET"});
  setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdeg", 1);  // 32 chars, 'g' is not hex
  expectInvalid({"LOOM_COMM_SECRET"});
  setenv("LOOM_COMM_SECRET", "0123456789abcdef 123456789abcdef", 1);  // a space inside
  expectInvalid({"LOOM_COMM_SECRET"});
}

TEST_F(EnvInitErrors, MalformedCommId) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_RANK", "1", 1);
  setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdef", 1);
  setenv("LOOM_COMM_ID", "no-port-here", 1);
  expectInvalid({"no-port-here"});
  setenv("LOOM_COMM_ID", "127.0.0.1:99999", 1);
  expectInvalid({"99999"});
}


// ---- Ranks that come late, and ranks the root waits for ------------------------------------

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What the processes of one job tell each other.
struct JobState {
  std::atomic<int> done{0};      // ranks of the job whose init has returned
  std::atomic<int> answered{0};  // the late rank has its answer: the others may go
};

// Waits (at most 30 s) until `counter` reaches `value`.
void awaitCount(const std::atomic<int>& counter, int value, const char* what) {
  const auto giveUp = Clock::now() + std::chrono::seconds(30);
  while (counter.load() < value) {
    LOOM_REQUIRE(Clock::now() < giveUp, std::string("never happened: ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A loomrun rank with LOOM_TIMEOUT_MS unset: the default timeout, 10 minutes.
void setLoomrunRank(int port, int rank, int worldSize) {
  clearLauncherEnvironment();
  unsetenv("LOOM_TIMEOUT_MS");
  setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
  setenv("LOOM_WORLD_SIZE", std::to_string(worldSize).c_str(), 1);
  setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
  setenv("LOOM_COMM_SECRET", "00112233445566778899aabbccddeeff", 1);
}

// Slots 0 and 1 are the job (`sizes` says the world size each declares); slot 2 comes after
// both have their answer, as rank `lateRank` of `lateSize`, while the root's process (slot 0)
// lives. It must be refused at once (the root's tombstone answers it), with the default
// timeout, naming `reason`.
void expectLateRankRefusedAtOnce(const int (&sizes)[2], bool jobForms, int lateRank, int lateSize,
                                 const std::string& reason) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  test::SharedAcrossFork<JobState> state;
  const auto start = Clock::now();
  const auto outcomes = runProcesses(3, [&](int slot) {
    if (slot < 2) {
      setLoomrunRank(port, slot, sizes[slot]);
      loomComm_t comm = nullptr;
      const loomResult_t result = loomCommInitFromEnv(&comm);
      state->done.fetch_add(1);
      LOOM_REQUIRE((result == loomSuccess) == jobForms, std::string("init: ") + loomGetLastError(nullptr));
      awaitCount(state->answered, 1, "the late rank's answer");
      if (comm != nullptr) LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
      return;
    }
    awaitCount(state->done, 2, "the job's init");
    setLoomrunRank(port, lateRank, lateSize);
    loomComm_t comm = nullptr;
    const auto asked = Clock::now();
    const loomResult_t result = loomCommInitFromEnv(&comm);
    const double seconds = secondsSince(asked);
    const std::string message = loomGetLastError(nullptr);
    state->answered.store(1);
    LOOM_REQUIRE(result == loomInvalidUsage, std::string(loomGetErrorString(result)) + ": " + message);
    LOOM_REQUIRE(message.find(reason) != std::string::npos, "the message lacks '" + reason + "': " + message);
    LOOM_REQUIRE(seconds < 5.0, "the late rank waited " + std::to_string(seconds) + " s: " + message);
  }, 60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
  EXPECT_LT(secondsSince(start), 10.0);
}

TEST(EnvInitLateRank, AThirdProcessJoiningATwoRankJobIsRefusedAtOnce) {
  expectLateRankRefusedAtOnce({2, 2}, true, 2, 3,
                              "the communicator of this id already formed with 2 ranks (0-1) without this rank "
                              "(rank 2 of 3)");
}

TEST(EnvInitLateRank, ASecondRankOneIsRefusedAtOnce) {
  expectLateRankRefusedAtOnce({2, 2}, true, 1, 2,
                              "the communicator of this id already formed with 2 ranks (0-1) without this rank "
                              "(rank 1 of 2: a second rank 1");
}

TEST(EnvInitLateRank, ARankComingAfterTheRootRefusedTheCommunicatorLearnsWhy) {
  expectLateRankRefusedAtOnce({2, 3}, false, 2, 3,
                              "refused the communicator: it was refused before this rank (rank 2 of 3) arrived, "
                              "because: nranks mismatch");
}

// Rank 1 starts first with a short timeout; rank 0, the root, starts a second later with a long
// one; rank 2 never comes. The root gives up just before rank 1 would, so rank 1's error (and
// the root's own rank's, long before its own timeout) names who arrived and who did not, and
// the root says so in WARN lines meanwhile (LOOM_INIT_REPORT_MS).
TEST(EnvInitTimeout, RanksStartedBeforeTheRootLearnWhoIsMissing) {
  const int port = freeLoopbackPortPair();
  ASSERT_GT(port, 0);
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const auto outcomes = runProcesses(2, [&](int rank) {
    setLoomrunRank(port, rank, 3);
    setenv("LOOM_TIMEOUT_MS", rank == 1 ? "3000" : "20000", 1);
    std::unique_ptr<test::StderrCapture> capture;
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      setenv("LOOM_INIT_REPORT_MS", "200", 1);
      capture = std::make_unique<test::StderrCapture>();
    }
    loomComm_t comm = nullptr;
    const auto start = Clock::now();
    const loomResult_t result = loomCommInitFromEnv(&comm);
    const double seconds = secondsSince(start);
    const std::string message = loomGetLastError(nullptr);
    const std::string log = capture ? capture->text() : "";
    capture.reset();
    LOOM_REQUIRE(result == loomSystemError, std::string(loomGetErrorString(result)) + ": " + message);
    LOOM_REQUIRE(message.find("arrived 2 of 3: 0-1; missing: 2") != std::string::npos, message);
    LOOM_REQUIRE(message.find("before rank 1's timeout ran out") != std::string::npos, message);
    // Rank 1 hears before its own deadline (3 s from its start; it connected ~1 s in).
    LOOM_REQUIRE(seconds < (rank == 1 ? 3.0 : 5.0), "took " + std::to_string(seconds) + " s: " + message);
    if (rank == 0) {
      LOOM_REQUIRE(log.find("still waiting for ranks after") != std::string::npos, "no WARN report: " + log);
      LOOM_REQUIRE(log.find("arrived 2 of 3: 0-1; missing: 2") != std::string::npos, "report: " + log);
    }
  }, 60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace
}  // namespace loom::test
