// SPDX-License-Identifier: Apache-2.0
// PreMulSum with device buffers and a device-resident scalar (loomScalarDevice pointing to
// device memory, read when the call runs), and with a host-immediate scalar: the result is the
// exact sum of each rank's input times its own scalar, bitwise the host-buffer call's.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "device/device_select.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

constexpr int kRanks = 3;
constexpr size_t kCount = 1001;

double inputOf(int rank, size_t i) { return static_cast<double>((i * 7 + rank * 3) % 11) - 5.0; }

TEST(DevicePreMulSum, DeviceScalarAndBuffersGiveTheExactScaledSum) {
  DeviceRuntime& runtime = loom::device::processRuntime();
  for (const loomScalarResidence_t residence : {loomScalarDevice, loomScalarHostImmediate}) {
    std::vector<loomComm_t> comms(kRanks);
    const int devices[kRanks] = {0, 1, 0};  // rank r on device r % 2
    ASSERT_EQ(loomCommInitAll(comms.data(), kRanks, devices), loomSuccess) << loomGetLastError(nullptr);
    std::vector<std::vector<double>> hostResults(kRanks), deviceResults(kRanks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kRanks; ++rank) {
      threads.emplace_back([&, rank] {
        runtime.setCurrentDevice(devices[rank]);
        DeviceStream stream = runtime.createStream();
        double scalar = 0.5 * (rank + 1);  // each rank its own
        void* scalarMemory = &scalar;
        if (residence == loomScalarDevice) {
          scalarMemory = runtime.allocDevice(sizeof(double));
          runtime.copyAsync(scalarMemory, &scalar, sizeof(double), stream);
          runtime.synchronize(stream, 60000);
        }
        loomRedOp_t op;
        EXPECT_EQ(loomRedOpCreatePreMulSum(&op, scalarMemory, loomFloat64, residence, comms[rank]), loomSuccess)
            << loomGetLastError(comms[rank]);
        std::vector<double> input(kCount);
        for (size_t i = 0; i < kCount; ++i) input[i] = inputOf(rank, i);
        // Host buffers first: the reference bits.
        hostResults[rank].resize(kCount);
        EXPECT_EQ(loomAllReduce(input.data(), hostResults[rank].data(), kCount, loomFloat64, op, comms[rank], nullptr),
                  loomSuccess)
            << loomGetLastError(comms[rank]);
        // Then a device send buffer and a device receive buffer.
        void* send = runtime.allocDevice(kCount * sizeof(double));
        void* recv = runtime.allocDevice(kCount * sizeof(double));
        runtime.copyAsync(send, input.data(), kCount * sizeof(double), stream);
        runtime.synchronize(stream, 60000);
        EXPECT_EQ(loomAllReduce(send, recv, kCount, loomFloat64, op, comms[rank], nullptr), loomSuccess)
            << loomGetLastError(comms[rank]);
        deviceResults[rank].resize(kCount);
        runtime.copyAsync(deviceResults[rank].data(), recv, kCount * sizeof(double), stream);
        runtime.synchronize(stream, 60000);
        EXPECT_EQ(loomRedOpDestroy(op, comms[rank]), loomSuccess);
        runtime.freeDevice(send);
        runtime.freeDevice(recv);
        if (residence == loomScalarDevice) runtime.freeDevice(scalarMemory);
        runtime.destroyStream(stream);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int rank = 0; rank < kRanks; ++rank) {
      for (size_t i = 0; i < kCount; ++i) {
        double expected = 0;
        for (int r = 0; r < kRanks; ++r) expected += 0.5 * (r + 1) * inputOf(r, i);
        ASSERT_EQ(hostResults[rank][i], expected) << "rank " << rank << " element " << i;
      }
      EXPECT_EQ(std::memcmp(hostResults[rank].data(), deviceResults[rank].data(), kCount * sizeof(double)), 0)
          << "rank " << rank << (residence == loomScalarDevice ? " (device scalar)" : " (host scalar)");
      EXPECT_EQ(loomCommDestroy(comms[rank]), loomSuccess);
    }
  }
}

}  // namespace
}  // namespace loom::test::device
