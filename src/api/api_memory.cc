// SPDX-License-Identifier: Apache-2.0
// Memory and registration entry points: loomMemAlloc / loomMemFree (ncclMemAlloc, ncclMemFree),
// loomCommRegister / loomCommDeregister (ncclCommRegister, ncclCommDeregister) and
// loomCommDevice (ncclCommCuDevice).
//
// loomMemAlloc's memory comes from the process's device runtime (DeviceRuntime::allocShareable
// says what each runtime makes). A process-wide table remembers every pointer it returned, with
// its size and the runtime that made it, so that loomMemFree releases it the way it was made
// and refuses anything else by name instead of handing the driver a pointer it never made.
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

#include "api/api_internal.h"
#include "base/device_runtime.h"
#include "base/error.h"
#include "base/fork_guard.h"
#include "base/log.h"
#include "device/device_select.h"

using namespace loom;

namespace {

class MemAllocations {
 public:
  // A fork while another thread holds the lock leaves the child a working table.
  void guardAcrossFork() { loom::guardAcrossFork(mutex_); }

  struct Entry {
    size_t bytes = 0;
    DeviceRuntime* runtime = nullptr;  // the one that made it, and frees it
  };

  void add(void* pointer, Entry entry) {
    const std::lock_guard<std::mutex> lock(mutex_);
    live_[key(pointer)] = entry;
    freed_.erase(key(pointer));  // an address can come back (host pages, a GPU's range)
  }

  // Takes `pointer`'s entry out of the table: one of two threads freeing it at once wins. Throws
  // loomInvalidArgument naming the pointer when it is not one loomMemAlloc returned and has not
  // freed since.
  Entry take(void* pointer) {
    const uintptr_t address = key(pointer);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = live_.find(address); it != live_.end()) {
      const Entry entry = it->second;
      live_.erase(it);
      remember(address);
      return entry;
    }
    const std::string what = "ptr " + pointerText(pointer);
    if (freed_.count(address) != 0)
      throwArgument(what + " was freed already (by an earlier loomMemFree)");
    if (auto it = live_.upper_bound(address); it != live_.begin()) {
      --it;
      if (address - it->first < it->second.bytes) {
        throwArgument(what + " is " + std::to_string(address - it->first) +
                      " bytes into the memory loomMemAlloc returned as " +
                      pointerText(reinterpret_cast<const void*>(it->first)) + " (" +
                      std::to_string(it->second.bytes) +
                      " bytes): free the pointer loomMemAlloc returned");
      }
    }
    throwArgument(
        what +
        " is not memory that loomMemAlloc returned (free cudaMalloc'd memory with cudaFree, "
        "host memory with free)");
  }

 private:
  // Freed pointers remembered for the "freed already" message. Bounded, so that a process that
  // allocates and frees for days does not grow; the oldest are forgotten first, and a forgotten
  // pointer gets the "not memory that loomMemAlloc returned" message.
  static constexpr size_t kFreedRemembered = 4096;

  static uintptr_t key(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

  void remember(uintptr_t address) {
    if (freed_.insert(address).second) freedOrder_.push_back(address);
    if (freedOrder_.size() > kFreedRemembered) {
      freed_.erase(freedOrder_.front());
      freedOrder_.pop_front();
    }
  }

  std::mutex mutex_;  // guarded across fork (base/fork_guard.h): any thread allocates
  std::map<uintptr_t, Entry> live_;  // ordered: a pointer into an allocation is found too
  std::unordered_set<uintptr_t> freed_;
  std::deque<uintptr_t> freedOrder_;
};

// Never destroyed: memory may be freed while the process exits, after static destruction.
MemAllocations& memAllocations() {
  static MemAllocations* const table = [] {
    auto* made = new MemAllocations;
    made->guardAcrossFork();
    return made;
  }();
  return *table;
}

}  // namespace

extern "C" {

loomResult_t loomMemAlloc(void** ptr, size_t size) {
  return api::guarded("loomMemAlloc", [&] {
    if (ptr == nullptr) throwArgument("ptr is NULL");
    *ptr = nullptr;
    if (size == 0) throwArgument("size is 0 (as ncclMemAlloc, a size of 0 is refused)");
    DeviceRuntime& runtime = device::processRuntime();
    void* memory = runtime.allocShareable(size);
    try {
      memAllocations().add(memory, {size, &runtime});
    } catch (
        ...) {  // out of memory for the table's entry: the caller gets nothing, and nothing leaks
      try {
        runtime.freeShareable(memory, size);
      } catch (const Error& error) {
        LOOM_WARN(ALLOC, "loomMemAlloc: freeing %s again: %s", pointerText(memory).c_str(),
                  error.what());
      }
      throw;
    }
    LOOM_TRACE(ALLOC, "loomMemAlloc: %zu bytes at %s (%s runtime)", size,
               pointerText(memory).c_str(), runtime.name());
    *ptr = memory;
  });
}

loomResult_t loomMemFree(void* ptr) {
  if (ptr == nullptr) return loomSuccess;  // as free(NULL) and ncclMemFree(NULL)
  return api::guarded("loomMemFree", [&] {
    const MemAllocations::Entry entry = memAllocations().take(ptr);
    entry.runtime->freeShareable(ptr, entry.bytes);
  });
}

loomResult_t loomCommRegister(const loomComm_t comm, void* buff, size_t size, void** handle) {
  return api::guarded("loomCommRegister", [&] {
    auto impl = api::checkedComm(comm);
    if (handle == nullptr) throwArgument("handle is NULL");
    *handle = nullptr;
    *handle = impl->registrations().add(device::processRuntime(), impl->device(), buff, size);
  });
}

loomResult_t loomCommDeregister(const loomComm_t comm, void* handle) {
  return api::guarded("loomCommDeregister", [&] {
    auto impl = api::checkedComm(comm);
    impl->registrations().remove(handle);
  });
}

loomResult_t loomCommDevice(const loomComm_t comm, int* device) {
  return api::guarded("loomCommDevice", [&] {
    auto impl = api::checkedComm(comm);
    if (device == nullptr) throwArgument("device is NULL");
    *device = impl->device();
    if (*device < 0) {
      throwUsage(
          "communicator " + impl->name() +
          " has no device: no device runtime was active when it was made (LOOM_DEVICE=none, or no "
          "libcuda.so.1 with a GPU was found)");
    }
  });
}

}  // extern "C"
