// SPDX-License-Identifier: Apache-2.0
// DeviceRuntime: every device operation Loom's data path makes, behind one interface, as
// base/bootstrap.h is for the bootstrap. Declared here so every floor can name it; the
// implementations live in src/device/ (none, CUDA through the driver API, and the emulated GPU
// that CI tests with), and device/device_select.h picks one per process (LOOM_DEVICE).
//
// What a runtime does:
//   - classify a pointer: host (pageable), pinned host, device or managed memory, with its
//     device, the driver's id of its allocation (never reused), and the contiguous range that
//     is mapped around it (an allocator's segment may span several allocations: the range, not
//     the allocation, bounds what a call may touch);
//   - allocate device memory and pinned host memory;
//   - streams: queues that run copies and kernels in order, asynchronously;
//   - the reduction kernels (kernels/device_kernels.h), launched on a stream;
//   - events, with CUDA's semantics: a wait binds to the last record enqueued before it, an
//     event never recorded is complete, and a failure is sticky.
//
// Every wait here takes a deadline: a device that stops making progress is an error, never a
// hang. Errors are loom::Error (base/error.h) with loomUnhandledCudaError for what the device
// reported and loomInvalidArgument / loomInvalidUsage for what the caller passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom.h"

namespace loom {

enum class MemoryDomain : uint8_t {
  Host,        // pageable host memory: the host path, as if no runtime existed
  PinnedHost,  // page-locked host memory the device can reach (cudaMallocHost)
  Device,      // device memory: host code must not touch it
  Managed,     // unified memory: Loom treats it as device memory (copies through the runtime)
};
const char* memoryDomainName(MemoryDomain domain);  // "host", "pinned host", "device", "managed"

struct MemoryInfo {
  MemoryDomain domain = MemoryDomain::Host;
  int device = -1;          // the owning device; -1 for host memory
  uint64_t bufferId = 0;    // the driver's allocation id, never reused in a process; 0: none
  uintptr_t rangeBase = 0;  // the contiguous mapped range around the pointer (0, 0: unknown)
  size_t rangeBytes = 0;
};

inline bool isDeviceSide(MemoryDomain domain) {
  return domain == MemoryDomain::Device || domain == MemoryDomain::Managed;
}

// A canonical x86-64 / AArch64 48-bit user address has bits 63..47 equal. Host code cannot
// dereference anything else; the emulated GPU's device pointers are such addresses, so even
// without a runtime they are recognised as "not host memory" with one compare.
inline bool isCanonicalHostAddress(const void* pointer) {
  const uint64_t address = reinterpret_cast<uintptr_t>(pointer);
  return ((address + (uint64_t{1} << 47)) >> 48) == 0;
}

// Opaque handles owned by the runtime that made them.
struct DeviceStreamState;
struct DeviceEventState;
using DeviceStream = DeviceStreamState*;
using DeviceEvent = DeviceEventState*;

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // "none", "cuda", "emulated".
  virtual const char* name() const = 0;
  // False for the "none" runtime: no device exists and no device call may be made.
  virtual bool available() const = 0;
  virtual int deviceCount() = 0;
  // The calling thread's current device (CUDA: its current context's device, 0 if none is
  // current, as the CUDA runtime does); setCurrentDevice makes `device` current on this thread.
  virtual int currentDevice() = 0;
  virtual void setCurrentDevice(int device) = 0;

  // What `pointer` is. Throws loomInvalidArgument for a pointer the runtime recognises as its
  // own but cannot use (a freed device buffer, one from another process).
  virtual MemoryInfo classify(const void* pointer) = 0;

  // On the current device. Never returns null: throws loomUnhandledCudaError (out of memory
  // included, with the size in the message).
  virtual void* allocDevice(size_t bytes) = 0;
  virtual void freeDevice(void* pointer) noexcept = 0;
  virtual void* allocPinnedHost(size_t bytes) = 0;
  virtual void freePinnedHost(void* pointer) noexcept = 0;

