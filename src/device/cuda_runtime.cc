// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime of base/device_runtime.h, over the driver API (cuda_driver.h) that Loom opens
// at first use. It keeps to the CUDA runtime API's conventions, so that an application's
// cudaSetDevice, cudaMalloc and streams and Loom's see the same state:
//   - a device's context is its primary context (cuDevicePrimaryCtxRetain), the one the
//     runtime API uses; the current device is the current context's, 0 when none is current;
//   - work that needs a device and finds no current context makes device 0's primary context
//     current first, as the runtime API's first call does;
//   - a stream or event belongs to the context current when it was made, and every call on it
//     runs with that context current (ContextScope), whatever the thread's current one is.
#include "device/cuda_driver.h"
#include "device/device_select.h"

#if !LOOM_CUDA_DRIVER

namespace loom::device {

DeviceRuntime* cudaRuntime(std::string* why) {
  if (why != nullptr)
    *why = "built without CUDA (no cuda.h of CUDA 12.0 or newer when this Loom was compiled)";
  return nullptr;
}

}  // namespace loom::device

#else

#include <chrono>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/backoff.h"
#include "base/datatype.h"
#include "base/error.h"
#include "base/log.h"
#include "device/cuda_fatbin.h"
#include "device/cuda_kernel_module.h"
#include "device/cuda_vmm.h"
#include "kernels/device_kernels.h"

