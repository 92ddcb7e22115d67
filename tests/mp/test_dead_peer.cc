// SPDX-License-Identifier: Apache-2.0
// Dead peers and aborts become prompt errors instead of hangs (issue 5):
// - a rank killed with SIGKILL in the middle of large all-reduces makes every surviving rank's
//   call fail within 5 s, with a message naming the dead rank: over the shared-memory ring
//   (LOOM_ALGO=ring), over TCP (LOOM_SHM_DISABLE=1) and in the direct engine. With 4 ranks and
//   rank 2 killed, rank 0 is no ring neighbour of it and must fail too;
// - nothing of the communicator is left in /dev/shm once the survivors have exited;
// - loomCommAbort from another thread unblocks a rank stuck in a collective within 1 s.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/socket_bootstrap.h"
#include "loom.h"
#include "tests/support/multiprocess.h"
#include "tests/support/test_env.h"

namespace loom::test {
namespace {

int64_t nowMs() { return monotonicUs() / 1000; }

// Written by the ranks, read by the test: mapped shared before the fork.
struct SharedState {
  std::atomic<int64_t> killedAtMs{0};
  std::atomic<int64_t> abortedAtMs{0};
  std::atomic<uint64_t> commUid{0};
};

using SharedMapping = loom::test::SharedAcrossFork<SharedState>;

constexpr int kRanks = 4;
constexpr int64_t kDeadPeerLimitMs = 5000;

// The victims kill themselves from a helper thread while their main thread is inside a loop
// of all-reduces of `count` floats; every survivor must fail within 5 s, naming a victim.
void expectDeadPeersDetected(const std::set<int>& victims, size_t count) {
  SharedMapping shared;
  const auto outcomes = runRanksWithUniqueId(
      kRanks,
      [&](int rank, const loomUniqueId& id) {
        shared->commUid.store(decodeUniqueId(id).commUid);
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, kRanks, id, rank) == loomSuccess,
                     loomGetLastError(nullptr));
        std::vector<float> send(count, 1.0f), recv(count, 0.0f);
        // A first call that every rank finishes: the victims die after init for sure.
        LOOM_REQUIRE(loomAllReduce(send.data(), recv.data(), 16, loomFloat32, loomSum, comm,
                                   nullptr) == loomSuccess,
                     loomGetLastError(comm));
        LOOM_REQUIRE(shmNamesOf(shared->commUid.load()).empty(),
                     "shared-memory names still exist after init: " +
                         shmNamesOf(shared->commUid.load()).front());
        if (victims.count(rank) != 0) {
          std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            int64_t expected = 0;
            shared->killedAtMs.compare_exchange_strong(expected, nowMs());
            raise(SIGKILL);
          }).detach();
        }
        const int64_t start = nowMs();
        loomResult_t result = loomSuccess;
        int calls = 0;
        while (result == loomSuccess) {
          result =
              loomAllReduce(send.data(), recv.data(), count, loomFloat32, loomSum, comm, nullptr);
          ++calls;
          LOOM_REQUIRE(nowMs() - start < 20000,
                       "rank " + std::to_string(rank) + ": no error 20 s after the kill");
        }
        const int64_t failedAt = nowMs();
        const std::string error = loomGetLastError(comm);
        std::fprintf(stderr, "rank %d: failed after %d calls, %lld ms after the kill: %s\n", rank,
                     calls, static_cast<long long>(failedAt - shared->killedAtMs.load()),
                     error.c_str());
        LOOM_REQUIRE(
            result == loomRemoteError || result == loomSystemError,
            "rank " + std::to_string(rank) + " got " + std::to_string(result) + ": " + error);
        bool namesVictim = false;
        for (int victim : victims) {
          const std::string name = "rank " + std::to_string(victim);
          namesVictim = namesVictim || error.find(name + " (pid ") != std::string::npos ||
                        error.find("peer " + name + " (socket) closed") != std::string::npos;
        }
        LOOM_REQUIRE(namesVictim, "rank " + std::to_string(rank) +
                                      ": the error does not name a dead rank: " + error);
        const int64_t killedAt = shared->killedAtMs.load();
        LOOM_REQUIRE(killedAt != 0 && failedAt - killedAt < kDeadPeerLimitMs,
                     "rank " + std::to_string(rank) + " failed " +
                         std::to_string(failedAt - killedAt) + " ms after the kill: " + error);
        loomCommAbort(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) {
    if (victims.count(outcome.rank) != 0) {
      EXPECT_EQ(outcome.signal, SIGKILL) << outcome.describe();
    } else {
      EXPECT_TRUE(outcome.ok()) << outcome.describe();
    }
  }
  const std::vector<std::string> left = shmNamesOf(shared->commUid.load());
  EXPECT_TRUE(left.empty()) << left.size() << " names left in /dev/shm, e.g. "
                            << (left.empty() ? "" : left.front());
}

