// SPDX-License-Identifier: Apache-2.0
#include "device/emulated_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "base/error.h"
#include "base/log.h"

namespace loom::device::emulated {
namespace {

// Freed buffers remembered for "was freed" messages. Bounded so that a process allocating and
// freeing for days does not grow without limit; past it the oldest are forgotten and their
// pointers get the vaguer "in no allocation" message.
constexpr size_t kFreedRemembered = size_t{1} << 20;
// Empty address space after every device allocation: a pointer one past an allocation's end,
// or an access that overruns it a little, lands in no allocation instead of the next buffer.
constexpr uint64_t kGuardBytes = 4096;
// Large mappings ask for transparent huge pages: filling the poison faults every page in, at
// about 11 us a 4 KiB fault here, and 2 MiB pages take 512 times fewer.
constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t pageBytes() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

std::string deviceText(int device) { return "emulated device " + std::to_string(device); }

// The device field of a device-space address, checked against the devices that exist.
int checkedDevice(const void* pointer, const char* role) {
  const int device = deviceOfAddress(reinterpret_cast<uintptr_t>(pointer));
  if (device >= kDeviceCount) {
    throwArgument(std::string(role) + " " + pointerText(pointer) + " is a device pointer of emulated device " +
                  std::to_string(device) + ", which does not exist (there are " +
                  std::to_string(kDeviceCount) + ")");
  }
  return device;
}

[[noreturn]] void throwForeign(const void* pointer, const char* role) {
  throwArgument(std::string(role) + " " + pointerText(pointer) +
                " is neither a host address nor a device pointer of the emulated runtime (a pointer of "
                "another runtime or process, or garbage)");
}

}  // namespace

HostMapping::HostMapping(size_t bytes, const char* what) {
  if (bytes > (size_t{1} << 47)) {  // more than a user address space: and the rounding would wrap
    throw Error(loomUnhandledCudaError, std::string("out of memory: ") + what + " of " + std::to_string(bytes) +
                                            " bytes: more than an address space holds");
  }
  length_ = (bytes + pageBytes() - 1) / pageBytes() * pageBytes();
  void* mapped = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    const int err = errno;
    throw Error(loomUnhandledCudaError, std::string("out of memory: ") + what + " of " + std::to_string(bytes) +
                                            " bytes: mmap: " + errnoText(err));
  }
  // Advice only: without huge pages the fill below is merely slower.
  if (length_ >= kHugePageBytes) (void)madvise(mapped, length_, MADV_HUGEPAGE);
  // Faults every page in now (pinned memory is resident; a device buffer's first copy should
  // not pay for faults either) and leaves no zeros for code that wrongly expects them.
  std::memset(mapped, kPoisonByte, length_);
  data_ = static_cast<char*>(mapped);
}

HostMapping::~HostMapping() {
  if (data_ != nullptr) munmap(data_, length_);
}

Allocation::Allocation(MemoryDomain domain, int device, uint64_t bufferId, uintptr_t deviceAddress,
                       size_t bytes)
    : domain(domain),
      device(device),
      bufferId(bufferId),
      bytes(bytes),
      backing(bytes, domain == MemoryDomain::Device ? "allocating device memory" : "allocating pinned host memory"),
      address(domain == MemoryDomain::Device ? deviceAddress : reinterpret_cast<uintptr_t>(backing.data())) {}

std::string Allocation::describe() const {
  const std::string where = domain == MemoryDomain::Device ? " on " + deviceText(device) : "";
  return std::string(domain == MemoryDomain::Device ? "buffer " : "pinned host buffer ") + std::to_string(bufferId) +
         " (" + std::to_string(bytes) + " bytes at " + pointerText(reinterpret_cast<const void*>(address)) + where +
         ")";
}

void Operand::checkLive() const {
  if (allocation && allocation->freed.load(std::memory_order_acquire)) {
    throw Error(loomUnhandledCudaError, std::string("illegal address: ") + role + " " + pointerText(pointer) +
                                            " is in " + allocation->describe() +
                                            ", which was freed after the work was enqueued and before it ran");
  }
}

const std::shared_ptr<Allocation>* AddressSpace::find(
    const std::map<uintptr_t, std::shared_ptr<Allocation>>& table, uintptr_t address) {
  auto it = table.upper_bound(address);
  if (it == table.begin()) return nullptr;
  --it;
  return address - it->first < it->second->bytes ? &it->second : nullptr;
}

