// SPDX-License-Identifier: Apache-2.0
// Loom streams: collectives enqueued on a stream return at once and run in order on the stream's
// thread; loomStreamQuery tells idle from busy; loomStreamSynchronize waits and then every result
// is there, in order (each call below depends on the previous one's output).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"

namespace {

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    // If enqueueing blocked (ran the collective on the caller's thread), the two-rank test
    // would deadlock; a bounded wait turns that into a failure.
    setenv("LOOM_TIMEOUT_MS", "20000", 1);
  }
  void TearDown() override { unsetenv("LOOM_TIMEOUT_MS"); }
};

TEST_F(StreamTest, FreshStreamIsIdle) {
  loomStream_t stream = nullptr;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess) << loomGetLastError(nullptr);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(loomStreamQuery(stream), loomSuccess);
  EXPECT_EQ(loomStreamSynchronize(stream), loomSuccess);
  EXPECT_EQ(loomStreamDestroy(stream), loomSuccess);
}

// One rank: a chain of out-of-place calls, hop k reading hop k-1's output. Run out of order,
// some hop would read the sentinel its input buffer was filled with.
TEST_F(StreamTest, OneRankChainRunsInOrder) {
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  loomStream_t stream = nullptr;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);

  constexpr int kHops = 40;
  constexpr size_t kCount = 100003;
  std::vector<std::vector<double>> hops(kHops + 1, std::vector<double>(kCount, -7.0));
  for (size_t i = 0; i < kCount; ++i) hops[0][i] = double(i) * 0.25;
  for (int k = 1; k <= kHops; ++k) {
    const double* in = hops[k - 1].data();
    double* out = hops[k].data();
    loomResult_t rc = loomSuccess;
    switch (k % 4) {  // every collective kind; with one rank each is a copy
      case 0:
        rc = loomAllReduce(in, out, kCount, loomFloat64, loomSum, comm, stream);
        break;
      case 1:
        rc = loomAllGather(in, out, kCount, loomFloat64, comm, stream);
        break;
      case 2:
        rc = loomBroadcast(in, out, kCount, loomFloat64, 0, comm, stream);
        break;
      case 3:
        rc = loomReduce(in, out, kCount, loomFloat64, loomMax, 0, comm, stream);
        break;
    }
    ASSERT_EQ(rc, loomSuccess) << "hop " << k << ": " << loomGetLastError(comm);
  }
  const loomResult_t query = loomStreamQuery(stream);
  EXPECT_TRUE(query == loomInProgress || query == loomSuccess) << loomGetErrorString(query);
  ASSERT_EQ(loomStreamSynchronize(stream), loomSuccess) << loomGetLastError(comm);
  EXPECT_EQ(loomStreamQuery(stream), loomSuccess);
  for (int k = 1; k <= kHops; ++k) {
    ASSERT_EQ(hops[k], hops[0]) << "hop " << k << " did not see hop " << k - 1 << "'s output";
  }
  loomResult_t async = loomInternalError;
  EXPECT_EQ(loomCommGetAsyncError(comm, &async), loomSuccess);
  EXPECT_EQ(async, loomSuccess);
  EXPECT_EQ(loomStreamDestroy(stream), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

// Two ranks as threads, each with its own stream. Rank 0 enqueues all its work BEFORE rank 1
// does anything: the calls can only return because they are queued (their collectives cannot
// complete without rank 1), and the stream must report loomInProgress meanwhile.
TEST_F(StreamTest, TwoRanksEnqueueReturnsBeforeThePeerJoins) {
  loomComm_t comms[2] = {};
  ASSERT_EQ(loomCommInitAll(comms, 2, nullptr), loomSuccess) << loomGetLastError(nullptr);

  constexpr int kCalls = 20;
  constexpr size_t kCount = 5003;
  std::vector<int64_t> data[2];
  std::atomic<bool> rankZeroQueued{false};
  std::string failure[2];

  auto rankBody = [&](int rank) {
    auto fail = [&](const std::string& what) { failure[rank] += what + "; "; };
    if (rank == 1) {  // (gives up waiting after 10 s so that a blocking enqueue fails, not hangs)
      const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!rankZeroQueued && std::chrono::steady_clock::now() < giveUp) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    loomStream_t stream = nullptr;
    if (loomStreamCreate(&stream) != loomSuccess) return fail("loomStreamCreate");
    std::vector<int64_t>& x = data[rank];
    x.resize(kCount);
    for (size_t i = 0; i < kCount; ++i) x[i] = int64_t(rank + 1) * int64_t(i + 1);
    // In place, call k sums the outputs of call k-1: x doubles each time after the first.
    for (int k = 0; k < kCalls; ++k) {
      const loomResult_t rc =
          loomAllReduce(x.data(), x.data(), kCount, loomInt64, loomSum, comms[rank], stream);
      if (rc != loomSuccess)
        fail("enqueue " + std::to_string(k) + ": " + loomGetLastError(nullptr));
    }
    if (rank == 0) {
      const loomResult_t query = loomStreamQuery(stream);
      if (query != loomInProgress) {
        fail(std::string("query before the peer joined: ") + loomGetErrorString(query));
      }
      rankZeroQueued = true;
    } else {
      const loomResult_t query = loomStreamQuery(stream);
      if (query != loomInProgress && query != loomSuccess) fail("query on rank 1");
    }
    const loomResult_t rc = loomStreamSynchronize(stream);
    if (rc != loomSuccess) fail(std::string("synchronize: ") + loomGetLastError(nullptr));
    if (loomStreamQuery(stream) != loomSuccess) fail("not idle after synchronize");
    if (loomStreamDestroy(stream) != loomSuccess) fail("loomStreamDestroy");
  };
  std::thread rank0(rankBody, 0), rank1(rankBody, 1);
  rank0.join();
  rank1.join();
  EXPECT_EQ(failure[0], "");
  EXPECT_EQ(failure[1], "");
  // After the first call: 3 * (i + 1); each further call doubles it.
  const int64_t factor = 3 * (int64_t(1) << (kCalls - 1));
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(data[rank].size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(data[rank][i], factor * int64_t(i + 1)) << "rank " << rank << " element " << i;
    }
  }
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

// Two ranks, both streams busy at once with mixed collectives; then a synchronous (NULL
// stream) call on the same communicators sees everything the streams did.
TEST_F(StreamTest, TwoRanksMixedWorkThenSynchronousCall) {
  loomComm_t comms[2] = {};
  ASSERT_EQ(loomCommInitAll(comms, 2, nullptr), loomSuccess) << loomGetLastError(nullptr);
  constexpr size_t kCount = 1001;
  std::vector<float> gathered[2], reduced[2];
  std::string failure[2];
  auto rankBody = [&](int rank) {
    loomStream_t stream = nullptr;
    if (loomStreamCreate(&stream) != loomSuccess) {
      failure[rank] = "loomStreamCreate";
      return;
    }
    std::vector<float> mine(kCount);
    for (size_t i = 0; i < kCount; ++i) mine[i] = float(rank * 10000 + int(i));
    gathered[rank].assign(2 * kCount, -1);
    reduced[rank].assign(kCount, -1);
    loomComm_t comm = comms[rank];
    bool ok = loomAllGather(mine.data(), gathered[rank].data(), kCount, loomFloat32, comm,
                            stream) == loomSuccess;
    // Reduce-scatter of the gathered data (it must be complete when this runs): rank r gets
    // 2 * (r's chunk of the gather) = 2 * (rank r's input).
    ok = ok && loomReduceScatter(gathered[rank].data(), reduced[rank].data(), kCount, loomFloat32,
                                 loomSum, comm, stream) == loomSuccess;
    ok = ok && loomStreamSynchronize(stream) == loomSuccess;
    // Synchronous call after the stream drained: in place, root 1.
    ok = ok && loomBroadcast(reduced[rank].data(), reduced[rank].data(), kCount, loomFloat32, 1,
                             comm, nullptr) == loomSuccess;
    ok = ok && loomStreamDestroy(stream) == loomSuccess;
    if (!ok) failure[rank] = loomGetLastError(comm);
  };
  std::thread rank0(rankBody, 0), rank1(rankBody, 1);
  rank0.join();
  rank1.join();
  ASSERT_EQ(failure[0], "");
  ASSERT_EQ(failure[1], "");
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < 2 * kCount; ++i) {
      ASSERT_EQ(gathered[rank][i], float((i / kCount) * 10000 + i % kCount)) << rank << " " << i;
    }
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(reduced[rank][i], 2.0f * float(10000 + int(i))) << rank << " " << i;
    }
  }
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

}  // namespace
