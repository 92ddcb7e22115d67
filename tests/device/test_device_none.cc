// SPDX-License-Identifier: Apache-2.0
// The "none" runtime (LOOM_DEVICE=none, or no CUDA driver): host memory is host memory, and
// everything that needs a device is an error that says there is no CUDA driver. Tested on the
// runtime object itself, whichever runtime this process chose. Then the API on it: this process
// chooses it (LOOM_DEVICE=none, set here whatever the environment says, before anything of
// Loom reads it), and
//   - loomMemAlloc gives page-aligned host pages, usable at once, that a call takes;
//   - loomMemFree of a pointer twice, or of one it did not return, names the pointer;
//   - host memory registers; a pointer that cannot be host memory is "no CUDA driver";
//   - a host communicator has no device: loomCommDevice is loomInvalidUsage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "device/device_select.h"
#include "loom.h"

namespace loom::test::device {
namespace {

const bool kNoDeviceRuntime = (setenv("LOOM_DEVICE", "none", 1), true);

void expectLastError(const std::vector<std::string>& words) {
  const std::string message = loomGetLastError(nullptr);
  for (const std::string& word : words)
    EXPECT_NE(message.find(word), std::string::npos) << word << " not in: " << message;
}

void expectNoDriver(const std::function<void()>& operation, const std::string& what) {
  try {
    operation();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("no CUDA driver: ", 0), 0u) << what << ": " << error.what();
  }
}

TEST(NoneRuntime, HostMemoryIsHostAndEveryDeviceOperationSaysThereIsNoDriver) {
  DeviceRuntime& none = loom::device::noneRuntime();
  EXPECT_STREQ(none.name(), "none");
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.deviceCount(), 0);
  EXPECT_EQ(none.currentDevice(), 0);
  none.setCurrentDevice(0);  // device 0 is the host's "current device": nothing to do

  std::vector<char> host(64);
  const MemoryInfo info = none.classify(host.data());
  EXPECT_EQ(info.domain, MemoryDomain::Host);
  EXPECT_EQ(info.device, -1);
  EXPECT_STREQ(memoryDomainName(info.domain), "host");

  // What only a device runtime can make, and what cannot be host memory.
  const auto* notHost = reinterpret_cast<const void*>(uintptr_t{1} << 62);
  expectNoDriver([&] { none.classify(notHost); }, "classify");
  expectNoDriver([&] { none.setCurrentDevice(1); }, "setCurrentDevice");
  expectNoDriver([&] { none.allocDevice(64); }, "allocDevice");
  expectNoDriver([&] { none.allocPinnedHost(64); }, "allocPinnedHost");
  expectNoDriver([&] { none.createStream(); }, "createStream");
  expectNoDriver([&] { none.synchronize(nullptr, 1000); }, "synchronize");
  expectNoDriver([&] { none.copyAsync(host.data(), host.data(), 8, nullptr); }, "copyAsync");
  expectNoDriver([&] { none.reduceAsync(loomFloat32, loomSum, host.data(), host.data(), host.data(), 2, nullptr); },
                 "reduceAsync");
  expectNoDriver([&] { none.averageAsync(loomFloat32, host.data(), host.data(), host.data(), 2, 2, true, nullptr); },
                 "averageAsync");
  expectNoDriver([&] { none.finishAverageAsync(loomFloat32, host.data(), 2, 2, nullptr); }, "finishAverageAsync");
  expectNoDriver([&] { none.premultiplyAsync(loomFloat32, host.data(), host.data(), 2, host.data(), nullptr); },
                 "premultiplyAsync");
  expectNoDriver([&] { none.createEvent(); }, "createEvent");
  expectNoDriver([&] { none.record(nullptr, nullptr); }, "record");
  expectNoDriver([&] { none.streamWait(nullptr, nullptr); }, "streamWait");
  expectNoDriver([&] { none.query(nullptr); }, "query");
  // Releasing what it never made is a no-op, as freeing NULL is.
  none.freeDevice(nullptr);
  none.freePinnedHost(nullptr);
  none.destroyStream(nullptr);
  none.destroyEvent(nullptr);
}

TEST(NoneRuntime, DomainNamesAndPointerText) {
  EXPECT_STREQ(memoryDomainName(MemoryDomain::PinnedHost), "pinned host");
  EXPECT_STREQ(memoryDomainName(MemoryDomain::Device), "device");
  EXPECT_STREQ(memoryDomainName(MemoryDomain::Managed), "managed");
  EXPECT_EQ(pointerText(reinterpret_cast<const void*>(uintptr_t{0x4000000000010000})), "0x4000000000010000");
}

