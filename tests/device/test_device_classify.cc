// SPDX-License-Identifier: Apache-2.0
// What classifying a call's buffers costs: at most one pointer query per buffer per call. The
// in-place forms pass one buffer twice (send == recv, or all-gather's send inside its recv):
// the second pointer takes the first query's answer. Counted through the emulated runtime.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
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
  // All-gather in place: this rank's block of the receive buffer (rank 0 of 1: its start, and
  // one element in to make it a different pointer into the same allocation).
  EXPECT_EQ(queriesOf([&] { return loomAllGather(recv + 1, recv + 1, kCount - 1, loomFloat32, comm, nullptr); }), 1u);
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

}  // namespace
}  // namespace loom::test::device
