// SPDX-License-Identifier: Apache-2.0
// Regressions from review: ordering of calls across threads, groups over several
// communicators and streams, failures inside groups, lifetime with queued stream work,
// sticky errors after a failed collective, and abort or revoke from another thread, also of a
// call that waits for its turn.
#include <gtest/gtest.h>
#include <loom.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/test_env.h"

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Clique {
  explicit Clique(int n) : comms(n) { EXPECT_EQ(loomCommInitAll(comms.data(), n, nullptr), loomSuccess); }
  ~Clique() {
    for (loomComm_t comm : comms) loomCommDestroy(comm);
  }
  std::vector<loomComm_t> comms;
};

TEST(CallOrder, StreamThenNullStreamRunInIssueOrder) {
  // Each rank issues A on its stream, then B on the NULL stream. Both ranks must execute A
  // before B; otherwise one rank's A meets the other's B and both results are mixed.
  Clique clique(2);
  for (int iteration = 0; iteration < 30; ++iteration) {
    float gotA[2] = {}, gotB[2] = {};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        loomStream_t stream;
        ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
        std::vector<float> a(4096, r + 1.f), ra(4096), b(4096, 10.f * (r + 1)), rb(4096);
        EXPECT_EQ(loomAllReduce(a.data(), ra.data(), a.size(), loomFloat32, loomSum, clique.comms[r], stream), loomSuccess);
        EXPECT_EQ(loomAllReduce(b.data(), rb.data(), b.size(), loomFloat32, loomSum, clique.comms[r], nullptr), loomSuccess);
        EXPECT_EQ(loomStreamSynchronize(stream), loomSuccess);
        loomStreamDestroy(stream);
        gotA[r] = ra[0];
        gotB[r] = rb[0];
      });
    }
    for (auto& thread : threads) thread.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(gotA[r], 3.f) << "iteration " << iteration << " rank " << r;
      ASSERT_EQ(gotB[r], 30.f) << "iteration " << iteration << " rank " << r;
    }
  }
}

TEST(Groups, SeveralCommsOnOneStreamDoNotDeadlock) {
  Clique clique(2);
  std::vector<float> input(1024, 1.f), out0(1024), out1(1024);
  loomStream_t stream;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  const auto start = Clock::now();
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomAllReduce(input.data(), out0.data(), 1024, loomFloat32, loomSum, clique.comms[0], stream), loomSuccess);
  ASSERT_EQ(loomAllReduce(input.data(), out1.data(), 1024, loomFloat32, loomSum, clique.comms[1], stream), loomSuccess);
  ASSERT_EQ(loomGroupEnd(), loomSuccess);
  EXPECT_EQ(loomStreamSynchronize(stream), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(out0[1023], 2.f);
  EXPECT_EQ(out1[0], 2.f);
  loomStreamDestroy(stream);
}

TEST(Groups, AnInvalidCallFailsTheGroupAndNothingRuns) {
  Clique clique(2);
  std::vector<float> input(1024, 1.f), out0(1024, -1.f), out1(1024, -1.f);
  const auto start = Clock::now();
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  EXPECT_EQ(loomAllReduce(input.data(), out0.data(), 1024, loomFloat32, loomSum, clique.comms[0], nullptr), loomSuccess);
  EXPECT_EQ(loomAllReduce(input.data(), out1.data(), 1024, loomFloat32, static_cast<loomRedOp_t>(9), clique.comms[1], nullptr),
            loomInvalidArgument);
  EXPECT_EQ(loomGroupEnd(), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("op"), std::string::npos) << loomGetLastError(nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(out0[0], -1.f) << "a call of a failed group ran";
  // The communicators are still fine afterwards.
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  loomAllReduce(input.data(), out0.data(), 1024, loomFloat32, loomSum, clique.comms[0], nullptr);
  loomAllReduce(input.data(), out1.data(), 1024, loomFloat32, loomSum, clique.comms[1], nullptr);
  EXPECT_EQ(loomGroupEnd(), loomSuccess);
  EXPECT_EQ(out0[0], 2.f);
}

// An init inside a group is queued and connected at the group's end (test_group_init); one
// whose other rank never comes fails there within the timeout, never hangs.
TEST(Groups, InitInsideAGroupWhosePeerNeverComesFailsNotHung) {
  setenv("LOOM_TIMEOUT_MS", "1500", 1);
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitRank(&comm, 2, id, 0), loomSuccess);
  EXPECT_NE(comm, nullptr);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(loomGroupEnd(), loomSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("missing: 1"), std::string::npos) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  unsetenv("LOOM_TIMEOUT_MS");
}

