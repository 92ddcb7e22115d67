// SPDX-License-Identifier: Apache-2.0
// The emulated GPU (device/emulated_runtime.h), which CI runs the device path on, must behave
// like a GPU wherever a bug in that path would show:
//   - memory: device pointers host code cannot touch (a host read crashes, a syscall gets
//     EFAULT), buffer ids never reused, freed and stray pointers and out-of-range copies are
//     clear errors; pinned and plain host memory classify as such;
//   - copies in every direction, byte-exact, and streams that run their work in order;
//   - events with CUDA's binding of a wait to the last record before it, sticky errors, two
//     devices with a per-thread current device, timeouts, and refusal in a forked child.
// Its kernels: test_emulated_kernels.cc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/device_runtime.h"
#include "base/error.h"
#include "tests/support/emulated_test_util.h"

namespace loom::test {
namespace {

// ---- the runtime and its memory ----

TEST(EmulatedDevice, Identity) {
  EXPECT_STREQ(rt().name(), "emulated");
  EXPECT_TRUE(rt().available());
  EXPECT_EQ(rt().deviceCount(), 2);
  EXPECT_EQ(rt().currentDevice(), 0);
}

TEST(EmulatedDevice, AllocClassifyFree) {
  std::set<uint64_t> ids;
  void* first = rt().allocDevice(1000);
  EXPECT_FALSE(isCanonicalHostAddress(first));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 256, 0u);
  const MemoryInfo info = rt().classify(first);
  EXPECT_EQ(info.domain, MemoryDomain::Device);
  EXPECT_EQ(info.device, 0);
  EXPECT_GE(info.bufferId, 1u);
  EXPECT_EQ(info.rangeBase, reinterpret_cast<uintptr_t>(first));
  EXPECT_EQ(info.rangeBytes, 1000u);
  ids.insert(info.bufferId);

  // An interior pointer: the same buffer and range.
  const MemoryInfo interior = rt().classify(at(first, 999));
  EXPECT_EQ(interior.bufferId, info.bufferId);
  EXPECT_EQ(interior.rangeBase, info.rangeBase);
  EXPECT_EQ(interior.rangeBytes, 1000u);
  // One past the end is in no allocation (not in the next buffer).
  void* second = rt().allocDevice(64);
  expectError([&] { rt().classify(at(first, 1000)); }, loomInvalidArgument, {"in no allocation", "device 0"});

  // Freed: recognised, for the start and the inside, and the ids and addresses never return.
  rt().freeDevice(first);
  expectError([&] { rt().classify(first); }, loomInvalidArgument, {pointerText(first), "was freed", "1000 bytes"});
  expectError([&] { rt().classify(at(first, 500)); }, loomInvalidArgument, {"was freed"});
  ids.insert(rt().classify(second).bufferId);
  std::vector<void*> more;
  for (int i = 0; i < 20; ++i) {
    more.push_back(rt().allocDevice(1000));
    EXPECT_NE(more.back(), first);
    EXPECT_TRUE(ids.insert(rt().classify(more.back()).bufferId).second) << "buffer id reused";
  }
  for (void* pointer : more) rt().freeDevice(pointer);
  rt().freeDevice(second);
  EXPECT_TRUE(ids.insert(rt().classify(DeviceBuffer(8).pointer).bufferId).second) << "buffer id reused";

  // Addresses of the space that were never handed out, another device's field, not ours.
  const uintptr_t base = reinterpret_cast<uintptr_t>(first) & ~((uint64_t{1} << 44) - 1);
  expectError([&] { rt().classify(reinterpret_cast<void*>(base + (uint64_t{1} << 43))); }, loomInvalidArgument,
              {"beyond every allocation"});
  expectError([&] { rt().classify(reinterpret_cast<void*>((uint64_t{1} << 62) | (uint64_t{5} << 44))); },
              loomInvalidArgument, {"device 5", "does not exist"});
  expectError([&] { rt().classify(reinterpret_cast<void*>(0x8000000000001000ull)); }, loomInvalidArgument,
              {"neither a host address"});

