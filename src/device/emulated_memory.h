// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's memory: the device address space, the allocation table and pinned host
// memory (device/emulated_runtime.cc puts the DeviceRuntime around it).
//
// A device pointer is an address host code cannot dereference, as on a real GPU:
//
//   bit 63  62  61..48  47..44  43..0
//        0   1       0  device  offset in that device's address space
//
// Bit 62 set with bit 63 clear makes the address non-canonical on x86-64 and AArch64, so a stray
// host load of one SIGSEGVs, a syscall given one fails with EFAULT, and isCanonicalHostAddress()
// (base/device_runtime.h) recognises it with one compare. Only this file translates one into
// the host memory behind it, and only for the emulator's copies and kernels.
//
// Offsets are handed out by a bump allocator and never reused in a process, with a gap after
// every allocation, so a freed buffer, a pointer one past an allocation's end and a pointer
// into no allocation are each recognised rather than landing in some other live buffer. Every
// allocation is its own mmap, unmapped when freed (once no enqueued work still holds it), and
// filled with a poison pattern: cudaMalloc does not zero memory either, and code that assumes
// it does must fail here rather than on the first real GPU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

#include "base/device_runtime.h"

namespace loom::device::emulated {

inline constexpr int kDeviceCount = 2;

inline constexpr uint64_t kSpaceBits = uint64_t{1} << 62;
inline constexpr unsigned kDeviceShift = 44;
inline constexpr uint64_t kOffsetMask = (uint64_t{1} << kDeviceShift) - 1;
// cudaMalloc's alignment: kernels see 16-byte packs at every allocation's start, and callers'
// offsets alone decide whether an operand is packed (kernels/device_kernels.h).
inline constexpr size_t kAllocationAlignment = 256;
// What each emulated device holds, as a GPU's memory size: an allocation beyond it is out of
// memory. Small next to a real GPU, because every byte is host memory of the CI machine.
inline constexpr size_t kDeviceMemoryBytes = size_t{8} << 30;
// The byte every fresh allocation (device and pinned) is filled with.
inline constexpr unsigned char kPoisonByte = 0xa5;

// True for an address of the emulator's device address space (whatever its device field says).
inline bool inDeviceSpace(uintptr_t address) { return (address >> 48) == (kSpaceBits >> 48); }
inline int deviceOfAddress(uintptr_t address) { return static_cast<int>((address >> kDeviceShift) & 0xf); }

// Host memory of one mmap, unmapped by the destructor.
class HostMapping {
 public:
  // Maps `bytes` (> 0), faulted in and poisoned; throws loomUnhandledCudaError naming `what`.
  HostMapping(size_t bytes, const char* what);
  ~HostMapping();
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;

  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t length_ = 0;  // whole pages
};

// One live allocation: a device buffer or a pinned host block. Shared: the table holds it while
// it is live, and each enqueued copy or kernel holds the ones it touches, so a buffer freed
// while work on it is still queued stays mapped (the work fails instead of faulting the
// process: see Operand::checkLive).
struct Allocation {
  // `deviceAddress` for device memory; pinned memory's address is its backing's.
  Allocation(MemoryDomain domain, int device, uint64_t bufferId, uintptr_t deviceAddress, size_t bytes);

  const MemoryDomain domain;
  const int device;          // -1 for pinned host memory
  const uint64_t bufferId;   // unique in the process, never reused, from 1
  const size_t bytes;
  const HostMapping backing;  // the memory behind `address` (for pinned memory, the same bytes)
  const uintptr_t address;   // what the caller holds: the device address, or the host address
  std::atomic<bool> freed{false};

  // "buffer 3 (1024 bytes at 0x4000000000010000 on emulated device 0)".
  std::string describe() const;
};

// A pointer a copy or kernel will touch, translated when the work was enqueued.
struct Operand {
  MemoryDomain domain = MemoryDomain::Host;
  const void* pointer = nullptr;   // as the caller passed it
  char* host = nullptr;            // the host address the stream's worker touches
  std::shared_ptr<Allocation> allocation;  // keeps it mapped; null for pageable host memory
  const char* role = "";           // "the copy's source", for messages

  // On the worker, before the work runs: throws loomUnhandledCudaError when the buffer was
  // freed after the work was enqueued (an illegal address on a GPU).
  void checkLive() const;
};

class AddressSpace {
 public:
  AddressSpace() = default;
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // base/device_runtime.h's classify. Host pointers cost a canonical-address check and, when
  // pinned memory exists, one lookup under a shared lock.
  MemoryInfo classify(const void* pointer) const;

  void* allocDevice(int device, size_t bytes);
  void freeDevice(const void* pointer) noexcept;
  void* allocPinned(size_t bytes);
  void freePinned(const void* pointer) noexcept;

  // Translates `pointer` for an access of `bytes` bytes from it. Throws loomInvalidArgument
  // naming `role`, the pointer and the size for a freed buffer, an address in no allocation, a
  // device that does not exist, and an access that runs past its allocation's end.
  Operand resolve(const void* pointer, size_t bytes, const char* role) const;

 private:
  struct Freed {  // what is left of a freed device buffer, for the message
    size_t bytes;
    uint64_t bufferId;
  };
  struct DeviceSpace {
    std::map<uintptr_t, std::shared_ptr<Allocation>> live;  // by address
    std::map<uintptr_t, Freed> freed;                       // by address, the newest kept
    // Starts past 0 so that small offsets from the space's base fall in no allocation.
    uint64_t nextOffset = uint64_t{1} << 16;
    size_t liveBytes = 0;
  };

  // The allocation of `address` in `table` (by its start), or null.
  static const std::shared_ptr<Allocation>* find(const std::map<uintptr_t, std::shared_ptr<Allocation>>& table,
                                                 uintptr_t address);
  // Throws loomInvalidArgument saying why a device address resolves to no live allocation.
  [[noreturn]] void throwNotLive(const void* pointer, const char* role) const;  // mutex_ held

  mutable std::shared_mutex mutex_;
  DeviceSpace devices_[kDeviceCount];
  std::map<uintptr_t, std::shared_ptr<Allocation>> pinned_;
  std::atomic<size_t> pinnedCount_{0};  // lets classify() skip the lock when there is none
  uint64_t nextBufferId_ = 1;
};

}  // namespace loom::device::emulated