TEST(Lifetime, DestroyWithQueuedStreamWorkIsSafe) {
  loomComm_t comm;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess);
  loomStream_t stream;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  std::vector<float> input(1 << 20, 1.f), output(1 << 20);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(loomAllReduce(input.data(), output.data(), input.size(), loomFloat32, loomSum, comm, stream), loomSuccess);
  }
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  EXPECT_EQ(loomStreamSynchronize(stream), loomSuccess);
  EXPECT_EQ(output.back(), 1.f);
  EXPECT_EQ(loomCommDestroy(comm), loomInvalidArgument) << "a second destroy must be refused";
  loomStreamDestroy(stream);
}

TEST(Lifetime, FinalizeWaitsForStreamWork) {
  loomComm_t comm;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess);
  loomStream_t stream;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  std::vector<float> input(1 << 20, 2.f), output(1 << 20);
  ASSERT_EQ(loomAllReduce(input.data(), output.data(), input.size(), loomFloat32, loomSum, comm, stream), loomSuccess);
  EXPECT_EQ(loomCommFinalize(comm), loomSuccess);
  EXPECT_EQ(loomStreamQuery(stream), loomSuccess);
  EXPECT_EQ(output.back(), 2.f);
  loomCommDestroy(comm);
  loomStreamDestroy(stream);
}

TEST(Errors, AFailedCollectiveLeavesTheCommunicatorFailed) {
  // Rank 1 never joins the all-reduce, so rank 0 times out waiting to receive; afterwards rank 0's communicator
  // reports the error instead of mixing stale data into the next call.
  setenv("LOOM_TIMEOUT_MS", "500", 1);
  Clique clique(2);
  unsetenv("LOOM_TIMEOUT_MS");
  std::vector<float> data(1 << 16, 1.f);
  const auto start = Clock::now();
  EXPECT_EQ(loomAllReduce(data.data(), data.data(), data.size(), loomFloat32, loomSum, clique.comms[0], nullptr), loomSystemError);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("rank 0"), std::string::npos) << loomGetLastError(nullptr);
  loomResult_t async = loomSuccess;
  EXPECT_EQ(loomCommGetAsyncError(clique.comms[0], &async), loomSuccess);
  EXPECT_EQ(async, loomSystemError);
  EXPECT_EQ(loomAllReduce(data.data(), data.data(), data.size(), loomFloat32, loomSum, clique.comms[0], nullptr), loomSystemError);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("unusable since"), std::string::npos) << loomGetLastError(nullptr);
}

