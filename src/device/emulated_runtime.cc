// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's DeviceRuntime: the calls of base/device_runtime.h on top of the address
// space (emulated_memory.h), the stream workers (emulated_streams.h), the events
// (emulated_events.h) and the kernel launches (emulated_kernels.h). Every call first refuses to
// run in a child forked after the runtime started, then checks its handles and arguments and
// the device's sticky error, so a caller's mistake is a clear error at the call that made it.
#include "device/emulated_runtime.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "base/log.h"
#include "device/device_select.h"
#include "device/emulated_events.h"
#include "device/emulated_faults.h"
#include "device/emulated_kernels.h"
#include "device/emulated_memory.h"
#include "device/emulated_streams.h"

namespace loom::device {
namespace {

namespace kd = loom::kernels::device;

// The test hooks' copy pacing (emulated_runtime.h): a delay before each copy, and a gate that
// lets only so many more copies run (-1: open).
struct CopyPacing {
  std::atomic<int64_t> delayUs{0};
  std::mutex mutex;
  std::condition_variable opened;
  int64_t allowed = -1;

  void beforeCopy() {
    if (const int64_t delay = delayUs.load(std::memory_order_relaxed); delay > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay));
    }
    std::unique_lock lock(mutex);
    // Bounded, so a test that fails before it opens the gate does not hang its stream workers.
    opened.wait_for(lock, std::chrono::seconds(30), [this] { return allowed != 0; });
    if (allowed > 0) --allowed;
  }
};
CopyPacing& copyPacing() {
  static CopyPacing pacing;
  return pacing;
}
using emulated::Event;
using emulated::KernelLaunch;
using emulated::KernelRequest;
using emulated::Operand;
using emulated::RecordMarker;
using emulated::Stream;
using emulated::Task;
using emulated::kDeviceCount;
using emulated::refuseInForkedChild;

// As a CUDA thread's current context: per thread, device 0 until the thread sets another.
thread_local int currentDeviceOfThread = 0;

class EmulatedRuntime final : public DeviceRuntime {
 public:
  EmulatedRuntime() { emulated::installForkGuard(); }

  const char* name() const override { return "emulated"; }
  bool available() const override { return true; }
  int deviceCount() override {
    refuseInForkedChild();
    return kDeviceCount;
  }
  int currentDevice() override {
    refuseInForkedChild();
    return currentDeviceOfThread;
  }
  void setCurrentDevice(int device) override {
    refuseInForkedChild();
    if (device < 0 || device >= kDeviceCount) {
      throwArgument("setCurrentDevice(" + std::to_string(device) + "): the emulated runtime has devices 0 to " +
                    std::to_string(kDeviceCount - 1));
    }
    currentDeviceOfThread = device;
  }

  MemoryInfo classify(const void* pointer) override {
    refuseInForkedChild();
    classifyCalls_.fetch_add(1, std::memory_order_relaxed);
    return memory_.classify(pointer);
  }

  void* allocDevice(size_t bytes) override {
    refuseInForkedChild();
    sticky_.check(currentDeviceOfThread);
    return memory_.allocDevice(currentDeviceOfThread, bytes);
  }
  void freeDevice(void* pointer) noexcept override {
    if (!emulated::inForkedChild()) memory_.freeDevice(pointer);
  }
  void* allocPinnedHost(size_t bytes) override {
    refuseInForkedChild();
    return memory_.allocPinned(bytes);
  }
  void freePinnedHost(void* pointer) noexcept override {
    if (!emulated::inForkedChild()) memory_.freePinned(pointer);
  }
  // loomMemAlloc's memory is the device's own: the emulator has no process to share it with.
  void* allocShareable(size_t bytes) override { return allocDevice(bytes); }
  void freeShareable(void* pointer, size_t) override {
    refuseInForkedChild();
    memory_.freeDevice(pointer);
  }

  DeviceStream createStream() override {
    refuseInForkedChild();
    const int device = currentDeviceOfThread;
    sticky_.check(device);
    auto stream = std::make_unique<Stream>(device, nextStreamId_.fetch_add(1, std::memory_order_relaxed), sticky_);
    // The handle is the object's address, cast: DeviceStreamState stays an incomplete type, so
    // the emulator and the CUDA runtime need not agree on one definition of it.
    const auto handle = reinterpret_cast<DeviceStream>(stream.get());
    const std::lock_guard lock(handlesMutex_);
    streams_.emplace(handle, std::move(stream));
    return handle;
  }
  void destroyStream(DeviceStream handle) noexcept override {
    if (emulated::inForkedChild()) return;
    std::unique_ptr<Stream> stream;
    {
      const std::lock_guard lock(handlesMutex_);
      auto it = streams_.find(handle);
      if (it != streams_.end()) {
        stream = std::move(it->second);
        streams_.erase(it);
      }
    }
    if (!stream) {
      LOOM_WARN_ALWAYS(ALLOC, "emulated device runtime: destroyStream(%s): not a live stream; nothing destroyed",
                       pointerText(handle).c_str());
    }
    // Destroyed outside the lock: the worker first runs what is still queued.
  }
  void synchronize(DeviceStream handle, int timeoutMs) override {
    refuseInForkedChild();
    stream(handle, "synchronize").synchronize(timeoutMs);
  }
  void synchronizeApplicationStream(void*, int) override {
    throwUsage("the emulated device runtime has no application streams (there is no CUDA runtime to make one); "
               "pass the NULL stream (0)");
  }

