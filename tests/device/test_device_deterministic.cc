// SPDX-License-Identifier: Apache-2.0
// LOOM_DETERMINISTIC=1 with device buffers: the same bits for every element whatever the
// buffers' memory, the message size, the element's position and the transport. Values are
// random non-integers, so a different order of the reduction would show in the last bits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "device/device_select.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

constexpr int kRanks = 3;
constexpr size_t kCount = 50001;

float valueOf(int rank, size_t index) {  // random, non-integer, mixed signs and magnitudes
  uint64_t x = (uint64_t(rank) << 40) ^ (index * 0x9e3779b97f4a7c15ull);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return (float(x % 2000003) - 1000001.0f) / float(1 + (x >> 40) % 997);
}

struct ReduceRun {
  bool tcp = false;
  bool device = false;
  size_t shift = 0;  // elements before the data: the same values at other positions
  loomRedOp_t op = loomSum;
};

// Every rank's all-reduce result of the kCount values (after `shift` leading elements).
std::vector<std::vector<float>> allReduce(const ReduceRun& run) {
  setenv("LOOM_DETERMINISTIC", "1", 1);
  if (run.tcp) setenv("LOOM_SHM_DISABLE", "1", 1);
  std::vector<loomComm_t> comms(kRanks);
  const std::vector<int> devices(kRanks, 0);
  EXPECT_EQ(loomCommInitAll(comms.data(), kRanks, devices.data()), loomSuccess) << loomGetLastError(nullptr);
  unsetenv("LOOM_SHM_DISABLE");
  unsetenv("LOOM_DETERMINISTIC");
  const size_t total = kCount + run.shift;
  std::vector<std::vector<float>> results(kRanks, std::vector<float>(total));
  DeviceRuntime& runtime = loom::device::processRuntime();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> data(total);
      for (size_t i = 0; i < total; ++i) data[i] = valueOf(rank, i < run.shift ? i + 7777777 : i - run.shift);
      float* buffer = data.data();
      DeviceStream stream = nullptr;
      if (run.device) {
        stream = runtime.createStream();
        buffer = static_cast<float*>(runtime.allocDevice(total * sizeof(float)));
        runtime.copyAsync(buffer, data.data(), total * sizeof(float), stream);
        runtime.synchronize(stream, 60000);
      }
      EXPECT_EQ(loomAllReduce(buffer, buffer, total, loomFloat32, run.op, comms[rank], nullptr), loomSuccess)
          << loomGetLastError(comms[rank]);
      if (run.device) {
        runtime.copyAsync(results[rank].data(), buffer, total * sizeof(float), stream);
        runtime.synchronize(stream, 60000);
        runtime.freeDevice(buffer);
        runtime.destroyStream(stream);
      } else {
        results[rank] = data;
      }
      results[rank].erase(results[rank].begin(), results[rank].begin() + static_cast<long>(run.shift));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  return results;
}

void expectSameBits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                    const std::string& what) {
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(a[rank].size(), b[rank].size());
    EXPECT_EQ(std::memcmp(a[rank].data(), b[rank].data(), a[rank].size() * sizeof(float)), 0)
        << what << ": rank " << rank << " differs";
  }
}

TEST(DeviceDeterministic, SameBitsForAnyMemorySizePositionAndTransport) {
  for (loomRedOp_t op : {loomSum, loomAvg}) {
    const auto reference = allReduce(ReduceRun{false, false, 0, op});
    for (int rank = 1; rank < kRanks; ++rank) {  // every rank has the same result
      EXPECT_EQ(std::memcmp(reference[0].data(), reference[rank].data(), kCount * sizeof(float)), 0);
    }
    expectSameBits(reference, allReduce(ReduceRun{false, true, 0, op}), "device buffers over shm");
    expectSameBits(reference, allReduce(ReduceRun{true, true, 0, op}), "device buffers over TCP");
    expectSameBits(reference, allReduce(ReduceRun{false, true, 13, op}), "device buffers, shifted 13 elements");
    expectSameBits(reference, allReduce(ReduceRun{true, true, 1000, op}), "device buffers over TCP, shifted 1000");
  }
}

}  // namespace
}  // namespace loom::test::device