bool endsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// A call after a failed one is refused with a message of its own: since which call the
// communicator is unusable (its collective, number and size), that it must be made anew, and
// last the failure's own message introduced as that call's, not repeated as if it were new.
// Sends, receives, groups and streams are refused alike; loomCommGetAsyncError keeps the code.
TEST(Errors, ALaterCallNamesTheCallThatFailedAndSaysToRecreate) {
  setenv("LOOM_TIMEOUT_MS", "500", 1);
  Clique clique(2);
  unsetenv("LOOM_TIMEOUT_MS");
  loomComm_t comm = clique.comms[0];
  std::vector<float> data(1 << 16, 1.f);
  ASSERT_EQ(loomAllReduce(data.data(), data.data(), data.size(), loomFloat32, loomSum, comm, nullptr), loomSystemError);
  const std::string prefix = "loomAllReduce: ";
  const std::string failure = loomGetLastError(nullptr);
  ASSERT_EQ(failure.rfind(prefix, 0), 0u) << failure;
  const std::string original = failure.substr(prefix.size());
  ASSERT_NE(original.find("allreduce #1"), std::string::npos) << original;

  const auto expectRefusal = [&](const std::string& text, const std::string& function) {
    SCOPED_TRACE(function);
    EXPECT_EQ(text.rfind(function + ": rank 0: communicator ", 0), 0u) << text;
    EXPECT_NE(text.find(" is unusable since its allreduce #1 (65536 x float32) failed; destroy it (loomCommDestroy) "
                        "and create a new one (after a dead rank, loomCommShrink makes one of the survivors). "),
              std::string::npos)
        << text;
    EXPECT_TRUE(endsWith(text, ". The failure of allreduce #1: " + original)) << text;
    EXPECT_EQ(text.find("earlier error"), std::string::npos) << text;
    EXPECT_EQ(text.find(failure), std::string::npos) << "the old message word for word: " << text;
  };
  EXPECT_EQ(loomAllReduce(data.data(), data.data(), 10, loomFloat32, loomSum, comm, nullptr), loomSystemError);
  expectRefusal(loomGetLastError(nullptr), "loomAllReduce");
  EXPECT_EQ(loomBroadcast(data.data(), data.data(), 10, loomFloat32, 0, comm, nullptr), loomSystemError);
  expectRefusal(loomGetLastError(nullptr), "loomBroadcast");

  // Point-to-point, alone and in a group: the same refusal.
  EXPECT_EQ(loomSend(data.data(), 10, loomFloat32, 1, comm, nullptr), loomSystemError);
  expectRefusal(loomGetLastError(nullptr), "loomSend");
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  EXPECT_EQ(loomSend(data.data(), 10, loomFloat32, 1, comm, nullptr), loomSuccess);
  EXPECT_EQ(loomRecv(data.data() + 10, 10, loomFloat32, 1, comm, nullptr), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomSystemError);
  expectRefusal(loomGetLastError(nullptr), "loomGroupEnd");

  // A stream's call: queued, then refused on the stream's thread.
  loomStream_t stream;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  EXPECT_EQ(loomAllReduce(data.data(), data.data(), 10, loomFloat32, loomSum, comm, stream), loomSuccess);
  EXPECT_EQ(loomStreamSynchronize(stream), loomSystemError);
  expectRefusal(loomGetLastError(nullptr), "loomStreamSynchronize");
  loomStreamDestroy(stream);

  // The communicator's own account: the original code; its message is the latest refusal's,
  // as a thread that made no call of its own reads it.
  loomResult_t async = loomSuccess;
  EXPECT_EQ(loomCommGetAsyncError(comm, &async), loomSuccess);
  EXPECT_EQ(async, loomSystemError);
  std::string fromAnotherThread;
  std::thread([&] { fromAnotherThread = loomGetLastError(comm); }).join();
  EXPECT_EQ(fromAnotherThread.rfind("rank 0: communicator ", 0), 0u) << fromAnotherThread;
  EXPECT_TRUE(endsWith(fromAnotherThread, ". The failure of allreduce #1: " + original)) << fromAnotherThread;
}