  void copyAsync(void* dst, const void* src, size_t bytes, DeviceStream handle) override {
    refuseInForkedChild();
    Stream& target = stream(handle, "copyAsync");
    sticky_.check(target.device());
    if (bytes == 0) return;  // touches nothing, as cuMemcpyAsync of 0 bytes
    Operand to = memory_.resolve(dst, bytes, "the copy's destination");
    Operand from = memory_.resolve(src, bytes, "the copy's source");
    if (to.host != from.host && to.host < from.host + bytes && from.host < to.host + bytes) {
      throwArgument("copyAsync of " + std::to_string(bytes) + " bytes from " + pointerText(src) + " to " +
                    pointerText(dst) + ": the ranges overlap (a device copy's source and destination must not)");
    }
    copyCalls_.fetch_add(1, std::memory_order_relaxed);
    target.enqueue(Task{"copy", [to = std::move(to), from = std::move(from), bytes] {
                          copyPacing().beforeCopy();
                          to.checkLive();
                          from.checkLive();
                          std::memcpy(to.host, from.host, bytes);
                        }, {}});
  }

  void reduceAsync(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b, size_t count,
                   DeviceStream handle) override {
    KernelRequest request;
    request.kind = kd::KernelKind::Reduce;
    request.type = type, request.op = op, request.dst = dst, request.a = a, request.b = b, request.count = count;
    launch(request, handle, "reduceAsync");
  }
  void averageAsync(loomDataType_t type, void* dst, const void* local, const void* incoming, size_t count,
                    int nranks, bool incomingRaw, DeviceStream handle) override {
    KernelRequest request;
    request.kind = kd::KernelKind::Average;
    request.type = type, request.dst = dst, request.a = local, request.b = incoming, request.count = count;
    request.nranks = nranks, request.incomingRaw = incomingRaw;
    launch(request, handle, "averageAsync");
  }
  void finishAverageAsync(loomDataType_t type, void* dst, size_t count, int nranks, DeviceStream handle) override {
    KernelRequest request;
    request.kind = kd::KernelKind::FinishAverage;
    request.type = type, request.dst = dst, request.count = count, request.nranks = nranks;
    launch(request, handle, "finishAverageAsync");
  }
  void premultiplyAsync(loomDataType_t type, void* dst, const void* src, size_t count, const void* scalar,
                        DeviceStream handle) override {
    KernelRequest request;
    request.kind = kd::KernelKind::Premultiply;
    request.type = type, request.dst = dst, request.a = src, request.count = count, request.scalar = scalar;
    launch(request, handle, "premultiplyAsync");
  }

  DeviceEvent createEvent() override {
    refuseInForkedChild();
    const int device = currentDeviceOfThread;
    sticky_.check(device);
    auto event = std::make_unique<Event>(device, nextEventId_.fetch_add(1, std::memory_order_relaxed));
    const auto handle = reinterpret_cast<DeviceEvent>(event.get());  // as createStream's handle
    const std::lock_guard lock(handlesMutex_);
    events_.emplace(handle, std::move(event));
    return handle;
  }
  void destroyEvent(DeviceEvent handle) noexcept override {
    if (emulated::inForkedChild()) return;
    std::unique_ptr<Event> event;  // records still queued or waited for keep their markers
    const std::lock_guard lock(handlesMutex_);
    auto it = events_.find(handle);
    if (it == events_.end()) {
      LOOM_WARN_ALWAYS(ALLOC, "emulated device runtime: destroyEvent(%s): not a live event; nothing destroyed",
                       pointerText(handle).c_str());
      return;
    }
    event = std::move(it->second);
    events_.erase(it);
  }
  void record(DeviceEvent eventHandle, DeviceStream streamHandle) override {
    refuseInForkedChild();
    Event& target = event(eventHandle, "record");
    Stream& on = stream(streamHandle, "record");
    if (target.device() != on.device()) {
      throwArgument("record: event " + std::to_string(target.id()) + " of emulated device " +
                    std::to_string(target.device()) + " cannot be recorded on " + on.name() +
                    " (an event belongs to the device it was created on)");
    }
    auto marker = std::make_shared<RecordMarker>();
    on.enqueue(Task{"event record", [marker] { marker->complete(""); },
                    [marker](const std::string& failure) { marker->complete(failure); }});
    target.setLatest(std::move(marker));
  }
  void streamWait(DeviceStream streamHandle, DeviceEvent eventHandle) override {
    refuseInForkedChild();
    Stream& waiter = stream(streamHandle, "streamWait");
    Event& source = event(eventHandle, "streamWait");
    std::shared_ptr<RecordMarker> marker = source.latest();  // the record this wait binds to
    if (!marker) {
      sticky_.check(waiter.device());
      return;  // never recorded: complete, nothing to wait for
    }
    const std::string what = "event " + std::to_string(source.id()) + " of emulated device " +
                             std::to_string(source.device());
    waiter.enqueue(Task{"event wait", [marker, what] {
                          const std::string failure = marker->wait();
                          if (!failure.empty()) {
                            throw Error(loomUnhandledCudaError,
                                        "the record of " + what + " it waited for failed: " + failure);
                          }
                        }, {}});
  }
  bool query(DeviceEvent handle) override {
    refuseInForkedChild();
    Event& target = event(handle, "query");
    sticky_.check(target.device());
    const std::shared_ptr<RecordMarker> marker = target.latest();
    if (!marker) return true;
    if (!marker->done()) return false;
    const std::string failure = marker->failure();
    if (!failure.empty()) {
      throw Error(loomUnhandledCudaError, "the latest record of event " + std::to_string(target.id()) +
                                              " of emulated device " + std::to_string(target.device()) +
                                              " failed: " + failure);
    }
    return true;
  }

