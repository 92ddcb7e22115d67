// SPDX-License-Identifier: Apache-2.0
// What classifying a call's buffers costs: at most one pointer query per buffer per call. The
// in-place forms pass one buffer twice (send == recv; all-gather's send at rank * count into its
// recv, reduce-scatter's recv into its send): the second pointer takes the first query's answer.
// Counted through the emulated runtime; the 2-rank in-place forms on threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device/device_select.h"
#include "device/emulated_runtime.h"
#include "loom.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

uint64_t queriesOf(const std::function<loomResult_t()>& call) {
  const uint64_t before = loom::device::emulatedClassifyCallsForTesting();
  EXPECT_EQ(call(), loomSuccess) << loomGetLastError(nullptr);
  return loom::device::emulatedClassifyCallsForTesting() - before;
}

TEST(DeviceClassify, OneQueryPerBufferPerCall) {
  DeviceRuntime& runtime = loom::device::processRuntime();
  if (std::string(runtime.name()) != "emulated") GTEST_SKIP() << "counts the emulated runtime's queries";
  const int device = 0;
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, &device), loomSuccess) << loomGetLastError(nullptr);
  constexpr size_t kCount = 1000;
  auto* send = static_cast<float*>(runtime.allocDevice(kCount * sizeof(float)));
  auto* recv = static_cast<float*>(runtime.allocDevice(kCount * sizeof(float)));
  std::vector<float> hostSend(kCount, 1.0f), hostRecv(kCount);

  EXPECT_EQ(queriesOf([&] { return loomAllReduce(send, recv, kCount, loomFloat32, loomSum, comm, nullptr); }), 2u);
  EXPECT_EQ(queriesOf([&] { return loomAllReduce(recv, recv, kCount, loomFloat32, loomSum, comm, nullptr); }), 1u);
  // Any other pointer is asked about, even inside the same allocation (it could be another one
  // of an allocator's segment, freed since).
  EXPECT_EQ(queriesOf([&] { return loomBroadcast(recv, recv + 100, 10, loomFloat32, 0, comm, nullptr); }), 2u);
  EXPECT_EQ(queriesOf([&] { return loomBroadcast(send, recv + 3, 10, loomFloat32, 0, comm, nullptr); }), 2u);
  // Host buffers ask too, while a runtime is active (they might be pinned or managed memory).
  EXPECT_EQ(queriesOf([&] {
              return loomAllReduce(hostSend.data(), hostRecv.data(), kCount, loomFloat32, loomSum, comm, nullptr);
            }),
            2u);
  EXPECT_EQ(queriesOf([&] {
              return loomAllReduce(hostRecv.data(), hostRecv.data(), kCount, loomFloat32, loomSum, comm, nullptr);
            }),
            1u);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  runtime.freeDevice(send);
  runtime.freeDevice(recv);
}

TEST(DeviceClassify, InPlaceAllGatherAndReduceScatterAskOnce) {
  DeviceRuntime& runtime = loom::device::processRuntime();
  if (std::string(runtime.name()) != "emulated") GTEST_SKIP() << "counts the emulated runtime's queries";
  constexpr int kRanks = 2;
  constexpr size_t kCount = 100;
  const std::vector<int> devices(kRanks, 0);
  std::vector<loomComm_t> comms(kRanks);
  ASSERT_EQ(loomCommInitAll(comms.data(), kRanks, devices.data()), loomSuccess) << loomGetLastError(nullptr);
  std::vector<float*> buffers(kRanks);
  for (float*& buffer : buffers) buffer = static_cast<float*>(runtime.allocDevice(kRanks * kCount * sizeof(float)));
  // Rank 1's in-place pointers differ from its buffer's start: the form, not equality, decides.
  const auto run = [&](bool gather) {
    const uint64_t before = loom::device::emulatedClassifyCallsForTesting();
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kRanks; ++rank) {
      threads.emplace_back([&, rank] {
        float* block = buffers[rank] + rank * kCount;
        const loomResult_t result =
            gather ? loomAllGather(block, buffers[rank], kCount, loomFloat32, comms[rank], nullptr)
                   : loomReduceScatter(buffers[rank], block, kCount, loomFloat32, loomSum, comms[rank], nullptr);
        EXPECT_EQ(result, loomSuccess) << loomGetLastError(nullptr);
      });
    }
    for (std::thread& thread : threads) thread.join();
    return loom::device::emulatedClassifyCallsForTesting() - before;
  };
  EXPECT_EQ(run(true), 2u);   // one per rank
  EXPECT_EQ(run(false), 2u);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  for (float* buffer : buffers) runtime.freeDevice(buffer);
}

}  // namespace
}  // namespace loom::test::device