TEST(Errors, AbortFromAnotherThreadUnblocksACollective) {
  Clique clique(2);
  std::vector<float> data(1024, 1.f);
  loomResult_t result = loomSuccess;
  const auto start = Clock::now();
  std::thread waiter([&] {
    // Rank 1 never takes part: this waits until aborted.
    result = loomAllReduce(data.data(), data.data(), data.size(), loomFloat32, loomSum, clique.comms[0], nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(loomCommAbort(clique.comms[0]), loomSuccess);
  waiter.join();
  EXPECT_NE(result, loomSuccess);
  EXPECT_LT(secondsSince(start), 2.0);
  clique.comms.erase(clique.comms.begin());  // aborted: not destroyed again
}

// A call waiting for its turn behind an earlier call of the same communicator that cannot
// run yet (queued on a stream stuck in another communicator's call): `stop` from a third
// thread must end the wait at once, not after LOOM_TIMEOUT_MS. Returns how long the waiter
// took after `stop`, and its result.
std::pair<double, loomResult_t> stopATurnWaiter(loomComm_t comm, loomComm_t stuck, const std::function<void()>& stop) {
  loomStream_t stream;
  EXPECT_EQ(loomStreamCreate(&stream), loomSuccess);
  std::vector<float> blocker(1024, 1.f), queued(1024, 1.f), waiting(1024, 1.f);
  // Rank 1 of `stuck` never joins: the stream thread sits in this call until `stuck` is aborted.
  EXPECT_EQ(loomAllReduce(blocker.data(), blocker.data(), 1024, loomFloat32, loomSum, stuck, stream), loomSuccess);
  // Takes `comm`'s first ticket, but runs only after the stuck call.
  EXPECT_EQ(loomAllReduce(queued.data(), queued.data(), 1024, loomFloat32, loomSum, comm, stream), loomSuccess);
  std::atomic<bool> returned{false};
  loomResult_t result = loomSuccess;
  std::thread waiter([&] {
    result = loomAllReduce(waiting.data(), waiting.data(), 1024, loomFloat32, loomSum, comm, nullptr);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the waiter is asleep by now
  EXPECT_FALSE(returned.load()) << "the second call ran before the first";
  const auto start = Clock::now();
  stop();
  waiter.join();
  const double waited = secondsSince(start);
  EXPECT_EQ(loomCommAbort(stuck), loomSuccess);  // frees the stream
  EXPECT_NE(loomStreamSynchronize(stream), loomSuccess);
  loomStreamDestroy(stream);
  return {waited, result};
}

// Generous bounds for an oversubscribed machine; without the wake-up the waiter sleeps 30 s.
constexpr const char* kLongTimeoutMs = "30000";
constexpr double kPromptSeconds = 5.0;

TEST(Errors, RevokeWakesACallWaitingForItsTurn) {
  loom::test::ScopedEnv timeout("LOOM_TIMEOUT_MS", kLongTimeoutMs);
  Clique clique(2), stuck(2);
  const auto [waited, result] =
      stopATurnWaiter(clique.comms[0], stuck.comms[0], [&] { EXPECT_EQ(loomCommRevoke(clique.comms[0], 0), loomSuccess); });
  stuck.comms.erase(stuck.comms.begin());  // aborted: not destroyed again
  EXPECT_LT(waited, kPromptSeconds);
  EXPECT_EQ(result, loomInvalidUsage);
  // Revoking stops calls on purpose: that is not an error of the communicator.
  loomResult_t async = loomInternalError;
  EXPECT_EQ(loomCommGetAsyncError(clique.comms[0], &async), loomSuccess);
  EXPECT_EQ(async, loomSuccess);
}

TEST(Errors, AbortWakesACallWaitingForItsTurn) {
  loom::test::ScopedEnv timeout("LOOM_TIMEOUT_MS", kLongTimeoutMs);
  Clique clique(2), stuck(2);
  const auto [waited, result] =
      stopATurnWaiter(clique.comms[0], stuck.comms[0], [&] { EXPECT_EQ(loomCommAbort(clique.comms[0]), loomSuccess); });
  stuck.comms.erase(stuck.comms.begin());
  clique.comms.erase(clique.comms.begin());
  EXPECT_LT(waited, kPromptSeconds);
  EXPECT_EQ(result, loomInvalidUsage);
}

}  // namespace
