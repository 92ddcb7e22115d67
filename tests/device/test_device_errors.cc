// SPDX-License-Identifier: Apache-2.0
// What the emulated GPU catches and what Loom says about device buffers it cannot use:
//   - host code that reads a device buffer crashes, and a socket send from one fails with a
//     clear error: the emulation would show a path that forgot to stage;
//   - a buffer of another device, a freed buffer and a count past the buffer's mapped range
//     are argument errors that name the rank, the call and the buffer, and lose nothing: the
//     communicator takes the next call;
//   - without a device runtime, a device buffer is "no CUDA driver: ...", not a crash;
//   - loomCommInitAll binds each rank to its device list's entry and rejects a bad one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "device/device_select.h"
#include "tests/support/device_test_env.h"
#include "tests/support/post_send.h"
#include "tests/support/thread_bootstrap.h"
#include "transport/socket/socket_transport.h"

namespace loom::test::device {
namespace {

DeviceRuntime& runtime() { return loom::device::processRuntime(); }

// One rank on `device` (loomCommInitAll honours the list).
loomComm_t oneRankComm(int device) {
  loomComm_t comm = nullptr;
  const int devices[] = {device};
  EXPECT_EQ(loomCommInitAll(&comm, 1, devices), loomSuccess) << loomGetLastError(nullptr);
  return comm;
}

std::string lastError(loomComm_t comm) { return loomGetLastError(comm); }

TEST(DeviceErrors, HostReadOfADeviceBufferCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts afresh: no runtime threads forked
  EXPECT_DEATH(
      {
        auto* buffer = static_cast<volatile char*>(runtime().allocDevice(4096));
        std::printf("read %d\n", buffer[0]);  // a host read of device memory
      },
      "");
}

TEST(DeviceErrors, SocketSendOfADeviceBufferIsAClearError) {
  void* device = runtime().allocDevice(1 << 16);
  std::string error;
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport =
        transport::createSocketTransport(bootstrap, {1 - rank}, transport::SocketOptions{1, 4096, 20000});
    bootstrap.barrier();
    if (rank == 1) {
      bootstrap.barrier();
      return;
    }
    transport::Connection* connection = transport->connection(1);
    try {
      test::postSend(*connection, device, 1 << 16);  // straight to the socket, no staging
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!connection->sendDone() && std::chrono::steady_clock::now() < deadline) connection->progress();
      error = "the send completed";
    } catch (const Error& caught) {
      error = caught.what();
      EXPECT_EQ(caught.code(), loomInvalidArgument);
    }
    bootstrap.barrier();
  });
  EXPECT_NE(error.find("not host memory"), std::string::npos) << error;
  EXPECT_NE(error.find("EFAULT"), std::string::npos) << error;
  runtime().freeDevice(device);
}

TEST(DeviceErrors, ABufferOfAnotherDeviceIsAnArgumentErrorThatLosesNothing) {
  loomComm_t comm = oneRankComm(1);
  runtime().setCurrentDevice(0);
  void* onDevice0 = runtime().allocDevice(4096);
  runtime().setCurrentDevice(1);
  void* onDevice1 = runtime().allocDevice(4096);
  EXPECT_EQ(loomAllReduce(onDevice0, onDevice1, 16, loomFloat32, loomSum, comm, nullptr), loomInvalidArgument);
  const std::string message = lastError(comm);
  EXPECT_NE(message.find("rank 0: allreduce of 16 x float32: sendbuff"), std::string::npos) << message;
  EXPECT_NE(message.find("is memory of device 0, but this communicator is bound to device 1"), std::string::npos)
      << message;
  // Nothing was lost: the next call runs.
  EXPECT_EQ(loomAllReduce(onDevice1, onDevice1, 16, loomFloat32, loomSum, comm, nullptr), loomSuccess)
      << lastError(comm);
  runtime().setCurrentDevice(0);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  runtime().freeDevice(onDevice0);
  runtime().freeDevice(onDevice1);
}