// 1 Mi floats (4 MiB): many pieces in flight, each call long enough to be killed inside.
constexpr size_t kLargeCount = size_t{1} << 20;

TEST(DeadPeer, ShmRingEveryRankFailsNamingTheDeadRank) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}});
  expectDeadPeersDetected({2}, kLargeCount);
}

TEST(DeadPeer, ShmRingTwoDeadRanksLeaveNothingBehind) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}});
  expectDeadPeersDetected({1, 2}, kLargeCount);
}

TEST(DeadPeer, TcpEveryRankFailsNamingTheDeadRank) {
  ScopedEnv env(EnvList{{"LOOM_SHM_DISABLE", "1"}});
  expectDeadPeersDetected({2}, kLargeCount);
}

TEST(DeadPeer, DirectEngineEagerCallsFailNamingTheDeadRank) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}});
  expectDeadPeersDetected({2}, 1024);  // 4 KiB: inside the arena posts
}

TEST(DeadPeer, DirectEngineLargeCallsFailNamingTheDeadRank) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}});
  expectDeadPeersDetected({2}, kLargeCount);  // posted, then run as a schedule
}

// Rank 1 never calls; rank 0's collective must return within 1 s of loomCommAbort from
// another thread, saying it was aborted. Rank 1 stays alive meanwhile, so this is not a
// dead-peer detection.
void expectAbortUnblocks(loomResult_t (*collective)(loomComm_t comm, float* data)) {
  SharedMapping shared;
  const auto outcomes = runRanksWithUniqueId(
      2,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess,
                     loomGetLastError(nullptr));
        std::vector<float> data(kLargeCount, 1.0f);
        LOOM_REQUIRE(collective(comm, data.data()) == loomSuccess, loomGetLastError(comm));
        if (rank == 1) {
          // Alive but silent until rank 0 is done (or 10 s, should rank 0 hang).
          for (int i = 0; i < 1000 && shared->abortedAtMs.load() == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          loomCommAbort(comm);
          return;
        }
        std::thread aborter([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          shared->abortedAtMs.store(nowMs());
          loomCommAbort(comm);
        });
        const loomResult_t result = collective(comm, data.data());
        const int64_t returnedAt = nowMs();
        const std::string error = loomGetLastError(nullptr);  // the handle is gone after the abort
        aborter.join();
        const int64_t abortedAt = shared->abortedAtMs.load();
        std::fprintf(stderr, "rank 0: returned %lld ms after loomCommAbort: %s\n",
                     static_cast<long long>(returnedAt - abortedAt), error.c_str());
        LOOM_REQUIRE(result != loomSuccess, "the collective succeeded without its peer");
        LOOM_REQUIRE(error.find("abort") != std::string::npos,
                     "the error does not say it was aborted: " + error);
        LOOM_REQUIRE(
            abortedAt != 0 && returnedAt - abortedAt < 1000,
            "returned " + std::to_string(returnedAt - abortedAt) + " ms after loomCommAbort");
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

loomResult_t largeAllReduce(loomComm_t comm, float* data) {
  return loomAllReduce(data, data, kLargeCount, loomFloat32, loomSum, comm, nullptr);
}
loomResult_t smallAllReduce(loomComm_t comm, float* data) {
  return loomAllReduce(data, data, 16, loomFloat32, loomSum, comm, nullptr);
}

TEST(Abort, UnblocksAShmRingCollectiveWithinOneSecond) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}});
  expectAbortUnblocks(largeAllReduce);
}

TEST(Abort, UnblocksATcpCollectiveWithinOneSecond) {
  ScopedEnv env(EnvList{{"LOOM_SHM_DISABLE", "1"}});
  expectAbortUnblocks(largeAllReduce);
}

TEST(Abort, UnblocksADirectCollectiveWithinOneSecond) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}});
  expectAbortUnblocks(smallAllReduce);
}

}  // namespace
}  // namespace loom::test