TEST(NoneMemAlloc, GivesPageAlignedHostPagesThatACallTakes) {
  ASSERT_TRUE(kNoDeviceRuntime);
  EXPECT_STREQ(loom::device::processRuntime().name(), "none");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const size_t bytes : {size_t{1}, page, page + 1, size_t{3} << 20}) {
    void* pointer = nullptr;
    ASSERT_EQ(loomMemAlloc(&pointer, bytes), loomSuccess) << loomGetLastError(nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % page, 0u) << bytes << " bytes";
    EXPECT_EQ(loom::device::processRuntime().classify(pointer).domain, MemoryDomain::Host);
    // Every byte is host memory: written and read back.
    auto* bytesOf = static_cast<unsigned char*>(pointer);
    for (size_t i = 0; i < bytes; ++i) bytesOf[i] = static_cast<unsigned char>(i * 7);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += bytesOf[i] != static_cast<unsigned char>(i * 7);
    EXPECT_EQ(wrong, 0u) << bytes << " bytes";
    EXPECT_EQ(loomMemFree(pointer), loomSuccess) << loomGetLastError(nullptr);
  }
  // A call takes them (an all-reduce in place on one rank).
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  int32_t* values = nullptr;
  ASSERT_EQ(loomMemAlloc(reinterpret_cast<void**>(&values), 1000 * sizeof(int32_t)), loomSuccess);
  for (int32_t i = 0; i < 1000; ++i) values[i] = i;
  EXPECT_EQ(loomAllReduce(values, values, 1000, loomInt32, loomSum, comm, nullptr), loomSuccess)
      << loomGetLastError(comm);
  EXPECT_EQ(values[999], 999);
  EXPECT_EQ(loomMemFree(values), loomSuccess);
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(NoneMemAlloc, FreeTwiceOrOfAForeignPointerNamesIt) {
  void* pointer = nullptr;
  ASSERT_EQ(loomMemAlloc(&pointer, 100), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomMemFree(pointer), loomSuccess);
  EXPECT_EQ(loomMemFree(pointer), loomInvalidArgument);
  // std::string(...) + ..., not "..." + ...: GCC 12 at -O3 misreads that (a false -Warray-bounds).
  expectLastError({std::string("loomMemFree: ptr ") + pointerText(pointer), "was freed already"});
  std::vector<char> heap(64);
  EXPECT_EQ(loomMemFree(heap.data()), loomInvalidArgument);
  expectLastError(
      {std::string("loomMemFree: ptr ") + pointerText(heap.data()), "is not memory that loomMemAlloc returned"});
  EXPECT_EQ(loomMemAlloc(&pointer, 0), loomInvalidArgument);
  // More pages than an address space holds: the system's error, with the size.
  EXPECT_EQ(loomMemAlloc(&pointer, SIZE_MAX), loomSystemError);
  expectLastError(
      {std::string("loomMemAlloc: allocating ") + std::to_string(SIZE_MAX) + " bytes of host pages (mmap)"});
  EXPECT_EQ(pointer, nullptr);
}

TEST(NoneRegister, HostMemoryRegistersAndAPointerThatCannotBeHostMemoryIsNoCudaDriver) {
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  void* pages = nullptr;
  ASSERT_EQ(loomMemAlloc(&pages, 8192), loomSuccess);
  void* handle = nullptr;
  ASSERT_EQ(loomCommRegister(comm, pages, 8192, &handle), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_EQ(loomCommDeregister(comm, handle), loomSuccess) << loomGetLastError(nullptr);
  auto* notHost = reinterpret_cast<void*>(uintptr_t{1} << 62);
  EXPECT_EQ(loomCommRegister(comm, notHost, 64, &handle), loomInvalidArgument);
  expectLastError({"loomCommRegister: buff: no CUDA driver: "});
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  EXPECT_EQ(loomMemFree(pages), loomSuccess);
}

TEST(NoneCommDevice, AHostCommunicatorHasNoDevice) {
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess) << loomGetLastError(nullptr);
  int device = 5;
  EXPECT_EQ(loomCommDevice(comm, &device), loomInvalidUsage);
  EXPECT_EQ(device, -1);
  expectLastError({"loomCommDevice: communicator ",
                   "has no device: no device runtime was active when it was made"});
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

}  // namespace
}  // namespace loom::test::device