TEST(DeviceErrors, AFreedBufferIsAnArgumentError) {
  loomComm_t comm = oneRankComm(0);
  void* freed = runtime().allocDevice(4096);
  runtime().freeDevice(freed);
  EXPECT_EQ(loomBroadcast(freed, freed, 8, loomInt32, 0, comm, nullptr), loomInvalidArgument);
  const std::string message = lastError(comm);
  EXPECT_NE(message.find("rank 0: broadcast of 8 x int32: sendbuff"), std::string::npos) << message;
  EXPECT_NE(message.find("freed"), std::string::npos) << message;
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(DeviceErrors, ACountPastTheMappedRangeIsAnArgumentError) {
  loomComm_t comm = oneRankComm(0);
  char* buffer = static_cast<char*>(runtime().allocDevice(1024));
  // 64 bytes in, 240 floats = 960 bytes: fits the 1024 bytes mapped.
  EXPECT_EQ(loomAllReduce(buffer + 64, buffer + 64, 240, loomFloat32, loomMax, comm, nullptr), loomSuccess)
      << lastError(comm);
  // 241 floats run 4 bytes past the end.
  EXPECT_EQ(loomAllReduce(buffer + 64, buffer + 64, 241, loomFloat32, loomMax, comm, nullptr), loomInvalidArgument);
  const std::string message = lastError(comm);
  EXPECT_NE(message.find("sendbuff 0x"), std::string::npos) << message;
  EXPECT_NE(message.find("needs 964 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("ends 960 bytes after it"), std::string::npos) << message;
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  runtime().freeDevice(buffer);
}

TEST(DeviceErrors, InitAllRejectsADeviceThatDoesNotExist) {
  loomComm_t comms[2] = {nullptr, nullptr};
  const int devices[] = {0, 7};
  EXPECT_EQ(loomCommInitAll(comms, 2, devices), loomInvalidArgument);
  const std::string message = loomGetLastError(nullptr);
  EXPECT_NE(message.find("devlist[1] = 7 is not a device"), std::string::npos) << message;
}

TEST(DeviceErrors, InitAllLeavesTheCallersDeviceAsItWas) {
  runtime().setCurrentDevice(0);
  loomComm_t comms[2] = {nullptr, nullptr};
  const int devices[] = {1, 0};
  ASSERT_EQ(loomCommInitAll(comms, 2, devices), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(runtime().currentDevice(), 0);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

// A child of loomCommSplit lives on its parent's device, whatever device is current when the
// split is called (as NCCL's children do).
TEST(DeviceErrors, ASplitCommunicatorKeepsItsParentsDevice) {
  loomComm_t parent = oneRankComm(1);
  runtime().setCurrentDevice(0);
  loomComm_t child = nullptr;
  ASSERT_EQ(loomCommSplit(parent, 0, 0, &child, nullptr), loomSuccess) << lastError(parent);
  runtime().setCurrentDevice(1);
  void* onDevice1 = runtime().allocDevice(4096);
  runtime().setCurrentDevice(0);
  EXPECT_EQ(loomAllReduce(onDevice1, onDevice1, 16, loomInt32, loomSum, child, nullptr), loomSuccess)
      << lastError(child);
  EXPECT_EQ(loomCommDestroy(child), loomSuccess);
  EXPECT_EQ(loomCommDestroy(parent), loomSuccess);
  runtime().freeDevice(onDevice1);
}

// A process without a device runtime (LOOM_DEVICE=none) given a device pointer.
TEST(DeviceErrors, WithoutADeviceRuntimeADeviceBufferIsNoCudaDriver) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("LOOM_DEVICE", "none", 1);
        void* device = loom::device::emulatedRuntime().allocDevice(4096);
        loomComm_t comm = nullptr;
        if (loomCommInitAll(&comm, 1, nullptr) != loomSuccess) std::exit(2);
        const loomResult_t result = loomAllReduce(device, device, 4, loomFloat32, loomSum, comm, nullptr);
        const std::string message = loomGetLastError(comm);
        std::fprintf(stderr, "%s\n", message.c_str());
        const bool clear = result == loomInvalidArgument && message.find("no CUDA driver: ") != std::string::npos;
        std::exit(clear ? 0 : 3);
      },
      testing::ExitedWithCode(0), "no CUDA driver: ");
}

}  // namespace
}  // namespace loom::test::device