  expectError([&] { rt().allocDevice(0); }, loomInvalidArgument, {"0 bytes"});
  expectError([&] { rt().allocDevice(size_t{1} << 40); }, loomUnhandledCudaError,
              {"out of memory", std::to_string(size_t{1} << 40), "device 0"});
}

TEST(EmulatedDevice, PinnedAndHostClassify) {
  PinnedBuffer pinned(10000);
  ASSERT_TRUE(isCanonicalHostAddress(pinned.pointer));
  std::memset(pinned.get(), 7, 10000);  // real host memory
  const MemoryInfo info = rt().classify(pinned.get() + 1234);
  EXPECT_EQ(info.domain, MemoryDomain::PinnedHost);
  EXPECT_EQ(info.device, -1);
  EXPECT_GE(info.bufferId, 1u);
  EXPECT_EQ(info.rangeBase, reinterpret_cast<uintptr_t>(pinned.pointer));
  EXPECT_EQ(info.rangeBytes, 10000u);

  int onStack = 0;
  std::vector<char> onHeap(100);
  for (const void* pointer : {static_cast<const void*>(&onStack), static_cast<const void*>(onHeap.data()),
                              static_cast<const void*>(nullptr)}) {
    const MemoryInfo host = rt().classify(pointer);
    EXPECT_EQ(host.domain, MemoryDomain::Host);
    EXPECT_EQ(host.device, -1);
    EXPECT_EQ(host.bufferId, 0u);
  }

  void* freed = rt().allocPinnedHost(100);
  rt().freePinnedHost(freed);
  EXPECT_EQ(rt().classify(freed).domain, MemoryDomain::Host);  // as CUDA: host memory again
  expectError([&] { rt().allocPinnedHost(0); }, loomInvalidArgument, {"0 bytes"});
}

TEST(EmulatedDevice, CopiesEveryDirection) {
  constexpr size_t kBytes = 100003;
  StreamHandle stream;
  const std::vector<unsigned char> pattern = randomBytes(kBytes, 1);
  DeviceBuffer device0(kBytes + 64), device0b(kBytes + 64);
  rt().setCurrentDevice(1);
  DeviceBuffer device1(kBytes + 64);
  rt().setCurrentDevice(0);
  PinnedBuffer pinned(kBytes + 64), pinnedB(kBytes + 64);
  std::vector<unsigned char> host(kBytes + 64), host2(kBytes + 64);

  // host -> device -> device (odd offsets) -> other device -> pinned -> device -> pinned -> host.
  rt().copyAsync(device0.get() + 3, pattern.data(), kBytes, stream);
  rt().copyAsync(device0b.get() + 61, device0.get() + 3, kBytes, stream);
  rt().copyAsync(device1.get(), device0b.get() + 61, kBytes, stream);
  rt().copyAsync(pinned.get() + 5, device1.get(), kBytes, stream);
  rt().copyAsync(device0.get(), pinned.get() + 5, kBytes, stream);
  rt().copyAsync(pinnedB.get(), device0.get(), kBytes, stream);
  rt().copyAsync(host.data() + 1, pinnedB.get(), kBytes, stream);
  rt().copyAsync(host2.data(), host.data() + 1, kBytes, stream);
  rt().synchronize(stream, kSyncMs);
  EXPECT_EQ(std::memcmp(host2.data(), pattern.data(), kBytes), 0);
  EXPECT_EQ(std::memcmp(pinned.get() + 5, pattern.data(), kBytes), 0);

  // A fresh buffer is not zeroed (cudaMalloc does not zero either).
  DeviceBuffer fresh(256);
  unsigned char first[256];
  rt().copyAsync(first, fresh.get(), 256, stream);
  rt().synchronize(stream, kSyncMs);
  EXPECT_NE(first[0], 0);
}

TEST(EmulatedDevice, BadCopiesFailWhenEnqueued) {
  StreamHandle stream;
  DeviceBuffer buffer(1000);
  PinnedBuffer pinned(1000);
  std::vector<char> host(4096);
  expectError([&] { rt().copyAsync(buffer.get(), host.data(), 1001, stream); }, loomInvalidArgument,
              {"destination", pointerText(buffer.get()), "1001 bytes", "1 bytes past the allocation's end"});
  expectError([&] { rt().copyAsync(host.data(), buffer.get() + 900, 200, stream); }, loomInvalidArgument,
              {"source", "offset 900", "100 bytes past"});
  expectError([&] { rt().copyAsync(pinned.get() + 10, host.data(), 1000, stream); }, loomInvalidArgument,
              {"pinned host buffer", "10 bytes past"});
  expectError([&] { rt().copyAsync(nullptr, buffer.get(), 10, stream); }, loomInvalidArgument, {"null"});
  expectError([&] { rt().copyAsync(buffer.get() + 10, buffer.get(), 100, stream); }, loomInvalidArgument,
              {"overlap"});
  void* freed = rt().allocDevice(64);
  rt().freeDevice(freed);
  expectError([&] { rt().copyAsync(host.data(), freed, 8, stream); }, loomInvalidArgument, {"was freed"});
  expectError([&] { rt().copyAsync(host.data(), buffer.get(), 8, nullptr); }, loomInvalidArgument,
              {"not a live stream"});
  rt().synchronize(stream, kSyncMs);  // none of it was enqueued, and nothing failed
}

TEST(EmulatedDevice, StreamRunsWorkInOrder) {
  // 200 dependent steps, one synchronize: x += 1 through a kernel, then x bounced through
  // another buffer and a pinned one. Any reordering changes the result.
  constexpr size_t kCount = 1023;
  StreamHandle stream;
  DeviceBuffer x(kCount * 4), ones(kCount * 4), scratch(kCount * 4);
  PinnedBuffer bounce(kCount * 4);
  std::vector<int32_t> init(kCount), one(kCount, 1), out(kCount);
  for (size_t i = 0; i < kCount; ++i) init[i] = static_cast<int32_t>(i);
  rt().copyAsync(x.get(), init.data(), kCount * 4, stream);
  rt().copyAsync(ones.get(), one.data(), kCount * 4, stream);
  for (int step = 0; step < 200; ++step) {
    rt().reduceAsync(loomInt32, loomSum, x.get(), x.get(), ones.get(), kCount, stream);
    rt().copyAsync(scratch.get(), x.get(), kCount * 4, stream);
    rt().copyAsync(bounce.get(), scratch.get(), kCount * 4, stream);
    rt().copyAsync(x.get(), bounce.get(), kCount * 4, stream);
  }
  rt().copyAsync(out.data(), x.get(), kCount * 4, stream);
  rt().synchronize(stream, kSyncMs);
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(i) + 200) << i;
}

