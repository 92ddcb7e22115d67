// SPDX-License-Identifier: Apache-2.0
// The buffers registered with one communicator (loomCommRegister, ncclCommRegister). In this
// release a registration is checked and recorded, nothing more: no call looks them up yet. The
// checks are the ones a call makes of its buffers (core/buffer_domains.h), so a buffer that
// registers is one every call on the communicator takes, and a registration that a later path
// (IPC handles, network memory registration) will use is already known to be sound.
//
// A handle is a number, never an address: it is looked up, not dereferenced, so a garbage,
// stale or other communicator's handle is an argument error rather than a crash, and handles
// are never reused in a process, so a stale one cannot name a later registration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "base/device_runtime.h"

namespace loom {

class Registrations {
 public:
  Registrations() = default;
  // A communicator destroyed with registrations left drops them, as ncclCommDestroy does.
  ~Registrations();
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;

  // Checks [buffer, buffer + bytes) for a communicator bound to `device` (-1: none) through
  // `runtime` and records it; returns its handle. Throws loomInvalidArgument for a null buffer,
  // 0 bytes, a range that wraps the address space, a pointer the runtime refuses (freed, of
  // another process, not host memory without a runtime), device memory of another device, and
  // a range that runs past the mapped range the runtime reports around `buffer`.
  void* add(DeviceRuntime& runtime, int device, const void* buffer, size_t bytes);
  // Forgets the registration of `handle`. Throws loomInvalidArgument naming the handle when it
  // is none of this communicator's live registrations.
  void remove(const void* handle);

 private:
  struct Record {
    uintptr_t base;
    size_t bytes;
    MemoryDomain domain;
  };
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Record> live_;  // by handle
};

}  // namespace loom