namespace loom::device::cuda {
namespace {

using kernels::device::KernelArgs;
using kernels::device::KernelKind;

// What DeviceStream and DeviceEvent point to. Named here, not as loom::DeviceStreamState: each
// runtime has its own, and one program (libloom) must not define that type twice.
struct Stream {
  CUstream stream = nullptr;
  CUcontext context = nullptr;
  int device = 0;
};
struct Event {
  CUevent event = nullptr;
  CUcontext context = nullptr;
};

Stream& streamOf(DeviceStream stream, const char* what) {
  if (stream == nullptr) throwArgument(std::string(what) + ": null device stream");
  return *reinterpret_cast<Stream*>(stream);
}
Event& eventOf(DeviceEvent event, const char* what) {
  if (event == nullptr) throwArgument(std::string(what) + ": null device event");
  return *reinterpret_cast<Event*>(event);
}

CUdeviceptr devicePointer(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

// synchronize() polls cuStreamQuery (a blocking cuStreamSynchronize could not honour a
// deadline). Device work is usually done within a millisecond or two: poll without sleeping
// that long (spinning, then yielding the core), then sleep in steps that start short and stay
// at most a millisecond, so a finished stream is noticed within about that.
constexpr BackoffPolicy kSyncPolicy{.spinRounds = 64,
                                    .yieldRounds = 2048,
                                    .firstSleepUs = 20,
                                    .roundsPerDoubling = 8,
                                    .maxDoublings = 6,
                                    .maxSleepUs = 1000};

// Makes `context` the calling thread's current context for a scope and puts back the one that
// was current before (nothing to do in the usual case, where it already is).
class ContextScope {
 public:
  ContextScope(const Driver& driver, CUcontext context) : driver_(driver) {
    driver_.check(driver_.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent",
                  "finding the current context");
    if (previous_ == context) return;
    driver_.check(driver_.cuCtxSetCurrent(context), "cuCtxSetCurrent",
                  "switching to a stream's context");
    switched_ = true;
  }
  ~ContextScope() {
    if (switched_ && driver_.cuCtxSetCurrent(previous_) != CUDA_SUCCESS) {
      LOOM_WARN(INIT, "CUDA: could not make the previous context current again");
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const Driver& driver_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  CudaRuntime(const Driver& driver, int devices) : driver_(driver), modules_(driver) {
    devices_.resize(static_cast<size_t>(devices));
    primary_.resize(static_cast<size_t>(devices), nullptr);
    for (int i = 0; i < devices; ++i) {
      driver_.check(driver_.cuDeviceGet(&devices_[static_cast<size_t>(i)], i), "cuDeviceGet",
                    [&] { return "getting device " + std::to_string(i); });
    }
  }

  const char* name() const override { return "cuda"; }
  bool available() const override { return true; }
  int deviceCount() override { return static_cast<int>(devices_.size()); }

  int currentDevice() override {
    CUcontext context = nullptr;
    driver_.check(driver_.cuCtxGetCurrent(&context), "cuCtxGetCurrent",
                  "finding the current device");
    if (context == nullptr) return 0;  // as cudaGetDevice says before any device is chosen
    CUdevice device = 0;
    driver_.check(driver_.cuCtxGetDevice(&device), "cuCtxGetDevice",
                  "finding the current context's device");
    return ordinalOf(device);
  }

  void setCurrentDevice(int device) override {
    driver_.check(driver_.cuCtxSetCurrent(primaryContext(device)), "cuCtxSetCurrent", [&] {
      return "making device " + std::to_string(device) + "'s primary context current";
    });
  }

  // One cuPointerGetAttributes call for everything: the pointer is asked about on every
  // collective, and each driver call costs about a microsecond.
  MemoryInfo classify(const void* pointer) override {
    unsigned int memoryType = 0;
    int ordinal = -1;
    unsigned long long bufferId = 0;
    CUdeviceptr rangeStart = 0;
    size_t rangeSize = 0;
    unsigned int managed = 0;  // a bool to the driver; zeroed, so either width reads right
    CUpointer_attribute attributes[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,  CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* data[] = {&memoryType, &ordinal, &bufferId, &rangeStart, &rangeSize, &managed};
    const CUresult result = driver_.cuPointerGetAttributes(
        static_cast<unsigned>(std::size(attributes)), attributes, data, devicePointer(pointer));
    // Memory no CUDA call made or registered: pageable host memory. Older drivers say so with
    // CUDA_ERROR_INVALID_VALUE, newer ones with memory type 0.
    if (result == CUDA_ERROR_INVALID_VALUE || (result == CUDA_SUCCESS && memoryType == 0)) {
      return MemoryInfo{};
    }
    driver_.check(result, "cuPointerGetAttributes",
                  [&] { return "classifying buffer " + pointerText(pointer); });
    MemoryInfo info;
    info.bufferId = bufferId;
    info.rangeBase = static_cast<uintptr_t>(rangeStart);
    info.rangeBytes = rangeSize;
    if (managed != 0) {
      info.domain = MemoryDomain::Managed;
      info.device = ordinal;
    } else if (memoryType == CU_MEMORYTYPE_HOST) {
      info.domain = MemoryDomain::PinnedHost;  // host memory: no owning device (MemoryInfo)
    } else {
      info.domain = MemoryDomain::Device;
      info.device = ordinal;
    }
    return info;
  }

  void* allocDevice(size_t bytes) override {
    const int device = ensureContext();
    CUdeviceptr pointer = 0;
    // cuMemAlloc refuses 0 bytes; a buffer of nothing is still a distinct, freeable pointer.
    driver_.check(driver_.cuMemAlloc(&pointer, bytes > 0 ? bytes : 1), "cuMemAlloc", [&] {
      return "allocating " + std::to_string(bytes) + " bytes of device memory on device " +
             std::to_string(device);
    });
    return reinterpret_cast<void*>(pointer);
  }
  void freeDevice(void* pointer) noexcept override {
    if (pointer == nullptr) return;
    const CUresult result = driver_.cuMemFree(devicePointer(pointer));
    if (result != CUDA_SUCCESS) {
      LOOM_WARN(ALLOC, "cuMemFree(%s): %s", pointerText(pointer).c_str(),
                driver_.describe(result).c_str());
    }
  }
  void* allocPinnedHost(size_t bytes) override {
    const int device = ensureContext();
    void* pointer = nullptr;
    // Portable: pinned for every context, not just the current one, as cudaMallocHost's is.
    driver_.check(driver_.cuMemHostAlloc(&pointer, bytes > 0 ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE),
                  "cuMemHostAlloc", [&] {
                    return "allocating " + std::to_string(bytes) +
                           " bytes of pinned host memory (device " + std::to_string(device) +
                           " current)";
                  });
    return pointer;
  }
  void freePinnedHost(void* pointer) noexcept override {
    if (pointer == nullptr) return;
    const CUresult result = driver_.cuMemFreeHost(pointer);
    if (result != CUDA_SUCCESS) {
      LOOM_WARN(ALLOC, "cuMemFreeHost(%s): %s", pointerText(pointer).c_str(),
                driver_.describe(result).c_str());
    }
  }

  // Virtual-memory allocations (cuda_vmm.h), so that they can be exported to another process.
  void* allocShareable(size_t bytes) override {
    const int device = ensureContext();
    return createShareable(driver_, devices_[static_cast<size_t>(device)], device, bytes);
  }
  void freeShareable(void* pointer, size_t) override {
    if (pointer == nullptr) return;
    ensureContext();  // the driver's address-range queries want a context, any one
    destroyShareable(driver_, pointer);
  }

  DeviceStream createStream() override {
    auto stream = std::make_unique<Stream>();
    stream->device = ensureContext();
    driver_.check(driver_.cuCtxGetCurrent(&stream->context), "cuCtxGetCurrent",
                  "creating a stream");
    // Non-blocking: Loom's streams must not wait for (or hold up) the application's work on the
    // legacy default stream.
    driver_.check(driver_.cuStreamCreate(&stream->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
                  [&] { return "creating a stream on device " + std::to_string(stream->device); });
    return reinterpret_cast<DeviceStream>(stream.release());
  }
  void destroyStream(DeviceStream handle) noexcept override {
    if (handle == nullptr) return;
    const std::unique_ptr<Stream> stream(reinterpret_cast<Stream*>(handle));
    const CUresult result = driver_.cuStreamDestroy(stream->stream);
    if (result != CUDA_SUCCESS)
      LOOM_WARN(INIT, "cuStreamDestroy: %s", driver_.describe(result).c_str());
  }

  void synchronize(DeviceStream handle, int timeoutMs) override {
    Stream& stream = streamOf(handle, "synchronize");
    const ContextScope scope(driver_, stream.context);
    waitForStream(stream.stream, stream.device, timeoutMs);
  }

  void synchronizeApplicationStream(void* handle, int timeoutMs) override {
    // The stream's own context: the application may have another one current, or none yet.
    CUcontext context = nullptr;
    if (handle == nullptr) {
      ensureContext();
      driver_.check(driver_.cuCtxGetCurrent(&context), "cuCtxGetCurrent", "finding the current context");
    } else {
      driver_.check(driver_.cuStreamGetCtx(static_cast<CUstream>(handle), &context), "cuStreamGetCtx",
                    "finding the context of the application's stream");
    }
    const ContextScope scope(driver_, context);
    CUstream stream = handle != nullptr ? static_cast<CUstream>(handle) : CU_STREAM_LEGACY;
    waitForStream(stream, currentDevice(), timeoutMs);
  }

  // Polls cuStreamQuery until `stream` (of the current context) is idle, at most timeoutMs.
  void waitForStream(CUstream stream, int device, int timeoutMs) {
    if (timeoutMs < 0) {
      throwArgument("synchronize(" + std::to_string(timeoutMs) +
                    " ms): the timeout must be >= 0 (every device "
                    "wait has a deadline)");
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    Backoff backoff(kSyncPolicy);
    for (;;) {
      const CUresult result = driver_.cuStreamQuery(stream);
      if (result == CUDA_SUCCESS) return;
      if (result != CUDA_ERROR_NOT_READY) {
        driver_.fail("cuStreamQuery", result,
                     "waiting for a stream of device " + std::to_string(device));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        throw Error(loomSystemError,
                    "device stream of CUDA device " + std::to_string(device) +
                        " made no progress for " + std::to_string(timeoutMs) +
                        " ms: work enqueued on it has not finished (cuStreamQuery: "
                        "CUDA_ERROR_NOT_READY)");
      }
      switch (backoff.next()) {
        case Backoff::Phase::Spin:
          cpuPause();
          break;
        case Backoff::Phase::Yield:
          std::this_thread::yield();
          break;
        case Backoff::Phase::Sleep:
          std::this_thread::sleep_for(std::chrono::microseconds(backoff.sleepUs()));
          break;
      }
    }
  }

  // Unified addressing: the driver tells host, pinned and device memory apart by address, so
  // one call serves every direction.
  void copyAsync(void* dst, const void* src, size_t bytes, DeviceStream handle) override {
    Stream& stream = streamOf(handle, "copyAsync");
    if (bytes == 0) return;
    const ContextScope scope(driver_, stream.context);
    driver_.check(
        driver_.cuMemcpyAsync(devicePointer(dst), devicePointer(src), bytes, stream.stream),
        "cuMemcpyAsync", [&] {
          return "copying " + std::to_string(bytes) + " bytes from " + pointerText(src) + " to " +
                 pointerText(dst) + " on a stream of device " + std::to_string(stream.device);
        });
  }

  void reduceAsync(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
                   size_t count, DeviceStream stream) override {
    checkType(type, "reduce kernel");
    if (kernelOpIndex(op) < 0) {
      throwArgument("reduce kernel: no device kernel for reduction op " +
                    std::to_string(static_cast<int>(op)));
    }
    KernelArgs args;
    args.dst = dst;
    args.a = a;
    args.b = b;
    launch(KernelKind::Reduce, type, op, args, count, {dst, a, b}, stream, "reduce kernel");
  }
  void averageAsync(loomDataType_t type, void* dst, const void* local, const void* incoming,
                    size_t count, int nranks, bool incomingRaw, DeviceStream stream) override {
    checkType(type, "average kernel");
    checkRanks(nranks, "average kernel");
    KernelArgs args;
    args.dst = dst;
    args.a = local;
    args.b = incoming;
    args.nranks = nranks;
    args.incomingRaw = incomingRaw;
    launch(KernelKind::Average, type, loomSum, args, count, {dst, local, incoming}, stream,
           "average kernel");
  }
  void finishAverageAsync(loomDataType_t type, void* dst, size_t count, int nranks,
                          DeviceStream stream) override {
    checkType(type, "finish-average kernel");
    checkRanks(nranks, "finish-average kernel");
    KernelArgs args;
    args.dst = dst;
    args.a = dst;
    args.nranks = nranks;
    launch(KernelKind::FinishAverage, type, loomSum, args, count, {dst}, stream,
           "finish-average kernel");
  }
  // A scalar in host memory (pageable or pinned) is read now, into the kernel's arguments: the
  // kernel cannot dereference pageable memory, and its value is known at enqueue. One in device
  // memory is passed by address and read when the kernel runs, after whatever wrote it.
  void premultiplyAsync(loomDataType_t type, void* dst, const void* src, size_t count,
                        const void* scalar, DeviceStream stream) override {
    checkType(type, "premultiply kernel");
    if (scalar == nullptr) throwArgument("premultiply kernel: null scalar");
    KernelArgs args;
    args.dst = dst;
    args.a = src;
    if (isDeviceSide(classify(scalar).domain)) {
      args.b = scalar;
    } else {
      std::memcpy(&args.scalarBits, scalar, typeSize(type));
    }
    launch(KernelKind::Premultiply, type, loomSum, args, count, {dst, src}, stream,
           "premultiply kernel");
  }

  DeviceEvent createEvent() override {
    auto event = std::make_unique<Event>();
    const int device = ensureContext();
    driver_.check(driver_.cuCtxGetCurrent(&event->context), "cuCtxGetCurrent", "creating an event");
    // No timing: a timing event costs a timestamp write on every record, and Loom only orders.
    driver_.check(driver_.cuEventCreate(&event->event, CU_EVENT_DISABLE_TIMING), "cuEventCreate",
                  [&] { return "creating an event on device " + std::to_string(device); });
    return reinterpret_cast<DeviceEvent>(event.release());
  }
  void destroyEvent(DeviceEvent handle) noexcept override {
    if (handle == nullptr) return;
    const std::unique_ptr<Event> event(reinterpret_cast<Event*>(handle));
    const CUresult result = driver_.cuEventDestroy(event->event);
    if (result != CUDA_SUCCESS)
      LOOM_WARN(INIT, "cuEventDestroy: %s", driver_.describe(result).c_str());
  }
  void record(DeviceEvent eventHandle, DeviceStream streamHandle) override {
    Event& event = eventOf(eventHandle, "record");
    Stream& stream = streamOf(streamHandle, "record");
    const ContextScope scope(driver_, stream.context);
    driver_.check(driver_.cuEventRecord(event.event, stream.stream), "cuEventRecord", [&] {
      return "recording an event on a stream of device " + std::to_string(stream.device);
    });
  }
  void streamWait(DeviceStream streamHandle, DeviceEvent eventHandle) override {
    Stream& stream = streamOf(streamHandle, "streamWait");
    Event& event = eventOf(eventHandle, "streamWait");
    const ContextScope scope(driver_, stream.context);
    driver_.check(driver_.cuStreamWaitEvent(stream.stream, event.event, 0), "cuStreamWaitEvent",
                  [&] {
                    return "making a stream of device " + std::to_string(stream.device) +
                           " wait for an event";
                  });
  }
  bool query(DeviceEvent handle) override {
    Event& event = eventOf(handle, "query");
    const CUresult result = driver_.cuEventQuery(event.event);
    if (result == CUDA_ERROR_NOT_READY) return false;
    driver_.check(result, "cuEventQuery", "asking whether an event has completed");
    return true;
  }

 private:
  int ordinalOf(CUdevice device) const {
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i] == device) return static_cast<int>(i);
    }
    throwInternal("CUDA device handle " + std::to_string(device) + " is none of the " +
                  std::to_string(devices_.size()) + " devices cuDeviceGet listed");
  }

  // The device's primary context, retained once and kept for the process: the application (and
  // the CUDA runtime API) share it, and memory Loom allocated in it must outlive every call.
  CUcontext primaryContext(int device) {
    if (device < 0 || device >= deviceCount()) {
      throwArgument("CUDA device " + std::to_string(device) +
                    " does not exist: this process sees " + std::to_string(deviceCount()) +
                    " (CUDA_VISIBLE_DEVICES may hide others)");
    }
    const std::lock_guard<std::mutex> lock(primaryMutex_);
    CUcontext& context = primary_[static_cast<size_t>(device)];
    if (context == nullptr) {
      driver_.check(
          driver_.cuDevicePrimaryCtxRetain(&context, devices_[static_cast<size_t>(device)]),
          "cuDevicePrimaryCtxRetain",
          [&] { return "retaining device " + std::to_string(device) + "'s primary context"; });
    }
    return context;
  }

  // The current context's device; with none current, device 0's primary context becomes current
  // first, as the CUDA runtime API does on its first call.
  int ensureContext() {
    CUcontext context = nullptr;
    driver_.check(driver_.cuCtxGetCurrent(&context), "cuCtxGetCurrent",
                  "finding the current context");
    if (context == nullptr) {
      setCurrentDevice(0);
      return 0;
    }
    return currentDevice();
  }

  static void checkType(loomDataType_t type, const char* what) {
    if (typeSize(type) == 0) {
      throwArgument(std::string(what) + ": unknown datatype " +
                    std::to_string(static_cast<int>(type)));
    }
  }
  static void checkRanks(int nranks, const char* what) {
    if (nranks < 1)
      throwArgument(std::string(what) + ": nranks " + std::to_string(nranks) + " (must be >= 1)");
  }

  // One launch of a kernel of device_kernels.h over `count` elements, in the stream's context.
  // Packed (16-byte loads and stores) when every pointer the kernel touches allows it.
  void launch(KernelKind kind, loomDataType_t type, loomRedOp_t op, KernelArgs args, size_t count,
              std::initializer_list<const void*> pointers, DeviceStream handle, const char* what) {
    Stream& stream = streamOf(handle, what);
    if (count == 0) return;
    args.count = count;
    args.packed = true;
    for (const void* pointer : pointers)
      args.packed = args.packed && kernels::device::packAligned(pointer);
    const auto shape = kernels::device::launchShape(count, typeSize(type), args.packed);
    const ContextScope scope(driver_, stream.context);
    CUfunction function = modules_.find(stream.context, stream.device, kind, type, op);
    void* parameters[] = {&args};
    driver_.check(driver_.cuLaunchKernel(function, shape.blocks, 1, 1, shape.threadsPerBlock, 1, 1,
                                         0, stream.stream, parameters, nullptr),
                  "cuLaunchKernel", [&] {
                    return std::string("launching the ") + what + " (" + typeName(type) + ", " +
                           std::to_string(count) + " elements, " + std::to_string(shape.blocks) +
                           " blocks of " + std::to_string(shape.threadsPerBlock) + ") on device " +
                           std::to_string(stream.device);
                  });
  }

  const Driver& driver_;
  KernelModules modules_;
  std::vector<CUdevice> devices_;  // by ordinal
  std::mutex primaryMutex_;
  std::vector<CUcontext> primary_;  // by ordinal; null until retained
};

struct Created {
  std::unique_ptr<CudaRuntime> runtime;
  std::string why;
};

Created create() {
  std::string why;
  const Driver* driver = loadDriver(&why);
  if (driver == nullptr) return Created{nullptr, why};
  const std::string where =
      " (driver " + driver->libraryPath + ", " + cudaVersionText(driver->driverVersion) + ")";
  if (!kHaveFatbin) {
    return Created{
        nullptr,
        "built without CUDA kernels: nvcc was not found when this Loom was configured, so it "
        "carries no device code" +
            where};
  }
  int devices = 0;
  driver->check(driver->cuDeviceGetCount(&devices), "cuDeviceGetCount", "counting CUDA devices");
  if (devices == 0) return Created{nullptr, "no CUDA device: the driver reports none" + where};
  LOOM_INFO(INIT, "CUDA: %d devices%s", devices, where.c_str());
  return Created{std::make_unique<CudaRuntime>(*driver, devices), {}};
}

}  // namespace
}  // namespace loom::device::cuda

namespace loom::device {

// Made once, and never destroyed: the process's runtime must outlive static destruction, since
// threads (the application's, Loom's own) may still call it while the process exits.
DeviceRuntime* cudaRuntime(std::string* why) {
  static const cuda::Created* const created = new cuda::Created([] {
    try {
      return cuda::create();
    } catch (const Error& error) {  // a driver call that failed on the way
      return cuda::Created{nullptr, error.what()};
    }
  }());
  if (created->runtime == nullptr && why != nullptr) *why = created->why;
  return created->runtime.get();
}

}  // namespace loom::device

#endif  // LOOM_CUDA_DRIVER