TEST(EmulatedDevice, DestroyStreamRunsQueuedWork) {
  std::atomic<bool> ran{false};
  DeviceStream stream = rt().createStream();
  emulatedEnqueueHostFunctionForTesting(stream, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ran = true;
  });
  rt().destroyStream(stream);
  EXPECT_TRUE(ran);
}

// ---- events, faults, devices, timeouts ----

TEST(EmulatedDevice, NeverRecordedEventIsComplete) {
  StreamHandle stream;
  EventHandle event;
  EXPECT_TRUE(rt().query(event));
  rt().streamWait(stream, event);  // nothing to wait for
  rt().synchronize(stream, kSyncMs);
}

TEST(EmulatedDevice, WaitBindsToTheLastRecordBeforeIt) {
  StreamHandle slow, waiter, fast;
  EventHandle event;
  Gate gate;
  std::atomic<bool> waiterRan{false};
  gate.block(slow);
  rt().record(event, slow);  // behind the gate
  EXPECT_FALSE(rt().query(event));
  rt().streamWait(waiter, event);  // binds to the record on `slow`
  emulatedEnqueueHostFunctionForTesting(waiter, [&] { waiterRan = true; });
  rt().record(event, fast);  // a later record completes at once; the wait does not move to it
  rt().synchronize(fast, kSyncMs);
  EXPECT_TRUE(rt().query(event));  // query sees the latest record
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waiterRan) << "the wait bound to a record made after it";
  gate.open();
  rt().synchronize(waiter, kSyncMs);
  EXPECT_TRUE(waiterRan);

  // A wait after the later record binds to it: with `slow` blocked again, it does not wait.
  Gate again;
  again.block(slow);
  rt().record(event, fast);
  rt().streamWait(waiter, event);
  rt().synchronize(waiter, kSyncMs);
  again.open();
  rt().synchronize(slow, kSyncMs);
}

TEST(EmulatedDevice, EventsBelongToTheirDevice) {
  EventHandle event;  // device 0
  rt().setCurrentDevice(1);
  StreamHandle stream1;
  rt().setCurrentDevice(0);
  expectError([&] { rt().record(event, stream1); }, loomInvalidArgument, {"device 0", "device 1"});
  // Waiting across devices is allowed.
  StreamHandle stream0;
  rt().record(event, stream0);
  rt().streamWait(stream1, event);
  rt().synchronize(stream1, kSyncMs);
  EXPECT_TRUE(rt().query(event));
}

