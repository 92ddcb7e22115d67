// SPDX-License-Identifier: Apache-2.0
// loomMemAlloc / loomMemFree, loomCommRegister / loomCommDeregister and loomCommDevice with a
// device runtime (the emulated GPU here; tests/gpu/run.sh runs it with CUDA):
//   - loomMemAlloc gives device memory of the current device, that a collective takes;
//   - loomMemFree of anything it did not return, or of a pointer twice, is an argument error
//     that names the pointer;
//   - a registration is checked as a call checks its buffers (device, mapped range), its handle
//     works with its own communicator only and once, and destroy drops what is left;
//   - loomCommDevice gives each communicator the device it is bound to.
// tests/device/test_device_none.cc does the same without a device runtime.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "device/device_select.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

constexpr int kSyncMs = 20000;

DeviceRuntime& runtime() { return loom::device::processRuntime(); }

// The device a second communicator or buffer goes on: 1 where there is one.
int otherDevice() { return runtime().deviceCount() > 1 ? 1 : 0; }

loomComm_t oneRankComm(int device) {
  loomComm_t comm = nullptr;
  EXPECT_EQ(loomCommInitAll(&comm, 1, &device), loomSuccess) << loomGetLastError(nullptr);
  return comm;
}

void* memAlloc(size_t bytes) {
  void* pointer = nullptr;
  EXPECT_EQ(loomMemAlloc(&pointer, bytes), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_NE(pointer, nullptr);
  return pointer;
}

// The thread's last error has every word.
void expectLastError(const std::vector<std::string>& words) {
  const std::string message = loomGetLastError(nullptr);
  for (const std::string& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << word << " not in: " << message;
}

TEST(DeviceMemAlloc, GivesDeviceMemoryOfTheCurrentDevice) {
  for (int device = 0; device <= otherDevice(); ++device) {
    runtime().setCurrentDevice(device);
    void* pointer = memAlloc(1000);
    const MemoryInfo info = runtime().classify(pointer);
    EXPECT_EQ(info.domain, MemoryDomain::Device);
    EXPECT_EQ(info.device, device);
    EXPECT_EQ(info.rangeBase, reinterpret_cast<uintptr_t>(pointer));
    EXPECT_GE(info.rangeBytes, 1000u);
    EXPECT_EQ(loomMemFree(pointer), loomSuccess) << loomGetLastError(nullptr);
  }
  runtime().setCurrentDevice(0);
}

TEST(DeviceMemAlloc, ArgumentErrors) {
  EXPECT_EQ(loomMemAlloc(nullptr, 64), loomInvalidArgument);
  expectLastError({"loomMemAlloc: ptr is NULL"});
  void* pointer = &pointer;
  EXPECT_EQ(loomMemAlloc(&pointer, 0), loomInvalidArgument);
  expectLastError({"loomMemAlloc: size is 0"});
  EXPECT_EQ(pointer, nullptr);
  EXPECT_EQ(loomMemFree(nullptr), loomSuccess);  // as free(NULL)
  // More than a device holds: the runtime's out-of-memory error, and nothing handed out.
  EXPECT_EQ(loomMemAlloc(&pointer, SIZE_MAX), loomUnhandledCudaError);
  expectLastError({"loomMemAlloc: ", "out of memory"});
  EXPECT_EQ(pointer, nullptr);
}

TEST(DeviceMemAlloc, FreeOfAForeignPointerOrOfAPointerTwiceNamesIt) {
  char* pointer = static_cast<char*>(memAlloc(4096));
  EXPECT_EQ(loomMemFree(pointer + 64), loomInvalidArgument);
  expectLastError({"loomMemFree: ptr " + pointerText(pointer + 64),
                   "is 64 bytes into the memory loomMemAlloc returned as " + pointerText(pointer)});
  EXPECT_EQ(loomMemFree(pointer), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomMemFree(pointer), loomInvalidArgument);
  expectLastError({"loomMemFree: ptr " + pointerText(pointer), "was freed already"});

  int onTheStack = 0;
  EXPECT_EQ(loomMemFree(&onTheStack), loomInvalidArgument);
  expectLastError({"ptr " + pointerText(&onTheStack), "is not memory that loomMemAlloc returned"});
  // The runtime's own device memory is not loomMemAlloc's either, and is left alone.
  void* device = runtime().allocDevice(256);
  EXPECT_EQ(loomMemFree(device), loomInvalidArgument);
  expectLastError({"ptr " + pointerText(device), "is not memory that loomMemAlloc returned"});
  EXPECT_EQ(runtime().classify(device).domain, MemoryDomain::Device);
  runtime().freeDevice(device);
}

// Rank r's input element i: small integers, so the float sum is exact in any order.
float memoryInputOf(int rank, size_t i) {
  return static_cast<float>((i * 13 + static_cast<size_t>(rank) * 5) % 101);
}

TEST(DeviceMemAlloc, BuffersOfTwoRanksGiveAnExactAllReduce) {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 10007;
  const int devices[kRanks] = {0, otherDevice()};
  loomComm_t comms[kRanks] = {};
  ASSERT_EQ(loomCommInitAll(comms, kRanks, devices), loomSuccess) << loomGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      runtime().setCurrentDevice(devices[rank]);  // loomMemAlloc's device: the current one
      DeviceStream stream = runtime().createStream();
      std::vector<float> input(kCount), output(kCount, -1.0f);
      for (size_t i = 0; i < kCount; ++i) input[i] = memoryInputOf(rank, i);
      void* send = memAlloc(kCount * sizeof(float));
      void* recv = memAlloc(kCount * sizeof(float));
      runtime().copyAsync(send, input.data(), kCount * sizeof(float), stream);
      runtime().synchronize(stream, kSyncMs);
      EXPECT_EQ(loomAllReduce(send, recv, kCount, loomFloat32, loomSum, comms[rank], nullptr),
                loomSuccess)
          << loomGetLastError(comms[rank]);
      runtime().copyAsync(output.data(), recv, kCount * sizeof(float), stream);
      runtime().synchronize(stream, kSyncMs);
      size_t wrong = 0;
      for (size_t i = 0; i < kCount; ++i) wrong += output[i] != memoryInputOf(0, i) + memoryInputOf(1, i);
      EXPECT_EQ(wrong, 0u) << "rank " << rank;
      EXPECT_EQ(loomMemFree(send), loomSuccess) << loomGetLastError(nullptr);
      EXPECT_EQ(loomMemFree(recv), loomSuccess) << loomGetLastError(nullptr);
      runtime().destroyStream(stream);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(DeviceRegister, RegistersDeviceAndHostBuffersAndDeregistersThem) {
  loomComm_t comm = oneRankComm(0);
  char* device = static_cast<char*>(memAlloc(1 << 16));
  std::vector<char> host(1000);
  void* whole = nullptr;
  void* part = nullptr;
  void* onHost = nullptr;
  ASSERT_EQ(loomCommRegister(comm, device, 1 << 16, &whole), loomSuccess)
      << loomGetLastError(nullptr);
  ASSERT_EQ(loomCommRegister(comm, device + 4096, 8192, &part), loomSuccess)
      << loomGetLastError(nullptr);
  ASSERT_EQ(loomCommRegister(comm, host.data(), host.size(), &onHost), loomSuccess)
      << loomGetLastError(nullptr);
  EXPECT_NE(whole, nullptr);
  EXPECT_NE(whole, part);
  EXPECT_NE(part, onHost);
  // Registered or not, the buffer is what it was to a call.
  EXPECT_EQ(loomAllReduce(device, device, 100, loomInt32, loomSum, comm, nullptr), loomSuccess)
      << loomGetLastError(comm);
  for (void* handle : {part, whole, onHost}) {
    EXPECT_EQ(loomCommDeregister(comm, handle), loomSuccess) << loomGetLastError(nullptr);
  }
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  EXPECT_EQ(loomMemFree(device), loomSuccess);
}

TEST(DeviceRegister, ArgumentErrors) {
  loomComm_t comm = oneRankComm(0);
  char* device = static_cast<char*>(memAlloc(4096));
  void* handle = &handle;
  EXPECT_EQ(loomCommRegister(nullptr, device, 64, &handle), loomInvalidArgument);
  EXPECT_EQ(loomCommRegister(comm, nullptr, 64, &handle), loomInvalidArgument);
  expectLastError({"loomCommRegister: buff is NULL"});
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(loomCommRegister(comm, device, 0, &handle), loomInvalidArgument);
  expectLastError({"loomCommRegister: size is 0"});
  EXPECT_EQ(loomCommRegister(comm, device, 64, nullptr), loomInvalidArgument);
  expectLastError({"loomCommRegister: handle is NULL"});
  // Past the mapped range: the emulated buffer is 4096 bytes; CUDA's is rounded up to the
  // allocation granularity, so ask for more than any granularity.
  const size_t past = (size_t{1} << 30) + 1;
  EXPECT_EQ(loomCommRegister(comm, device + 100, past, &handle), loomInvalidArgument);
  expectLastError({"buff " + pointerText(device + 100),
                   "runs past its device allocation (" + pointerText(device)});
  const auto* top = reinterpret_cast<const char*>(UINTPTR_MAX - 99);
  EXPECT_EQ(loomCommRegister(comm, const_cast<char*>(top), 200, &handle), loomInvalidArgument);
  expectLastError({"runs past the end of the address space"});
  EXPECT_EQ(loomCommDeregister(nullptr, &handle), loomInvalidArgument);
  EXPECT_EQ(loomMemFree(device), loomSuccess);
  if (std::string(runtime().name()) ==
      "emulated") {  // CUDA cannot tell freed memory from host memory
    EXPECT_EQ(loomCommRegister(comm, device, 64, &handle), loomInvalidArgument);
    expectLastError({"loomCommRegister: buff: ", "freed"});
  }
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(DeviceRegister, AHandleWorksWithItsOwnCommunicatorAndOnce) {
  loomComm_t first = oneRankComm(0);
  loomComm_t second = oneRankComm(0);
  std::vector<char> buffer(256);
  void* handle = nullptr;
  ASSERT_EQ(loomCommRegister(first, buffer.data(), buffer.size(), &handle), loomSuccess)
      << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDeregister(second, handle), loomInvalidArgument);
  expectLastError({"loomCommDeregister: handle " + pointerText(handle),
                   "registered with another communicator"});
  EXPECT_EQ(loomCommDeregister(first, handle), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDeregister(first, handle), loomInvalidArgument);
  expectLastError({"handle " + pointerText(handle), "deregistered already"});
  EXPECT_EQ(loomCommDeregister(first, buffer.data()), loomInvalidArgument);
  expectLastError(
      {"handle " + pointerText(buffer.data()), "is not a handle that loomCommRegister returned"});
  EXPECT_EQ(loomCommDeregister(first, nullptr), loomInvalidArgument);
  expectLastError({"handle is NULL"});
  EXPECT_EQ(loomCommDestroy(first), loomSuccess);
  EXPECT_EQ(loomCommDestroy(second), loomSuccess);
}

TEST(DeviceRegister, ABufferOfAnotherDeviceIsRefused) {
  if (runtime().deviceCount() < 2) GTEST_SKIP() << "one device";
  loomComm_t comm = oneRankComm(1);
  runtime().setCurrentDevice(0);
  void* onDevice0 = memAlloc(4096);
  void* handle = nullptr;
  EXPECT_EQ(loomCommRegister(comm, onDevice0, 4096, &handle), loomInvalidArgument);
  expectLastError({"buff " + pointerText(onDevice0),
                   "is memory of device 0, but this communicator is bound to device 1"});
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(loomMemFree(onDevice0), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(DeviceRegister, DestroyDropsTheRegistrationsLeft) {
  loomComm_t comm = oneRankComm(0);
  void* device = memAlloc(8192);
  void* handles[3] = {};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(loomCommRegister(comm, device, 1024 * static_cast<size_t>(i + 1), &handles[i]),
              loomSuccess)
        << loomGetLastError(nullptr);
  }
  EXPECT_EQ(loomCommDeregister(comm, handles[1]), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  // The buffer outlives its registrations; the communicator's handles are gone with it.
  EXPECT_EQ(loomCommDeregister(comm, handles[0]), loomInvalidArgument);
  EXPECT_EQ(loomMemFree(device), loomSuccess) << loomGetLastError(nullptr);
}

TEST(DeviceCommDevice, EachCommunicatorHasItsDevicesListEntry) {
  const int devices[2] = {otherDevice(), 0};  // {1, 0} where there are two devices
  loomComm_t comms[2] = {};
  ASSERT_EQ(loomCommInitAll(comms, 2, devices), loomSuccess) << loomGetLastError(nullptr);
  for (int rank = 0; rank < 2; ++rank) {
    int device = -7;
    EXPECT_EQ(loomCommDevice(comms[rank], &device), loomSuccess) << loomGetLastError(nullptr);
    EXPECT_EQ(device, devices[rank]) << "rank " << rank;
  }
  EXPECT_EQ(loomCommDevice(comms[0], nullptr), loomInvalidArgument);
  expectLastError({"loomCommDevice: device is NULL"});
  int device = -7;
  EXPECT_EQ(loomCommDevice(nullptr, &device), loomInvalidArgument);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

}  // namespace
}  // namespace loom::test::device
