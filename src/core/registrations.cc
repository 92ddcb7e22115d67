// SPDX-License-Identifier: Apache-2.0
#include "core/registrations.h"

#include <atomic>
#include <string>

#include "base/error.h"
#include "base/log.h"

namespace loom {
namespace {

// Handles are kTag | serial: the tag makes a handle a non-canonical address (a stray
// dereference faults at once) that reads "LM" in a debugger, and tells a handle of some
// communicator from anything else in messages.
constexpr uint64_t kTag = uint64_t{0x4c4d} << 48;
constexpr uint64_t kSerialMask = (uint64_t{1} << 48) - 1;

uint64_t nextHandle() {
  static std::atomic<uint64_t> serials{0};
  return kTag | ((serials.fetch_add(1, std::memory_order_relaxed) + 1) & kSerialMask);
}

std::string bufferText(const void* buffer, size_t bytes) {
  return "buff " + pointerText(buffer) + " (" + std::to_string(bytes) + " bytes)";
}

}  // namespace

Registrations::~Registrations() {
  if (!live_.empty()) {
    LOOM_INFO(ALLOC, "communicator destroyed with %zu buffers still registered: dropped",
              live_.size());
  }
}

void* Registrations::add(DeviceRuntime& runtime, int device, const void* buffer, size_t bytes) {
  if (buffer == nullptr) throwArgument("buff is NULL");
  if (bytes == 0)
    throwArgument("size is 0: there is nothing to register at " + pointerText(buffer));
  const uintptr_t start = reinterpret_cast<uintptr_t>(buffer);
  if (bytes - 1 > UINTPTR_MAX - start) {
    throwArgument(bufferText(buffer, bytes) + " runs past the end of the address space");
  }
  MemoryInfo info;
  try {
    info = runtime.classify(buffer);
  } catch (const Error& error) {
    throw Error(error.code(), "buff: " + std::string(error.what()));
  }
  // What a call checks of its buffers (core/buffer_domains.cc): a device buffer belongs to the
  // communicator's device; managed memory may live anywhere.
  if (info.domain == MemoryDomain::Device && info.device != device) {
    throwArgument(bufferText(buffer, bytes) + " is memory of device " +
                  std::to_string(info.device) + ", but " +
                  (device < 0 ? std::string("this communicator has no device")
                              : "this communicator is bound to device " + std::to_string(device) +
                                    " (the device current when it was initialised)"));
  }
  // The range must lie inside one mapped range, where the runtime knows one (pageable host
  // memory has none).
  if (info.rangeBytes != 0 &&
      (start < info.rangeBase || bytes > info.rangeBytes - (start - info.rangeBase))) {
    throwArgument(bufferText(buffer, bytes) + " runs past its " + memoryDomainName(info.domain) +
                  " allocation (" + pointerText(reinterpret_cast<const void*>(info.rangeBase)) +
                  ", " + std::to_string(info.rangeBytes) + " bytes), which ends " +
                  std::to_string(info.rangeBase + info.rangeBytes - start) + " bytes after buff");
  }
  const uint64_t handle = nextHandle();
  const std::lock_guard<std::mutex> lock(mutex_);
  live_.emplace(handle, Record{start, bytes, info.domain});
  LOOM_TRACE(ALLOC, "registered %s (%s memory) as handle %s", bufferText(buffer, bytes).c_str(),
             memoryDomainName(info.domain),
             pointerText(reinterpret_cast<const void*>(handle)).c_str());
  return reinterpret_cast<void*>(handle);
}

void Registrations::remove(const void* handle) {
  const uint64_t key = reinterpret_cast<uintptr_t>(handle);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (live_.erase(key) == 1) return;
  }
  if (handle == nullptr) throwArgument("handle is NULL");
  if ((key & ~kSerialMask) != kTag) {
    throwArgument("handle " + pointerText(handle) +
                  " is not a handle that loomCommRegister returned");
  }
  throwArgument(
      "handle " + pointerText(handle) +
      " is not a live registration of this communicator (deregistered already, or registered with "
      "another communicator)");
}

}  // namespace loom
