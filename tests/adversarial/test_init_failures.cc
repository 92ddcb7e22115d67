// SPDX-License-Identifier: Apache-2.0
// Issue 14, findings 8 and 9: init failures that used to wait the full LOOM_TIMEOUT_MS (ten
// minutes by default) and an absurd nranks that used to grow gigabytes before failing.
//
// A rank that arrives after its root's rendezvous is over (the communicator formed or ended, or
// the root's process exited) must fail within 2 s with the default timeout, saying why; a rank of an env-based job may start before its
// root and must still join. The forked ranks run under a guard (runProcesses' timeout) so that
// a regression fails the test in seconds instead of hanging it for ten minutes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <loom.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/free_port.h"
#include "tests/support/process_state.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

using Clock = std::chrono::steady_clock;

// Children that outlive this are killed and the test fails (instead of waiting 10 minutes).
constexpr int kGuardSeconds = 15;
// What "a clear error, promptly" means here.
constexpr double kPromptSeconds = 2.0;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A one-way event between forked processes: post() writes a byte per waiter, await() reads one
// (bounded by a timeout, so a missing post fails the child instead of hanging it).
class Event {
 public:
  Event() {
    if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
  }
  ~Event() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void post(int waiters = 1) const {
    for (int i = 0; i < waiters; ++i) {
      const char byte = 1;
      LOOM_REQUIRE(::write(fds_[1], &byte, 1) == 1, "event post failed");
    }
  }
  void await(const char* what, int timeoutMs = kGuardSeconds * 1000) const {
    pollfd fd{fds_[0], POLLIN, 0};
    LOOM_REQUIRE(::poll(&fd, 1, timeoutMs) == 1, std::string("no '") + what + "' event in time");
    char byte;
    LOOM_REQUIRE(::read(fds_[0], &byte, 1) == 1, std::string("event read failed: ") + what);
  }

 private:
  int fds_[2];
};

// Every child uses the library's default timeout (10 minutes) unless a test says otherwise.
void useDefaultTimeout() { unsetenv("LOOM_TIMEOUT_MS"); }

void expectAllOk(const std::vector<RankOutcome>& outcomes) {
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// How the 2-rank job stands when the late rank asks.
enum class Job { Running, Destroyed, RootProcessGone };

// Rank `lateRank` of `lateNranks` joins with the same uniqueId after ranks 0 and 1 of a 2-rank
// job have formed their communicator (and, per `job`, destroyed it again, or even exited). It
// must be told at once why, naming `reason`: while the root's process lives, its tombstone
// says the communicator formed without it; once that process is gone, nothing listens.
void expectLateJoinerFailsFast(int lateNranks, int lateRank, Job job, const std::string& reason) {
  Event formed;   // ranks 0 and 1 -> the late one
  Event checked;  // the late one -> ranks 0 and 1 (they keep the job running until then)
  SharedAcrossFork<std::atomic<pid_t>> rootPid;
  // Pinned below the ephemeral range: once the root's process has gone, its port is not handed
  // to another socket (the late rank's own) before the late rank connects.
  if (job == Job::RootProcessGone) {
    setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(freePortBelowEphemeralRange())).c_str(), 1);
  }
  auto outcomes = runRanksWithUniqueId(3, [&](int slot, const loomUniqueId& id) {
    useDefaultTimeout();
    if (slot < 2) {
      if (slot == 0) rootPid->store(getpid());
      loomComm_t comm = nullptr;
      const loomResult_t result = loomCommInitRank(&comm, 2, id, slot);
      LOOM_REQUIRE(result == loomSuccess, loomGetLastError(nullptr));
      if (job != Job::Running) LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
      formed.post();
      if (job == Job::RootProcessGone) return;
      checked.await("late rank checked");
      if (job == Job::Running) LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
      return;
    }
    formed.await("rank 0 formed");
    formed.await("rank 1 formed");
    if (job == Job::RootProcessGone) {
      const auto giveUp = Clock::now() + std::chrono::seconds(5);
      while (!processGone(rootPid->load()) && Clock::now() < giveUp) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    loomComm_t comm = nullptr;
    const auto start = Clock::now();
    const loomResult_t result = loomCommInitRank(&comm, lateNranks, id, lateRank);
    const double seconds = secondsSince(start);
    const std::string message = loomGetLastError(nullptr);
    if (job != Job::RootProcessGone) checked.post(2);
    LOOM_REQUIRE(result == loomInvalidUsage,
                 "expected loomInvalidUsage, got " + std::to_string(result) + ": " + message);
    LOOM_REQUIRE(comm == nullptr, "comm must stay NULL on failure");
    LOOM_REQUIRE(message.find(reason) != std::string::npos, "no '" + reason + "' in: " + message);
    LOOM_REQUIRE(message.find("rank " + std::to_string(lateRank)) != std::string::npos, message);
    LOOM_REQUIRE(seconds < kPromptSeconds, "took " + std::to_string(seconds) + " s: " + message);
  }, kGuardSeconds);
  unsetenv("LOOM_COMM_ID");
  expectAllOk(outcomes);
}

TEST(InitFailures, StaleUniqueIdOfAFinishedJobFailsFast) {
  expectLateJoinerFailsFast(2, 0, Job::Destroyed,
                            "already formed with 2 ranks (0-1) without this rank (rank 0 of 2: a second rank 0");
}