  uint64_t classifyCalls() const { return classifyCalls_.load(std::memory_order_relaxed); }
  uint64_t copyCalls() const { return copyCalls_.load(std::memory_order_relaxed); }

  // For emulatedEnqueueHostFunctionForTesting.
  void enqueueHostFunction(DeviceStream handle, std::function<void()> fn) {
    refuseInForkedChild();
    stream(handle, "enqueueHostFunction").enqueue(Task{"host function", std::move(fn), {}});
  }
  void clearStickyError(int device) {
    if (device < 0 || device >= kDeviceCount) throwArgument("no emulated device " + std::to_string(device));
    sticky_.clear(device);
  }

 private:
  Stream& stream(DeviceStream handle, const char* call) {
    const std::lock_guard lock(handlesMutex_);
    auto it = streams_.find(handle);
    if (it == streams_.end()) {
      throwArgument(std::string(call) + ": stream " + pointerText(handle) +
                    " is not a live stream of the emulated device runtime (null, destroyed, or another "
                    "runtime's; the emulator has no default stream)");
    }
    return *it->second;
  }
  Event& event(DeviceEvent handle, const char* call) {
    const std::lock_guard lock(handlesMutex_);
    auto it = events_.find(handle);
    if (it == events_.end()) {
      throwArgument(std::string(call) + ": event " + pointerText(handle) +
                    " is not a live event of the emulated device runtime (null, destroyed, or another "
                    "runtime's)");
    }
    return *it->second;
  }
  void launch(const KernelRequest& request, DeviceStream handle, const char* call) {
    refuseInForkedChild();
    Stream& on = stream(handle, call);
    sticky_.check(on.device());
    auto kernel = std::make_shared<const KernelLaunch>(memory_, request, on.device());
    const char* name = kernel->name();
    on.enqueue(Task{name, [kernel = std::move(kernel)] { kernel->run(); }, {}});
  }

  emulated::AddressSpace memory_;
  emulated::StickyErrors sticky_;
  std::atomic<uint64_t> nextStreamId_{1};
  std::atomic<uint64_t> nextEventId_{1};
  std::mutex handlesMutex_;
  std::unordered_map<DeviceStream, std::unique_ptr<Stream>> streams_;
  std::unordered_map<DeviceEvent, std::unique_ptr<Event>> events_;
  std::atomic<uint64_t> classifyCalls_{0};
  std::atomic<uint64_t> copyCalls_{0};
};

EmulatedRuntime& instance() {
  // Made on first use and never destroyed: streams a program did not destroy still have worker
  // threads at exit, and a static destructor would unmap memory or join threads under them
  // while other static destructors run. The process's exit reclaims it all.
  static EmulatedRuntime* const runtime = new EmulatedRuntime();
  return *runtime;
}

}  // namespace

DeviceRuntime& emulatedRuntime() { return instance(); }

void emulatedEnqueueHostFunctionForTesting(DeviceStream stream, std::function<void()> fn) {
  instance().enqueueHostFunction(stream, std::move(fn));
}

void emulatedClearStickyErrorForTesting(int device) { instance().clearStickyError(device); }

uint64_t emulatedClassifyCallsForTesting() { return instance().classifyCalls(); }
uint64_t emulatedCopyCallsForTesting() { return instance().copyCalls(); }

void emulatedSetCopyDelayForTesting(std::chrono::microseconds delay) {
  copyPacing().delayUs.store(delay.count(), std::memory_order_relaxed);
}

void emulatedGateCopiesForTesting(int64_t allowed) {
  CopyPacing& pacing = copyPacing();
  {
    const std::lock_guard lock(pacing.mutex);
    pacing.allowed = allowed;
  }
  pacing.opened.notify_all();
}

}  // namespace loom::device