TEST(EmulatedDevice, FaultIsSticky) {
  rt().setCurrentDevice(1);
  {
    StreamHandle stream, other;
    EventHandle event;
    std::vector<char> host(4096);
    void* buffer = rt().allocDevice(4096);
    Gate gate;
    gate.block(stream);
    rt().copyAsync(host.data(), buffer, 4096, stream);  // valid now...
    rt().record(event, stream);
    rt().freeDevice(buffer);  // ...not when it runs
    gate.open();
    expectError([&] { rt().synchronize(stream, kSyncMs); }, loomUnhandledCudaError,
                {"sticky", "device 1", "copy", "was freed after the work was enqueued", pointerText(buffer)});
    // Every later call on the device names the first fault; the event's record never ran.
    expectError([&] { rt().synchronize(other, kSyncMs); }, loomUnhandledCudaError, {"was freed after"});
    expectError([&] { rt().copyAsync(host.data(), host.data() + 8, 8, other); }, loomUnhandledCudaError,
                {"sticky"});
    expectError([&] { rt().allocDevice(64); }, loomUnhandledCudaError, {"sticky"});
    expectError([&] { rt().query(event); }, loomUnhandledCudaError, {"sticky"});
    // Device 0 is unaffected.
    rt().setCurrentDevice(0);
    StreamHandle healthy;
    DeviceBuffer fine(64);
    rt().copyAsync(host.data(), fine.get(), 64, healthy);
    rt().synchronize(healthy, kSyncMs);
    rt().setCurrentDevice(1);
    emulatedClearStickyErrorForTesting(1);
  }
  // A host function that throws is a fault too.
  {
    StreamHandle stream;
    emulatedEnqueueHostFunctionForTesting(stream, [] { throw Error(loomInternalError, "planted failure"); });
    expectError([&] { rt().synchronize(stream, kSyncMs); }, loomUnhandledCudaError, {"planted failure"});
    emulatedClearStickyErrorForTesting(1);
  }
  rt().setCurrentDevice(0);
}

TEST(EmulatedDevice, TwoDevicesAndPerThreadCurrentDevice) {
  EXPECT_EQ(rt().currentDevice(), 0);
  rt().setCurrentDevice(1);
  EXPECT_EQ(rt().currentDevice(), 1);
  int seenByOtherThread = -1;
  std::thread([&] { seenByOtherThread = rt().currentDevice(); }).join();
  EXPECT_EQ(seenByOtherThread, 0);
  {
    DeviceBuffer on1(128);
    EXPECT_EQ(rt().classify(on1.get()).device, 1);
    StreamHandle stream1;
    rt().setCurrentDevice(0);
    DeviceBuffer on0(128);
    EXPECT_EQ(rt().classify(on0.get()).device, 0);
    EXPECT_NE(reinterpret_cast<uintptr_t>(on0.get()) >> 44, reinterpret_cast<uintptr_t>(on1.get()) >> 44);
    // A copy between devices, on device 1's stream.
    const auto pattern = randomBytes(128, 77);
    std::vector<unsigned char> back(128);
    rt().copyAsync(on0.get(), pattern.data(), 128, stream1);
    rt().copyAsync(on1.get(), on0.get(), 128, stream1);
    rt().copyAsync(back.data(), on1.get(), 128, stream1);
    rt().synchronize(stream1, kSyncMs);
    EXPECT_EQ(back, pattern);
  }
  expectError([&] { rt().setCurrentDevice(2); }, loomInvalidArgument, {"setCurrentDevice(2)"});
  expectError([&] { rt().setCurrentDevice(-1); }, loomInvalidArgument, {"setCurrentDevice(-1)"});
  EXPECT_EQ(rt().currentDevice(), 0);
}

TEST(EmulatedDevice, SynchronizeTimesOut) {
  StreamHandle stream;
  Gate gate;
  gate.block(stream);
  const auto start = std::chrono::steady_clock::now();
  expectError([&] { rt().synchronize(stream, 100); }, loomSystemError,
              {"device stream", "made no progress for 100 ms", "host function"});
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  gate.open();
  rt().synchronize(stream, kSyncMs);  // a timeout is not a fault
  expectError([&] { rt().synchronize(stream, -1); }, loomInvalidArgument, {"timeout"});
}

// ---- what only a process can show ----

TEST(EmulatedDeviceDeathTest, HostReadOfDevicePointerCrashes) {
  // The child re-executes this test (not fork(): the runtime refuses a forked child).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  DeviceBuffer buffer(64);
  const volatile char* pointer = buffer.get();
  EXPECT_DEATH({ [[maybe_unused]] const char value = *pointer; }, "");
}

TEST(EmulatedDevice, SyscallOnDevicePointerFails) {
  DeviceBuffer buffer(4096);
  const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(write(fd, buffer.get(), 16), -1);
  EXPECT_EQ(errno, EFAULT);
  close(fd);
}

TEST(EmulatedDevice, ForkedChildIsRefused) {
  ASSERT_EQ(rt().deviceCount(), 2);  // initialised in this process
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 3;
    try {
      rt().allocDevice(64);
      code = 1;
    } catch (const Error& error) {
      code = error.code() == loomInvalidUsage &&
                     std::strstr(error.what(), "initialised before fork()") != nullptr &&
                     std::strstr(error.what(), "exec the child") != nullptr
                 ? 0
                 : 2;
    } catch (...) {
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: allowed; 2: wrong error; 3: another exception";
}

}  // namespace
}  // namespace loom::test