void AddressSpace::throwNotLive(const void* pointer, const char* role) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  const int device = deviceOfAddress(address);
  const DeviceSpace& space = devices_[device];
  const std::string what = std::string(role) + " " + pointerText(pointer);
  auto freed = space.freed.upper_bound(address);
  if (freed != space.freed.begin()) {
    --freed;
    if (address - freed->first < freed->second.bytes) {
      throwArgument(what + " is in buffer " + std::to_string(freed->second.bufferId) + " (" +
                    std::to_string(freed->second.bytes) + " bytes at " +
                    pointerText(reinterpret_cast<const void*>(freed->first)) + " on " + deviceText(device) +
                    "), which was freed");
    }
  }
  if ((address & kOffsetMask) >= space.nextOffset) {
    throwArgument(what + " is a device address beyond every allocation made on " + deviceText(device));
  }
  throwArgument(what + " is in no allocation of " + deviceText(device) +
                " (past an allocation's end, between allocations, or in one freed long ago)");
}

MemoryInfo AddressSpace::classify(const void* pointer) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  if (isCanonicalHostAddress(pointer)) {
    if (pinnedCount_.load(std::memory_order_acquire) == 0) return MemoryInfo{};
    const std::shared_lock lock(mutex_);
    if (const auto* found = find(pinned_, address)) {
      const Allocation& block = **found;
      return MemoryInfo{MemoryDomain::PinnedHost, -1, block.bufferId, block.address, block.bytes};
    }
    return MemoryInfo{};
  }
  if (!inDeviceSpace(address)) throwForeign(pointer, "pointer");
  const int device = checkedDevice(pointer, "pointer");
  const std::shared_lock lock(mutex_);
  const auto* found = find(devices_[device].live, address);
  if (found == nullptr) throwNotLive(pointer, "pointer");
  const Allocation& buffer = **found;
  return MemoryInfo{MemoryDomain::Device, device, buffer.bufferId, buffer.address, buffer.bytes};
}

Operand AddressSpace::resolve(const void* pointer, size_t bytes, const char* role) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  Operand operand;
  operand.pointer = pointer;
  operand.role = role;
  if (isCanonicalHostAddress(pointer)) {
    if (pointer == nullptr && bytes > 0) {
      throwArgument(std::string(role) + " is a null pointer (for " + std::to_string(bytes) + " bytes)");
    }
    operand.host = static_cast<char*>(const_cast<void*>(pointer));
    if (pinnedCount_.load(std::memory_order_acquire) == 0) return operand;
    const std::shared_lock lock(mutex_);
    const auto* found = find(pinned_, address);
    if (found == nullptr) return operand;
    const size_t offset = address - (*found)->address;
    if (bytes > (*found)->bytes - offset) {
      throwArgument(std::string(role) + " " + pointerText(pointer) + " (offset " + std::to_string(offset) + " in " +
                    (*found)->describe() + ") cannot take " + std::to_string(bytes) + " bytes: the access runs " +
                    std::to_string(bytes - ((*found)->bytes - offset)) + " bytes past the allocation's end");
    }
    operand.domain = MemoryDomain::PinnedHost;
    operand.allocation = *found;
    return operand;
  }
  if (!inDeviceSpace(address)) throwForeign(pointer, role);
  const int device = checkedDevice(pointer, role);
  const std::shared_lock lock(mutex_);
  const auto* found = find(devices_[device].live, address);
  if (found == nullptr) throwNotLive(pointer, role);
  const Allocation& buffer = **found;
  const size_t offset = address - buffer.address;
  if (bytes > buffer.bytes - offset) {
    throwArgument(std::string(role) + " " + pointerText(pointer) + " (offset " + std::to_string(offset) + " in " +
                  buffer.describe() + ") cannot take " + std::to_string(bytes) + " bytes: the access runs " +
                  std::to_string(bytes - (buffer.bytes - offset)) + " bytes past the allocation's end");
  }
  operand.domain = MemoryDomain::Device;
  operand.host = buffer.backing.data() + offset;
  operand.allocation = *found;
  return operand;
}