TEST(InitFailures, ThirdProcessJoiningARunningTwoRankJobFailsFast) {
  expectLateJoinerFailsFast(2, 1, Job::Running,
                            "already formed with 2 ranks (0-1) without this rank (rank 1 of 2: a second rank 1");
}

TEST(InitFailures, LateRankThatDisagreesOnNranksFailsFast) {
  expectLateJoinerFailsFast(3, 2, Job::Running, "already formed with 2 ranks (0-1) without this rank (rank 2 of 3)");
}

TEST(InitFailures, UniqueIdOfAJobWhoseRootProcessExitedFailsFast) {
  expectLateJoinerFailsFast(2, 1, Job::RootProcessGone, "no longer accepts ranks");
}

// LOOM_COMM_ID pins the root to one address: the next job binds it again right after the first
// one formed, and a rank still holding the first job's id is turned away promptly.
TEST(InitFailures, PinnedAddressServesTheNextJobAtOnce) {
  const std::string address = "127.0.0.1:" + std::to_string(freeLoopbackPort());
  setenv("LOOM_COMM_ID", address.c_str(), 1);
  for (int job = 0; job < 3; ++job) {
    const auto start = Clock::now();
    auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
      useDefaultTimeout();
      loomComm_t comm = nullptr;
      LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess, loomGetLastError(nullptr));
      float value = 1.0f;
      LOOM_REQUIRE(loomAllReduce(&value, &value, 1, loomFloat32, loomSum, comm, nullptr) == loomSuccess,
                   loomGetLastError(nullptr));
      LOOM_REQUIRE(value == 2.0f, "allreduce gave " + std::to_string(value));
      LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
    }, kGuardSeconds);
    expectAllOk(outcomes);
    EXPECT_LT(secondsSince(start), 5.0) << "job " << job << " at " << address;
  }
  unsetenv("LOOM_COMM_ID");
}

// torchrun-style init: the ranks may start before rank 0 hosts the root; they keep retrying
// within their timeout. Rank 1 starts well over a second before the root.
TEST(InitFailures, EnvInitRankStartedBeforeTheRootStillJoins) {
  const int rootPort = freeLoopbackPort();
  Event started;
  auto outcomes = runProcesses(2, [&](int rank) {
    useDefaultTimeout();
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(rootPort - 1).c_str(), 1);  // the root takes the next port
    setenv("LOOM_COMM_SECRET", "00112233445566778899aabbccddeeff", 1);
    if (rank == 1) started.post();
    if (rank == 0) {
      started.await("rank 1 started");
      // The scenario itself, not synchronisation: the root comes up late.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    }
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitFromEnv(&comm) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, kGuardSeconds);
  expectAllOk(outcomes);
}

long maxRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Finding 9: nranks = 2^28 is refused before anything is sized by it.
TEST(InitFailures, AbsurdNranksFailsFastWithSmallMemory) {
  auto outcomes = runProcesses(1, [&](int) {
    useDefaultTimeout();
    loomUniqueId id;
    LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
    const long rssBefore = maxRssKb();
    const auto start = Clock::now();
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRank(&comm, 1 << 28, id, 0);
    const double seconds = secondsSince(start);
    const long grownKb = maxRssKb() - rssBefore;
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(result == loomInvalidArgument, std::to_string(result) + ": " + message);
    LOOM_REQUIRE(message.find("nranks 268435456") != std::string::npos, message);
    LOOM_REQUIRE(message.find("at most 65536") != std::string::npos, message);
    LOOM_REQUIRE(seconds < 0.5, "took " + std::to_string(seconds) + " s");
    LOOM_REQUIRE(grownKb < 16 * 1024, "RSS grew by " + std::to_string(grownKb) + " KiB");
  }, kGuardSeconds);
  expectAllOk(outcomes);
}

// The root decides nranks: a rank that claims the largest allowed nranks while the root already
// serves a 2-rank communicator is refused without sizing anything by its own claim.
TEST(InitFailures, RankClaimingALargerNranksThanTheRootFailsWithSmallMemory) {
  Event joined;
  Event checked;  // rank 0's process hosts the root: it stays until rank 1 has its answer
  auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    useDefaultTimeout();
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.timeoutMs = 10000;
    loomComm_t comm = nullptr;
    if (rank == 0) {
      // Rank 0 comes first, so the root takes nranks = 2 from it.
      joined.post();
      const loomResult_t result = loomCommInitRankConfig(&comm, 2, id, 0, &config);
      LOOM_REQUIRE(result == loomInvalidUsage, loomGetLastError(nullptr));
      checked.await("rank 1 checked");
      return;
    }
    joined.await("rank 0 started");
    const long rssBefore = maxRssKb();
    const auto start = Clock::now();
    const loomResult_t result = loomCommInitRankConfig(&comm, 65536, id, 1, &config);
    const double seconds = secondsSince(start);
    const long grownKb = maxRssKb() - rssBefore;
    const std::string message = loomGetLastError(nullptr);
    checked.post();
    LOOM_REQUIRE(result == loomInvalidUsage, std::to_string(result) + ": " + message);
    LOOM_REQUIRE(message.find("nranks mismatch") != std::string::npos, message);
    LOOM_REQUIRE(seconds < kPromptSeconds, "took " + std::to_string(seconds) + " s");
    LOOM_REQUIRE(grownKb < 16 * 1024, "RSS grew by " + std::to_string(grownKb) + " KiB");
  }, kGuardSeconds);
  expectAllOk(outcomes);
}

}  // namespace
}  // namespace loom::test
