// SPDX-License-Identifier: Apache-2.0
// The "none" runtime (LOOM_DEVICE=none, or no CUDA driver): host memory is host memory, and
// everything that needs a device is an error that says there is no CUDA driver. Tested on the
// runtime object itself, whichever runtime this process chose.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "device/device_select.h"

namespace loom::test::device {
namespace {

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

}  // namespace
}  // namespace loom::test::device