  // The memory loomMemAlloc (ncclMemAlloc) hands out: `bytes` (> 0) that every Loom call takes,
  // made so that a later IPC path can share it with another process.
  //   cuda      device memory of the current device from the virtual memory API (cuMemCreate
  //             with a POSIX file-descriptor handle type, mapped read/write for that device),
  //             its size rounded up to the allocation granularity;
  //   emulated  device memory of the current device, as allocDevice;
  //   none      page-aligned host pages, faulted in (this runtime's one allocation: with no
  //             device, host memory is what every call takes).
  // Never returns null; throws loomUnhandledCudaError (loomSystemError for host pages) with the
  // size in the message. freeShareable takes a pointer allocShareable returned and the `bytes`
  // it was asked for; it releases what it can and throws what the driver said about the rest.
  virtual void* allocShareable(size_t bytes) = 0;
  virtual void freeShareable(void* pointer, size_t bytes) = 0;

  // A stream of the current device, which runs its work in the order it was enqueued.
  virtual DeviceStream createStream() = 0;
  virtual void destroyStream(DeviceStream stream) noexcept = 0;
  // Waits for everything enqueued on `stream` so far; throws on a failure of that work or when
  // timeoutMs passes first ("device stream made no progress for ... ms").
  virtual void synchronize(DeviceStream stream, int timeoutMs) = 0;
  // Waits, as synchronize does, for a stream the application made with the vendor's API (under
  // CUDA a CUstream / cudaStream_t; null: the legacy default stream of the current context), so
  // a call given that stream runs after the work queued on it. Runtimes without such streams
  // throw loomInvalidUsage.
  virtual void synchronizeApplicationStream(void* stream, int timeoutMs) = 0;

  // Enqueues a copy of `bytes` between any two of host, pinned host and device memory.
  virtual void copyAsync(void* dst, const void* src, size_t bytes, DeviceStream stream) = 0;
  // The reduction kernels of kernels/device_kernels.h, on device (or managed) memory, with
  // the host kernels' semantics (kernels/host/host_reduce.h, canonical_reduce.h):
  //   reduce:        dst[i] = a[i] op b[i] (avg reduces as sum); dst may alias a or b exactly;
  //   average:       avg's scaled step, dst = local * scale + (incomingRaw ? incoming * scale :
  //                  incoming) for floats, a plain sum for integers;
  //   finishAverage: dst /= averageDivisor(nranks) for floats, dst /= nranks for integers;
  //   premultiply:   dst[i] = scalar * src[i], PreMulSum's local step; `scalar` points to
  //                  typeSize(type) bytes of host or device memory, read when the kernel runs.
  virtual void reduceAsync(loomDataType_t type, loomRedOp_t op, void* dst, const void* a, const void* b,
                           size_t count, DeviceStream stream) = 0;
  virtual void averageAsync(loomDataType_t type, void* dst, const void* local, const void* incoming,
                            size_t count, int nranks, bool incomingRaw, DeviceStream stream) = 0;
  virtual void finishAverageAsync(loomDataType_t type, void* dst, size_t count, int nranks,
                                  DeviceStream stream) = 0;
  virtual void premultiplyAsync(loomDataType_t type, void* dst, const void* src, size_t count,
                                const void* scalar, DeviceStream stream) = 0;

  virtual DeviceEvent createEvent() = 0;
  virtual void destroyEvent(DeviceEvent event) noexcept = 0;
  virtual void record(DeviceEvent event, DeviceStream stream) = 0;
  // Work enqueued on `stream` after this waits for the record of `event` enqueued last before
  // this call (nothing, if the event was never recorded).
  virtual void streamWait(DeviceStream stream, DeviceEvent event) = 0;
  // True once that record has run (or the event was never recorded); throws on a failure.
  virtual bool query(DeviceEvent event) = 0;
};

// "device pointer 0x... of an emulated device, but ..." style text for error messages:
// "0x7f12...". Hex, no padding.
std::string pointerText(const void* pointer);

}  // namespace loom