void* AddressSpace::allocDevice(int device, size_t bytes) {
  const std::string what = std::to_string(bytes) + " bytes of device memory on " + deviceText(device);
  if (bytes == 0) throwArgument("allocating 0 bytes of device memory on " + deviceText(device) +
                                " (cuMemAlloc refuses a size of 0 too)");
  uint64_t offset = 0, bufferId = 0;
  {
    // Reserve the address range, the id and the capacity under the lock; map outside it (the
    // fill takes milliseconds for a large buffer). The range is never handed out again, even
    // when the mapping fails.
    const std::unique_lock lock(mutex_);
    DeviceSpace& space = devices_[device];
    if (bytes > kDeviceMemoryBytes - space.liveBytes) {
      throw Error(loomUnhandledCudaError, "out of memory: allocating " + what + ", which holds " +
                                              std::to_string(space.liveBytes) + " of its " +
                                              std::to_string(kDeviceMemoryBytes) + " bytes in live allocations");
    }
    const uint64_t end = (space.nextOffset + bytes + kAllocationAlignment - 1) / kAllocationAlignment *
                         kAllocationAlignment;
    if (end + kGuardBytes > kOffsetMask) {
      throw Error(loomUnhandledCudaError, "out of memory: allocating " + what +
                                              ": its address space is used up (offsets are never reused)");
    }
    offset = space.nextOffset;
    space.nextOffset = end + kGuardBytes;
    space.liveBytes += bytes;
    bufferId = nextBufferId_++;
  }
  const uintptr_t address = kSpaceBits | (uint64_t(device) << kDeviceShift) | offset;
  std::shared_ptr<Allocation> buffer;
  try {
    buffer = std::make_shared<Allocation>(MemoryDomain::Device, device, bufferId, address, bytes);
  } catch (...) {
    {
      const std::unique_lock lock(mutex_);
      devices_[device].liveBytes -= bytes;
    }
    try {
      throw;
    } catch (const Error& error) {
      throw Error(error.code(), std::string(error.what()) + " (on " + deviceText(device) + ")");
    }
  }
  const std::unique_lock lock(mutex_);
  devices_[device].live.emplace(address, std::move(buffer));
  return reinterpret_cast<void*>(address);
}

void AddressSpace::freeDevice(const void* pointer) noexcept {
  if (pointer == nullptr) return;  // cudaFree(nullptr) does nothing
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  if (!inDeviceSpace(address) || deviceOfAddress(address) >= kDeviceCount) {
    LOOM_WARN_ALWAYS(ALLOC, "emulated device runtime: freeDevice(%s): not a device pointer of the emulated runtime",
                     pointerText(pointer).c_str());
    return;
  }
  std::shared_ptr<Allocation> buffer;  // released after the lock: the last holder unmaps it
  {
    const std::unique_lock lock(mutex_);
    DeviceSpace& space = devices_[deviceOfAddress(address)];
    auto it = space.live.find(address);
    if (it == space.live.end()) {
      LOOM_WARN_ALWAYS(ALLOC,
                       "emulated device runtime: freeDevice(%s): not the start of a live allocation (freed "
                       "twice, or a pointer into a buffer); nothing freed",
                       pointerText(pointer).c_str());
      return;
    }
    buffer = std::move(it->second);
    space.live.erase(it);
    buffer->freed.store(true, std::memory_order_release);
    space.liveBytes -= buffer->bytes;
    space.freed.emplace(address, Freed{buffer->bytes, buffer->bufferId});
    if (space.freed.size() > kFreedRemembered) space.freed.erase(space.freed.begin());
  }
}

void* AddressSpace::allocPinned(size_t bytes) {
  if (bytes == 0) throwArgument("allocating 0 bytes of pinned host memory (cuMemAllocHost refuses a size of 0 too)");
  uint64_t bufferId = 0;
  {
    const std::unique_lock lock(mutex_);
    bufferId = nextBufferId_++;
  }
  auto block = std::make_shared<Allocation>(MemoryDomain::PinnedHost, -1, bufferId, 0, bytes);
  void* pointer = block->backing.data();
  const std::unique_lock lock(mutex_);
  pinned_.emplace(block->address, std::move(block));
  pinnedCount_.store(pinned_.size(), std::memory_order_release);
  return pointer;
}

void AddressSpace::freePinned(const void* pointer) noexcept {
  if (pointer == nullptr) return;
  std::shared_ptr<Allocation> block;  // released after the lock: the last holder unmaps it
  const std::unique_lock lock(mutex_);
  auto it = pinned_.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == pinned_.end()) {
    LOOM_WARN_ALWAYS(ALLOC,
                     "emulated device runtime: freePinnedHost(%s): not the start of a live pinned allocation "
                     "(freed twice, a pointer into a block, or not pinned memory); nothing freed",
                     pointerText(pointer).c_str());
    return;
  }
  block = std::move(it->second);
  pinned_.erase(it);
  block->freed.store(true, std::memory_order_release);
  pinnedCount_.store(pinned_.size(), std::memory_order_release);
}

}  // namespace loom::device::emulated
