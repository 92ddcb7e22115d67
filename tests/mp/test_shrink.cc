// SPDX-License-Identifier: Apache-2.0
// loomCommShrink and loomCommRevoke (issue 5):
// - a training-style loop of all-reduces on 4 ranks loses rank 3 to SIGKILL; the survivors see
//   the error, shrink with LOOM_SHRINK_ABORT and finish the loop on 3 ranks with exact results
//   (over shared memory and over TCP); nothing is left in /dev/shm;
// - shrinking away a live rank, rank 0 included (the parent's bootstrap root);
// - survivors that disagree on the exclude list fail (loomInvalidUsage names the disagreement)
//   instead of forming two communicators;
// - revoke stops a call in flight, refuses later ones, and still lets the ranks shrink;
// - bad arguments.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket_bootstrap.h"
#include "loom.h"
#include "tests/support/multiprocess.h"
#include "tests/support/test_env.h"

namespace loom::test {
namespace {

std::string lastError(loomComm_t comm, loomResult_t rc) {
  return std::string(loomGetErrorString(rc)) + ": " + loomGetLastError(comm);
}

constexpr size_t kParameters = 200003;  // odd: pieces and segments do not divide it evenly

// The gradient a member contributes at a step: small integers, so float sums are exact.
float gradient(int step, int member, size_t i) {
  return static_cast<float>((step * 7 + member * 3 + static_cast<int>(i % 13)) % 17 - 8);
}

// One step of the loop: all-reduce the gradient of `member` (the rank's identity, which does
// not change when the communicator does) and check the sum over `members` exactly.
loomResult_t trainStep(loomComm_t comm, int step, int member, const std::vector<int>& members,
                       std::vector<float>& grad, std::vector<float>& sum) {
  for (size_t i = 0; i < kParameters; ++i) grad[i] = gradient(step, member, i);
  const loomResult_t rc = loomAllReduce(grad.data(), sum.data(), kParameters, loomFloat32, loomSum, comm, nullptr);
  if (rc != loomSuccess) return rc;
  for (size_t i = 0; i < kParameters; ++i) {
    float expected = 0;
    for (int m : members) expected += gradient(step, m, i);
    LOOM_REQUIRE(sum[i] == expected, "step " + std::to_string(step) + " element " + std::to_string(i) + ": " +
                                         std::to_string(sum[i]) + ", expected " + std::to_string(expected));
  }
  return loomSuccess;
}

// Rank 3 dies at step 10 of 30; the others shrink and go on.
void killShrinkAndContinue() {
  constexpr int kRanks = 4, kVictim = 3, kDeathStep = 10, kSteps = 30;
  auto* commUid = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(commUid, MAP_FAILED);
  const auto outcomes = runRanksWithUniqueId(
      kRanks,
      [&](int rank, const loomUniqueId& id) {
        commUid->store(decodeUniqueId(id).commUid);
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, kRanks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        std::vector<float> grad(kParameters), sum(kParameters);
        std::vector<int> members{0, 1, 2, 3};
        int step = 0;
        for (; step < kDeathStep; ++step) {
          const loomResult_t rc = trainStep(comm, step, rank, members, grad, sum);
          LOOM_REQUIRE(rc == loomSuccess, "step " + std::to_string(step) + ": " + lastError(comm, rc));
        }
        if (rank == kVictim) raise(SIGKILL);
        // The survivors' step-10 call fails once they notice the death.
        const loomResult_t failed = trainStep(comm, step, rank, members, grad, sum);
        LOOM_REQUIRE(failed != loomSuccess, "rank " + std::to_string(rank) + ": step 10 succeeded without rank 3");
        const std::string error = loomGetLastError(comm);
        LOOM_REQUIRE(error.find("rank 3") != std::string::npos, "the error does not name rank 3: " + error);

        int excluded[] = {kVictim};
        loomComm_t survivors = nullptr;
        loomResult_t rc = loomCommShrink(comm, excluded, 1, &survivors, nullptr, LOOM_SHRINK_ABORT);
        LOOM_REQUIRE(rc == loomSuccess, "shrink: " + lastError(comm, rc));
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy of the parent");
        int size = 0, newRank = -1;
        LOOM_REQUIRE(loomCommCount(survivors, &size) == loomSuccess && size == 3, "size " + std::to_string(size));
        LOOM_REQUIRE(loomCommUserRank(survivors, &newRank) == loomSuccess && newRank == rank,
                     "rank " + std::to_string(rank) + " became " + std::to_string(newRank));
        members = {0, 1, 2};
        for (; step < kSteps; ++step) {  // the failed step again, then the rest
          rc = trainStep(survivors, step, rank, members, grad, sum);
          LOOM_REQUIRE(rc == loomSuccess, "after shrink, step " + std::to_string(step) + ": " + lastError(survivors, rc));
        }
        LOOM_REQUIRE(loomCommFinalize(survivors) == loomSuccess, lastError(survivors, loomSuccess));
        LOOM_REQUIRE(loomCommDestroy(survivors) == loomSuccess, "destroy");
      },
      120);
  for (const RankOutcome& outcome : outcomes) {
    if (outcome.rank == kVictim) {
      EXPECT_EQ(outcome.signal, SIGKILL) << outcome.describe();
    } else {
      EXPECT_TRUE(outcome.ok()) << outcome.describe();
    }
  }
  const std::vector<std::string> left = shmNamesOf(commUid->load());
  EXPECT_TRUE(left.empty()) << left.size() << " names left in /dev/shm, e.g. " << (left.empty() ? "" : left[0]);
  munmap(commUid, sizeof(std::atomic<uint64_t>));
}

TEST(Shrink, KillOneRankShrinkAndContinueOverSharedMemory) { killShrinkAndContinue(); }

TEST(Shrink, KillOneRankShrinkAndContinueOverTcp) {
  ScopedEnv env("LOOM_SHM_DISABLE", "1");
  killShrinkAndContinue();
}

TEST(Shrink, KillOneRankShrinkAndContinueOverTheShmRing) {
  ScopedEnv env("LOOM_ALGO", "ring");
  killShrinkAndContinue();
}

// Rank 0, the parent's bootstrap root, is excluded while alive; it takes no part.
TEST(Shrink, ExcludingALiveRankZero) {
  constexpr int kRanks = 4;
  const auto outcomes = runRanksWithUniqueId(
      kRanks,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, kRanks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        std::vector<float> grad(kParameters), sum(kParameters);
        LOOM_REQUIRE(trainStep(comm, 0, rank, {0, 1, 2, 3}, grad, sum) == loomSuccess, loomGetLastError(comm));
        if (rank != 0) {
          int excluded[] = {0};
          loomComm_t child = nullptr;
          const loomResult_t rc = loomCommShrink(comm, excluded, 1, &child, nullptr, LOOM_SHRINK_DEFAULT);
          LOOM_REQUIRE(rc == loomSuccess, "shrink: " + lastError(comm, rc));
          int newRank = -1;
          loomCommUserRank(child, &newRank);
          LOOM_REQUIRE(newRank == rank - 1, "rank " + std::to_string(rank) + " became " + std::to_string(newRank));
          for (int step = 1; step < 4; ++step) {
            LOOM_REQUIRE(trainStep(child, step, rank, {1, 2, 3}, grad, sum) == loomSuccess, loomGetLastError(child));
          }
          LOOM_REQUIRE(loomCommDestroy(child) == loomSuccess, "destroy child");
        }
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy parent");
      },
      120);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// Ranks 0 and 1 exclude rank 3, rank 2 excludes rank 1: rank 2 must learn of the disagreement
// from rank 0's offer and fail with loomInvalidUsage; the others fail (timeout) rather than hang.
TEST(Shrink, DisagreeingExcludeListsFail) {
  ScopedEnv timeout("LOOM_TIMEOUT_MS", "3000");
  constexpr int kRanks = 4;
  const auto outcomes = runRanksWithUniqueId(
      kRanks,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, kRanks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        if (rank == 3) {
          std::this_thread::sleep_for(std::chrono::seconds(1));
          loomCommDestroy(comm);
          return;
        }
        int excluded[] = {rank == 2 ? 1 : 3};
        loomComm_t child = nullptr;
        const loomResult_t rc = loomCommShrink(comm, excluded, 1, &child, nullptr, LOOM_SHRINK_DEFAULT);
        const std::string error = loomGetLastError(comm);
        std::fprintf(stderr, "rank %d: %s\n", rank, lastError(comm, rc).c_str());
        LOOM_REQUIRE(rc != loomSuccess && child == nullptr, "rank " + std::to_string(rank) + ": shrink succeeded");
        if (rank == 2) {
          LOOM_REQUIRE(rc == loomInvalidUsage && error.find("disagree") != std::string::npos,
                       "rank 2: " + lastError(comm, rc));
        }
        loomCommAbort(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// Rank 1 does not join the all-reduce: rank 0 is stuck in it until it revokes from another
// thread. Then both shrink with nobody excluded and work on.
TEST(Revoke, StopsACallInFlightAndStillShrinks) {
  const auto outcomes = runRanksWithUniqueId(
      2,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess, loomGetLastError(nullptr));
        std::vector<float> grad(kParameters), sum(kParameters);
        if (rank == 0) {
          std::atomic<int> result{-1};
          std::atomic<int64_t> returnedAtMs{0};
          auto nowMs = [] {
            return std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                .count();
          };
          std::thread stuck([&] {
            result = loomAllReduce(grad.data(), sum.data(), kParameters, loomFloat32, loomSum, comm, nullptr);
            returnedAtMs = nowMs();
          });
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          loomResult_t state = loomSuccess;
          LOOM_REQUIRE(loomCommGetAsyncError(comm, &state) == loomSuccess && state == loomSuccess, "before revoke");
          const int64_t revokedAt = nowMs();
          LOOM_REQUIRE(loomCommRevoke(comm, LOOM_REVOKE_DEFAULT) == loomSuccess, loomGetLastError(comm));
          stuck.join();
          LOOM_REQUIRE(result.load() != loomSuccess, "the stuck call succeeded");
          LOOM_REQUIRE(returnedAtMs.load() - revokedAt < 1000,
                       "returned " + std::to_string(returnedAtMs.load() - revokedAt) + " ms after revoke");
          LOOM_REQUIRE(loomCommGetAsyncError(comm, &state) == loomSuccess && state == loomSuccess,
                       "quiescent revoked communicator reports " + std::to_string(state));
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          LOOM_REQUIRE(loomCommRevoke(comm, LOOM_REVOKE_DEFAULT) == loomSuccess, loomGetLastError(comm));
        }
        const loomResult_t refused =
            loomAllReduce(grad.data(), sum.data(), kParameters, loomFloat32, loomSum, comm, nullptr);
        LOOM_REQUIRE(refused == loomInvalidUsage && std::string(loomGetLastError(comm)).find("revoked") != std::string::npos,
                     "call after revoke: " + lastError(comm, refused));
        LOOM_REQUIRE(loomCommFinalize(comm) == loomInvalidUsage, "finalize after revoke must be refused");
        loomComm_t fresh = nullptr;
        const loomResult_t rc = loomCommShrink(comm, nullptr, 0, &fresh, nullptr, LOOM_SHRINK_DEFAULT);
        LOOM_REQUIRE(rc == loomSuccess, "shrink after revoke: " + lastError(comm, rc));
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy revoked");
        for (int step = 0; step < 3; ++step) {
          LOOM_REQUIRE(trainStep(fresh, step, rank, {0, 1}, grad, sum) == loomSuccess, loomGetLastError(fresh));
        }
        LOOM_REQUIRE(loomCommDestroy(fresh) == loomSuccess, "destroy");
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(Shrink, BadArgumentsAreRefused) {
  loomComm_t comms[2] = {};
  ASSERT_EQ(loomCommInitAll(comms, 2, nullptr), loomSuccess);
  loomComm_t child = reinterpret_cast<loomComm_t>(0x1);
  int self[] = {0}, outside[] = {7}, negative[] = {-1};
  // The function's name once, in front (api::guarded puts it there).
  const auto namedOnce = [](const std::string& text) {
    return text.rfind("loomCommShrink: ", 0) == 0 && text.find("loomCommShrink", 1) == std::string::npos;
  };
  EXPECT_EQ(loomCommShrink(comms[0], self, 1, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(comms[0])).find("calling rank"), std::string::npos);
  EXPECT_TRUE(namedOnce(loomGetLastError(comms[0]))) << loomGetLastError(comms[0]);
  EXPECT_EQ(child, nullptr);
  EXPECT_EQ(loomCommShrink(comms[0], outside, 1, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(comms[0])).find("excluded rank 7 is not in [0, 2)"), std::string::npos);
  EXPECT_TRUE(namedOnce(loomGetLastError(comms[0]))) << loomGetLastError(comms[0]);
  EXPECT_EQ(loomCommShrink(comms[0], negative, 1, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(comms[0], nullptr, 1, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(comms[0], outside, -1, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(comms[0], outside, 2, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(comms[0], nullptr, 0, &child, nullptr, 5), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(comms[0], nullptr, 0, nullptr, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommShrink(nullptr, nullptr, 0, &child, nullptr, 0), loomInvalidArgument);
  EXPECT_EQ(loomCommRevoke(comms[0], 3), loomInvalidArgument);
  EXPECT_EQ(loomCommRevoke(nullptr, 0), loomInvalidArgument);
  // Nothing was lost: the communicators still work.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      float value = 1.f, result = 0.f;
      if (loomAllReduce(&value, &result, 1, loomFloat32, loomSum, comms[r], nullptr) != loomSuccess || result != 2.f)
        ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (loomComm_t comm : comms) loomCommDestroy(comm);
}

}  // namespace
}  // namespace loom::test
