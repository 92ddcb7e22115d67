// SPDX-License-Identifier: Apache-2.0
// The root's tombstones (src/bootstrap/root_tombstone.h): once a rendezvous is over, its
// listener stays open in the root's process and answers every late rank at once. What that
// must not break or leak:
//   - a process pins its next communicator to the same address (LOOM_COMM_ID): the tombstone
//     gives the port back; a rendezvous still waiting there is a clear error instead;
//   - an address another program holds is a clear error;
//   - a process keeps at most the 16 most recent tombstones (the oldest is closed);
//   - a child forked from the root's process does not keep the port open after the root's
//     process has gone (a late rank would connect and then wait for its whole timeout);
//   - a job's next communicator from the same environment (LOOM_COMM_ID and secret) is not
//     refused at the last one's tombstone by a rank that comes first;
//   - the roots of Loom's own ranks (split, shrink, loomCommInitAll) leave no tombstone;
//   - a fork while another thread waits in the registry leaves a child that works.
// Every case runs with the default timeout (10 minutes) under a guard of a few seconds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <loom.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

constexpr int kTombstoneGuardSeconds = 20;

double secondsSinceStart(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Waits (bounded) until `flag` is set by another process.
void awaitFlag(const std::atomic<int>& flag, const char* what) {
  const auto giveUp = Clock::now() + std::chrono::seconds(kTombstoneGuardSeconds);
  while (flag.load() == 0) {
    LOOM_REQUIRE(Clock::now() < giveUp, std::string("never happened: ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// A communicator of one rank on `id`: its rendezvous is over at once, leaving a tombstone.
void formAlone(const loomUniqueId& id) {
  loomComm_t comm = nullptr;
  LOOM_REQUIRE(loomCommInitRank(&comm, 1, id, 0) == loomSuccess, loomGetLastError(nullptr));
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
}

// A socket bound to loopback `port` (not listening), so that nobody else takes it meanwhile.
int holdPort(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_port = htons(static_cast<uint16_t>(port));
  bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  LOOM_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0,
               "could not hold port " + std::to_string(port));
  return fd;
}

// A late rank 0 of 1 on `id`: refused within 2 s with `mention` in the message.
void expectLateRankRefused(const loomUniqueId& id, const std::string& mention) {
  loomComm_t comm = nullptr;
  const auto start = Clock::now();
  const loomResult_t result = loomCommInitRank(&comm, 1, id, 0);
  const double seconds = secondsSinceStart(start);
  const std::string message = loomGetLastError(nullptr);
  LOOM_REQUIRE(result == loomInvalidUsage, std::string(loomGetErrorString(result)) + ": " + message);
  LOOM_REQUIRE(message.find(mention) != std::string::npos, "no '" + mention + "' in: " + message);
  LOOM_REQUIRE(seconds < 2.0, "took " + std::to_string(seconds) + " s: " + message);
}

TEST(RootTombstones, AProcessPinsItsNextCommunicatorsToTheSameAddress) {
  const std::string address = "127.0.0.1:" + std::to_string(freeLoopbackPort());
  const auto outcomes = runProcesses(1, [&](int) {
    unsetenv("LOOM_TIMEOUT_MS");
    setenv("LOOM_COMM_ID", address.c_str(), 1);
    loomUniqueId id;
    for (int job = 0; job < 3; ++job) {
      LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, "job " + std::to_string(job) + ": " + loomGetLastError(nullptr));
      formAlone(id);
    }
    // The last one's tombstone answers a late rank, until the address is taken again.
    expectLateRankRefused(id, "already formed with 1 rank (0) without this rank (rank 0 of 1: a second rank 0");
    // A rendezvous still waiting there is not closed under its ranks' feet.
    LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
    const loomResult_t again = loomGetUniqueId(&id);
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(again == loomInvalidUsage, std::string(loomGetErrorString(again)) + ": " + message);
    LOOM_REQUIRE(message.find("the rendezvous of an earlier communicator of this process still listens at " +
                              address) != std::string::npos,
                 message);
  }, kTombstoneGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(RootTombstones, AnAddressAnotherProgramHoldsIsAClearError) {
  const int port = freeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  SharedAcrossFork<std::atomic<int>> listening, checked;
  const auto outcomes = runProcesses(2, [&](int slot) {
    if (slot == 0) {  // another program, listening there
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in bound{};
      bound.sin_family = AF_INET;
      bound.sin_port = htons(static_cast<uint16_t>(port));
      bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      LOOM_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) == 0 && ::listen(fd, 4) == 0,
                   "the other program could not listen");
      listening->store(1);
      awaitFlag(*checked, "the root's attempt");
      ::close(fd);
      return;
    }
    awaitFlag(*listening, "the other program");
    setenv("LOOM_COMM_ID", address.c_str(), 1);
    loomUniqueId id;
    const loomResult_t result = loomGetUniqueId(&id);
    const std::string message = loomGetLastError(nullptr);
    checked->store(1);
    LOOM_REQUIRE(result == loomSystemError, std::string(loomGetErrorString(result)) + ": " + message);
    LOOM_REQUIRE(message.find("the root cannot listen at " + address + ": the address is in use") != std::string::npos,
                 message);
  }, kTombstoneGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// Two communicators in a row from one launcher's environment: the same LOOM_COMM_ID and secret
// serve both. Rank 1 reaches its next init while rank 0 is still busy with other things, and
// finds the last communicator's tombstone on the port: that must not refuse it as a second
// rank 1, but tell it to come back until rank 0's next root has taken the port.
TEST(RootTombstones, BackToBackEnvInitsOfOneJobMeetAtTheNextRoot) {
  // Below the ephemeral range: rank 1's own connecting socket is never given the root's port
  // in the instant between the tombstone's close and the next root's bind.
  const std::string address = "127.0.0.1:" + std::to_string(freePortBelowEphemeralRange());
  const auto outcomes = runProcesses(2, [&](int rank) {
    unsetenv("LOOM_TIMEOUT_MS");
    setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
    setenv("LOOM_WORLD_SIZE", "2", 1);
    setenv("LOOM_COMM_ID", address.c_str(), 1);
    setenv("LOOM_COMM_SECRET", "0f1e2d3c4b5a69788796a5b4c3d2e1f0", 1);
    for (int round = 0; round < 3; ++round) {
      const std::string which = "communicator " + std::to_string(round) + ": ";
      // The scenario itself: rank 1 comes first and meets the last communicator's tombstone.
      if (rank == 0 && round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const auto start = Clock::now();
      loomComm_t comm = nullptr;
      const loomResult_t result = loomCommInitFromEnv(&comm);
      LOOM_REQUIRE(result == loomSuccess, which + loomGetErrorString(result) + ": " + loomGetLastError(nullptr));
      LOOM_REQUIRE(secondsSinceStart(start) < 5.0, which + "took " + std::to_string(secondsSinceStart(start)) + " s");
      int32_t value = rank + 1;
      LOOM_REQUIRE(loomAllReduce(&value, &value, 1, loomInt32, loomSum, comm, nullptr) == loomSuccess,
                   which + loomGetLastError(comm));
      LOOM_REQUIRE(value == 3, which + "all-reduce gave " + std::to_string(value));
      LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, which + loomGetLastError(nullptr));
    }
  }, kTombstoneGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

constexpr int kCommunicators = 18;  // two more than a process keeps

TEST(RootTombstones, AProcessKeepsTheSixteenMostRecent) {
  struct Shared {
    loomUniqueId ids[kCommunicators];
    std::atomic<int> formed{0};
    std::atomic<int> checked{0};
  };
  SharedAcrossFork<Shared> shared;
  const auto outcomes = runProcesses(2, [&](int slot) {
    unsetenv("LOOM_TIMEOUT_MS");
    if (slot == 0) {  // the roots' process
      // Pinned below the ephemeral range: a closed root's port is not handed to another socket.
      // All chosen first, each held meanwhile, so that no later root gets the port of an
      // earlier one already closed (it would answer the earlier id's late rank with its own
      // secret).
      std::vector<int> held;
      std::vector<int> ports;
      for (int i = 0; i < kCommunicators; ++i) {
        ports.push_back(freePortBelowEphemeralRange());
        held.push_back(holdPort(ports.back()));
      }
      for (int i = 0; i < kCommunicators; ++i) {
        loomUniqueId& id = shared->ids[i];
        ::close(held[static_cast<size_t>(i)]);
        setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(ports[static_cast<size_t>(i)])).c_str(), 1);
        LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
        formAlone(id);
      }
      shared->formed.store(1);
      awaitFlag(shared->checked, "the late ranks' answers");
      return;
    }
    awaitFlag(shared->formed, "the communicators");
    // The newest answers (and, being served, was taken with the evictions it caused) ...
    expectLateRankRefused(shared->ids[kCommunicators - 1], "already formed with 1 rank (0)");
    expectLateRankRefused(shared->ids[kCommunicators - 16], "already formed with 1 rank (0)");
    // ... the oldest two were closed.
    expectLateRankRefused(shared->ids[0], "no longer accepts ranks");
    expectLateRankRefused(shared->ids[1], "no longer accepts ranks");
    shared->checked.store(1);
  }, kTombstoneGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// How many descriptors this process has open.
int openDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

// The roots Loom starts for its own ranks (loomCommInitAll, loomCommSplit; loomCommShrink
// alike) leave no tombstone: their ids never leave the process, so no rank can come late.
// Many of them neither keep a descriptor each nor push out the tombstone of a published id.
TEST(RootTombstones, RootsOfLoomsOwnRanksLeaveNone) {
  const auto outcomes = runProcesses(1, [&](int) {
    unsetenv("LOOM_TIMEOUT_MS");
    unsetenv("LOOM_COMM_ID");
    loomUniqueId id;
    LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
    formAlone(id);
    const int before = openDescriptors();
    for (int round = 0; round < 9; ++round) {  // 18 roots: two more than a process keeps
      loomComm_t comm = nullptr, child = nullptr;
      LOOM_REQUIRE(loomCommInitAll(&comm, 1, nullptr) == loomSuccess, loomGetLastError(nullptr));
      LOOM_REQUIRE(loomCommSplit(comm, 0, 0, &child, nullptr) == loomSuccess, loomGetLastError(comm));
      LOOM_REQUIRE(loomCommDestroy(child) == loomSuccess, loomGetLastError(nullptr));
      LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
    }
    // A server thread closes its end of a rank's connection just after the rank has its answer.
    const auto giveUp = Clock::now() + std::chrono::seconds(2);
    while (openDescriptors() > before && Clock::now() < giveUp) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const int after = openDescriptors();
    LOOM_REQUIRE(after <= before, std::to_string(after - before) + " more descriptors open");
    expectLateRankRefused(id, "already formed with 1 rank (0)");
  }, kTombstoneGuardSeconds);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(RootTombstones, AForkedChildDoesNotKeepTheRootsPortOpen) {
  struct Shared {
    loomUniqueId id;
    std::atomic<int> forked{0};
    std::atomic<int> childRuns{0};
    std::atomic<pid_t> root{0};
    std::atomic<pid_t> child{0};
  };
  SharedAcrossFork<Shared> shared;
  const auto outcomes = runProcesses(2, [&](int slot) {
    unsetenv("LOOM_TIMEOUT_MS");
    if (slot == 0) {  // the root's process: forms, forks a long-lived child, and exits
      shared->root.store(getpid());
      // Pinned below the ephemeral range: the closed port is not handed to another socket.
      setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(freePortBelowEphemeralRange())).c_str(), 1);
      LOOM_REQUIRE(loomGetUniqueId(&shared->id) == loomSuccess, loomGetLastError(nullptr));
      formAlone(shared->id);
      const pid_t child = fork();
      LOOM_REQUIRE(child >= 0, "fork failed");
      if (child == 0) {
        shared->childRuns.store(1);  // past fork(): its fork handlers have run
        std::this_thread::sleep_for(std::chrono::seconds(kTombstoneGuardSeconds));
        _exit(0);
      }
      shared->child.store(child);
      awaitFlag(shared->childRuns, "the child");
      shared->forked.store(1);
      return;
    }
    awaitFlag(shared->forked, "the root's child");
    const auto giveUp = Clock::now() + std::chrono::seconds(5);
    while (!processGone(shared->root.load()) && Clock::now() < giveUp) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The child lives on; the port must be closed all the same: refused, not a silent listener.
    expectLateRankRefused(shared->id, "no longer accepts ranks");
    ::kill(shared->child.load(), SIGKILL);
  }, kTombstoneGuardSeconds);
  if (shared->child.load() > 0) ::kill(shared->child.load(), SIGKILL);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// A fork while another thread of the process waits in the root registry (freePort waits for the
// fork's pause to end): the child inherits a condition variable that counts that waiter, a
// thread the child does not have. The child must not wait for it: it pins two roots to one
// address in a row (the second takes the port back from the first's tombstone), as any process
// does. Not under a sanitizer: the child of a process whose threads allocate may inherit its
// allocator locked (AddressSanitizer) or must not start threads (ThreadSanitizer).
TEST(RootTombstones, AForkWhileAThreadWaitsInTheRegistryLeavesAWorkingChild) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "forks a process whose threads allocate";
#endif
  const auto outcomes = runProcesses(1, [&](int) {
    unsetenv("LOOM_TIMEOUT_MS");
    const int parentPort = freePortBelowEphemeralRange();
    const int held = holdPort(parentPort);  // so that the children's port is another
    const std::string childAddress = "127.0.0.1:" + std::to_string(freePortBelowEphemeralRange());
    ::close(held);
    const std::string parentAddress = "127.0.0.1:" + std::to_string(parentPort);
    setenv("LOOM_COMM_ID", parentAddress.c_str(), 1);
    {  // the first communicator before any fork: a fork while another thread runs a one-time
       // initialization (a function-local static) leaves the child waiting for it, in any C++ program
      loomUniqueId id;
      LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
      formAlone(id);
    }
    std::atomic<bool> done{false};
    std::thread reuser([&] {  // pins a root to one address again and again: freePort each time
      while (!done.load()) {
        loomUniqueId id;
        LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
        formAlone(id);
      }
    });
    for (int child = 0; child < 40; ++child) {
      const pid_t pid = fork();
      LOOM_REQUIRE(pid >= 0, "fork failed");
      if (pid == 0) {
        setenv("LOOM_COMM_ID", childAddress.c_str(), 1);
        for (int job = 0; job < 2; ++job) {
          loomUniqueId id;
          if (loomGetUniqueId(&id) != loomSuccess) _exit(2);
          loomComm_t comm = nullptr;
          if (loomCommInitRank(&comm, 1, id, 0) != loomSuccess || loomCommDestroy(comm) != loomSuccess) _exit(3);
        }
        _exit(0);
      }
      const std::string ended = awaitChild(pid, 5);
      if (!ended.empty()) {
        done.store(true);
        reuser.join();
        LOOM_REQUIRE(false, "child " + std::to_string(child) + " " + ended);
      }
    }
    done.store(true);
    reuser.join();
  }, 300);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace
}  // namespace loom::test
