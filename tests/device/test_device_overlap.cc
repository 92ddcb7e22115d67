// SPDX-License-Identifier: Apache-2.0
// Device buffers' copies overlap the transfer (core/device_staging.h, algorithms/
// staged_copies.h):
//   - the input's copies are queued in the order the schedule first touches the memory, and a
//     part counts as arrived once its own copy (and those queued before it) ran, not the whole
//     input: shown with the emulated copy engine's gate, which lets a given number of copies run;
//   - every collective and send/recv stays exact and bitwise the host-buffer result when the
//     copies are slow (each emulated copy waits before it runs), in small pieces, over shared
//     memory and TCP, as schedules (LOOM_ALGO=ring), with the whole-call copies of
//     LOOM_DEVICE_COPY_BYTES=0 and in deterministic mode too: a step that ran before its input
//     arrived, or output that went back before its last write, would read or leave stale bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/device_staging.h"
#include "device/device_select.h"
#include "device/emulated_runtime.h"
#include "tests/device/device_case_run.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

using std::chrono::microseconds;

constexpr size_t kPiece = 4096;

bool waitUntil(const std::function<bool()>& condition) {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > giveUp) return false;
    std::this_thread::sleep_for(microseconds(100));
  }
  return true;
}

TEST(DeviceOverlap, InputArrivesPieceByPieceInTheOrderTheScheduleAsks) {
  DeviceRuntime& runtime = loom::device::processRuntime();
  if (std::string(runtime.name()) != "emulated") GTEST_SKIP() << "the copy gate is the emulated GPU's (runtime " << runtime.name() << ")";
  const size_t bytes = 4 * kPiece;
  std::vector<uint8_t> pattern(bytes), result(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<uint8_t>(i * 7 + i / kPiece);
  const DeviceGuard onDevice(runtime, 0);
  DeviceStream stream = runtime.createStream();
  void* send = runtime.allocDevice(bytes);
  void* recv = runtime.allocDevice(bytes);
  runtime.copyAsync(send, pattern.data(), bytes, stream);
  runtime.synchronize(stream, 10000);

  algo::CallSpec call;
  call.collective = algo::Collective::AllReduce;
  call.type = loomUint8;
  call.count = bytes;
  call.send = send;
  call.recv = recv;
  call.deviceBuffers = algo::CallSpec::kDeviceSend | algo::CallSpec::kDeviceRecv;
  DeviceStaging staging;
  const algo::CallSpec& host = staging.stageIn(std::span(&call, 1), 0, 0, 1, kPiece).front();
  const auto* hostSend = static_cast<const char*>(host.send);
  const auto* hostBytes = static_cast<const uint8_t*>(host.send);
  const auto piece = [&](int k) { return hostSend + k * kPiece; };

  loom::device::emulatedGateCopiesForTesting(2);  // two copies may run
  staging.expect(piece(2), kPiece);  // the schedule touches piece 2 first, then piece 0
  staging.expect(piece(0), 100);
  staging.startInput();  // then the rest, in address order
  EXPECT_TRUE(waitUntil([&] { return staging.arrived(piece(2), kPiece); }));
  EXPECT_TRUE(waitUntil([&] { return staging.arrived(piece(0), kPiece); }));
  EXPECT_TRUE(std::equal(hostBytes + 2 * kPiece, hostBytes + 3 * kPiece, pattern.begin() + 2 * kPiece));
  EXPECT_TRUE(std::equal(hostBytes, hostBytes + kPiece, pattern.begin()));
  // The gate holds the other two: parts of them, and a range that spans into them, have not arrived.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(staging.arrived(piece(1), 1));
  EXPECT_FALSE(staging.arrived(piece(3) + kPiece - 1, 1));
  EXPECT_FALSE(staging.arrived(piece(2), kPiece + 1));
  EXPECT_TRUE(staging.arrived(piece(2) + 5, kPiece - 5));
  loom::device::emulatedGateCopiesForTesting(-1);
  EXPECT_TRUE(waitUntil([&] { return staging.arrived(hostSend, bytes); }));

  // The output: its first half reported final early, the rest copied back by stageOut.
  char* hostRecv = static_cast<char*>(host.recv);
  for (size_t i = 0; i < bytes; ++i) hostRecv[i] = static_cast<char>(hostSend[i] ^ 0x5a);
  staging.finished(hostRecv, bytes / 2);
  staging.stageOut(10000);
  runtime.copyAsync(result.data(), recv, bytes, stream);
  runtime.synchronize(stream, 10000);
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(result[i], pattern[i] ^ 0x5a) << "byte " << i;
  runtime.freeDevice(send);
  runtime.freeDevice(recv);
  runtime.destroyStream(stream);
}

// How many device copies one 64 KiB all-reduce of device buffers makes on 2 ranks: whole
// copies (LOOM_DEVICE_COPY_BYTES=0) copy each buffer once each way; 4 KiB pieces make more.
uint64_t copiesOfOneAllReduce(const char* copyBytes) {
  DeviceRuntime& runtime = loom::device::processRuntime();
  constexpr int kRanks = 2;
  constexpr size_t kCount = 16384;  // float32: 64 KiB
  setenv("LOOM_DEVICE_COPY_BYTES", copyBytes, 1);
  setenv("LOOM_ALGO", "ring", 1);
  std::vector<loomComm_t> comms(kRanks);
  const std::vector<int> devices(kRanks, 0);
  EXPECT_EQ(loomCommInitAll(comms.data(), kRanks, devices.data()), loomSuccess) << loomGetLastError(nullptr);
  unsetenv("LOOM_DEVICE_COPY_BYTES");
  unsetenv("LOOM_ALGO");
  std::vector<void*> buffers(2 * kRanks);
  {
    const DeviceGuard onDevice(runtime, 0);
    for (void*& buffer : buffers) buffer = runtime.allocDevice(kCount * sizeof(float));
  }
  const uint64_t before = loom::device::emulatedCopyCallsForTesting();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      EXPECT_EQ(loomAllReduce(buffers[2 * rank], buffers[2 * rank + 1], kCount, loomFloat32, loomSum, comms[rank], nullptr),
                loomSuccess)
          << loomGetLastError(nullptr);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const uint64_t copies = loom::device::emulatedCopyCallsForTesting() - before;
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  for (void* buffer : buffers) runtime.freeDevice(buffer);
  return copies;
}

TEST(DeviceOverlap, WholeCopiesCopyEachBufferOnceEachWay) {
  if (std::string(loom::device::processRuntime().name()) != "emulated") {
    GTEST_SKIP() << "counts the emulated GPU's copies";
  }
  EXPECT_EQ(copiesOfOneAllReduce("0"), 4u);  // per rank: the send buffer in, the receive buffer out
  EXPECT_GE(copiesOfOneAllReduce("4096"), 2u * 16u + 2u);  // per rank: 16 pieces in, and the output
}

struct OverlapParam {
  int nranks;
  const char* transport;  // "shm" or "tcp"
  const char* copyBytes;  // LOOM_DEVICE_COPY_BYTES
  bool deterministic;
  int copyDelayUs;  // before each emulated copy: slow input shows a step that ran too early;
                    // none shows output that went back before its last write
};

std::string paramName(const testing::TestParamInfo<OverlapParam>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + info.param.transport + "_copy" + info.param.copyBytes +
         (info.param.deterministic ? "_deterministic" : "") + "_delay" + std::to_string(info.param.copyDelayUs) + "us";
}

class DeviceOverlapGrid : public testing::TestWithParam<OverlapParam> {};

TEST_P(DeviceOverlapGrid, EveryCollectiveExactWithSlowCopies) {
  const OverlapParam param = GetParam();
  DeviceRuntime& runtime = loom::device::processRuntime();
  ASSERT_TRUE(runtime.available()) << "runtime " << runtime.name();
  // Slow copies are the emulated GPU's (a test hook); a real GPU's run at their own pace.
  setenv("LOOM_DEVICE_COPY_BYTES", param.copyBytes, 1);
  setenv("LOOM_PIECE_BYTES", "1024", 1);  // many steps per call, so many pieces in flight
  setenv("LOOM_ALGO", "ring", 1);         // schedules, not the direct engine
  if (param.deterministic) setenv("LOOM_DETERMINISTIC", "1", 1);
  if (std::string(param.transport) == "tcp") setenv("LOOM_SHM_DISABLE", "1", 1);
  std::vector<int> devices(param.nranks);
  for (int rank = 0; rank < param.nranks; ++rank) devices[rank] = rank % 2;
  std::vector<loomComm_t> comms(param.nranks);
  ASSERT_EQ(loomCommInitAll(comms.data(), param.nranks, devices.data()), loomSuccess) << loomGetLastError(nullptr);
  for (const char* name : {"LOOM_DEVICE_COPY_BYTES", "LOOM_PIECE_BYTES", "LOOM_ALGO", "LOOM_DETERMINISTIC",
                           "LOOM_SHM_DISABLE"}) {
    unsetenv(name);
  }

  // Odd counts of several pieces (1-byte to 8-byte types: 1 to 8 copies of kPiece and a tail).
  const std::vector<Case> cases = buildCases(param.nranks, {1003, 4099}, false);
  loom::device::emulatedSetCopyDelayForTesting(microseconds(param.copyDelayUs));
  std::vector<std::vector<std::string>> failures(param.nranks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < param.nranks; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        RankRunner runner(comms[rank], rank, param.nranks, runtime, devices[rank]);
        for (size_t k = 0; k < cases.size(); ++k) {
          const std::string failure = runner.run(cases[k], k);
          if (!failure.empty() && failures[rank].size() < 5) failures[rank].push_back(cases[k].name() + ": " + failure);
        }
      } catch (const std::exception& error) {
        failures[rank].push_back(std::string("stopped: ") + error.what());
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  loom::device::emulatedSetCopyDelayForTesting(microseconds(0));
  for (int rank = 0; rank < param.nranks; ++rank) {
    for (const std::string& failure : failures[rank]) ADD_FAILURE() << "rank " << rank << ": " << failure;
    EXPECT_EQ(loomCommDestroy(comms[rank]), loomSuccess);
  }
  std::printf("%zu cases x %d ranks\n", cases.size(), param.nranks);
}

INSTANTIATE_TEST_SUITE_P(Overlap, DeviceOverlapGrid,
                         testing::Values(OverlapParam{2, "shm", "4096", false, 150}, OverlapParam{3, "shm", "4096", false, 150},
                                         OverlapParam{3, "tcp", "4096", false, 150}, OverlapParam{3, "shm", "0", false, 150},
                                         OverlapParam{3, "shm", "4096", true, 150}, OverlapParam{2, "tcp", "8192", true, 150},
                                         OverlapParam{3, "shm", "4096", false, 0}, OverlapParam{2, "tcp", "4096", false, 0}),
                         paramName);

}  // namespace
}  // namespace loom::test::device
