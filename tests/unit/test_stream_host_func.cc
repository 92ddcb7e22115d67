// SPDX-License-Identifier: Apache-2.0
// loomLaunchHostFunc: a host function runs on the stream's thread after everything enqueued
// before it, and before anything enqueued after it; on the NULL stream it runs at once. This is
// what loom_torch completes its work objects with, so the ordering is the contract tested here.
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

class StreamHostFuncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    setenv("LOOM_TIMEOUT_MS", "20000", 1);
  }
  void TearDown() override { unsetenv("LOOM_TIMEOUT_MS"); }
};

// What one host function saw when it ran: its position among the host functions, and
// whether the call enqueued just before it had written its output.
struct Observation {
  const std::vector<double>* output = nullptr;
  double expected = 0;
  std::atomic<int>* order = nullptr;
  int position = -1;
  bool sawOutput = false;
  std::thread::id thread;
};

void observe(void* data) {
  auto* seen = static_cast<Observation*>(data);
  seen->position = (*seen->order)++;
  seen->sawOutput = true;
  for (double value : *seen->output) seen->sawOutput = seen->sawOutput && value == seen->expected;
  seen->thread = std::this_thread::get_id();
}

// One rank: hop k copies hop k-1 (an all-reduce of one rank), and a host function after each
// hop checks that hop's output is already there. The functions run in order, off the caller's
// thread, each after its call.
TEST_F(StreamHostFuncTest, RunsAfterThePrecedingCallsInOrder) {
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  loomStream_t stream = nullptr;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  constexpr int kHops = 30;
  constexpr size_t kCount = 50021;
  std::vector<std::vector<double>> hops(kHops + 1, std::vector<double>(kCount, -1.0));
  hops[0].assign(kCount, 3.5);
  std::atomic<int> order{0};
  std::vector<Observation> seen(kHops + 1);
  for (int k = 1; k <= kHops; ++k) {
    ASSERT_EQ(loomAllReduce(hops[k - 1].data(), hops[k].data(), kCount, loomFloat64, loomSum, comm, stream),
              loomSuccess)
        << loomGetLastError(comm);
    seen[k].output = &hops[k];
    seen[k].expected = 3.5;
    seen[k].order = &order;
    ASSERT_EQ(loomLaunchHostFunc(stream, observe, &seen[k]), loomSuccess) << loomGetLastError(nullptr);
  }
  ASSERT_EQ(loomStreamSynchronize(stream), loomSuccess) << loomGetLastError(comm);
  for (int k = 1; k <= kHops; ++k) {
    EXPECT_EQ(seen[k].position, k - 1) << "host function " << k;
    EXPECT_TRUE(seen[k].sawOutput) << "host function " << k << " ran before its call's output was written";
    EXPECT_NE(seen[k].thread, std::this_thread::get_id()) << "a stream's host function ran on the caller";
  }
  EXPECT_EQ(loomStreamDestroy(stream), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

// Two ranks as threads. Rank 0 enqueues an all-reduce and a host function before rank 1 has
// done anything: the function must not run until the collective has completed with rank 1.
TEST_F(StreamHostFuncTest, WaitsForACollectiveThePeerHasNotJoined) {
  loomComm_t comms[2] = {};
  ASSERT_EQ(loomCommInitAll(comms, 2, nullptr), loomSuccess) << loomGetLastError(nullptr);
  constexpr size_t kCount = 4099;
  std::vector<double> data[2] = {std::vector<double>(kCount, 1.0), std::vector<double>(kCount, 2.0)};
  std::atomic<int> order{0};
  Observation seen;
  seen.output = &data[0];
  seen.expected = 3.0;
  seen.order = &order;
  loomStream_t stream = nullptr;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  ASSERT_EQ(loomAllReduce(data[0].data(), data[0].data(), kCount, loomFloat64, loomSum, comms[0], stream), loomSuccess);
  ASSERT_EQ(loomLaunchHostFunc(stream, observe, &seen), loomSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(order.load(), 0) << "the host function ran before the collective could complete";
  std::thread rank1([&] {
    EXPECT_EQ(loomAllReduce(data[1].data(), data[1].data(), kCount, loomFloat64, loomSum, comms[1], nullptr),
              loomSuccess);
  });
  rank1.join();
  ASSERT_EQ(loomStreamSynchronize(stream), loomSuccess) << loomGetLastError(comms[0]);
  EXPECT_EQ(seen.position, 0);
  EXPECT_TRUE(seen.sawOutput) << "the host function did not see the reduced data";
  EXPECT_EQ(loomStreamDestroy(stream), loomSuccess);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

void count(void* data) { ++*static_cast<std::atomic<int>*>(data); }

TEST_F(StreamHostFuncTest, NullStreamRunsAtOnceOnTheCaller) {
  std::atomic<int> calls{0};
  ASSERT_EQ(loomLaunchHostFunc(nullptr, count, &calls), loomSuccess);
  EXPECT_EQ(calls.load(), 1);
}

// A host function that synchronizes its own stream would wait for itself: it gets
// loomInvalidUsage instead, and the stream goes on.
struct SelfSync {
  loomStream_t stream = nullptr;
  loomResult_t result = loomSuccess;
};

void synchronizeOwnStream(void* data) {
  auto* self = static_cast<SelfSync*>(data);
  self->result = loomStreamSynchronize(self->stream);
}

TEST_F(StreamHostFuncTest, SynchronizingItsOwnStreamIsRefusedNotAHang) {
  SelfSync self;
  ASSERT_EQ(loomStreamCreate(&self.stream), loomSuccess);
  std::atomic<int> calls{0};
  ASSERT_EQ(loomLaunchHostFunc(self.stream, synchronizeOwnStream, &self), loomSuccess);
  ASSERT_EQ(loomLaunchHostFunc(self.stream, count, &calls), loomSuccess);
  EXPECT_EQ(loomStreamSynchronize(self.stream), loomSuccess);
  EXPECT_EQ(self.result, loomInvalidUsage);
  EXPECT_EQ(calls.load(), 1) << "the stream stopped after the refused synchronize";
  EXPECT_EQ(loomStreamDestroy(self.stream), loomSuccess);
}

TEST_F(StreamHostFuncTest, BadArgumentsAreRefused) {
  loomStream_t stream = nullptr;
  ASSERT_EQ(loomStreamCreate(&stream), loomSuccess);
  std::atomic<int> calls{0};
  EXPECT_EQ(loomLaunchHostFunc(stream, nullptr, &calls), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("fn is NULL"), std::string::npos) << loomGetLastError(nullptr);

  // Inside a group the function would run before the group's calls reach the stream.
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  EXPECT_EQ(loomLaunchHostFunc(stream, count, &calls), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("loomGroupEnd"), std::string::npos) << loomGetLastError(nullptr);
  EXPECT_NE(loomGroupEnd(), loomSuccess) << "an error inside a group fails the group";

  EXPECT_EQ(loomStreamSynchronize(stream), loomSuccess);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(loomStreamDestroy(stream), loomSuccess);
  EXPECT_EQ(loomLaunchHostFunc(stream, count, &calls), loomInvalidArgument) << "a destroyed stream";
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
