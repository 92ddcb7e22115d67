// SPDX-License-Identifier: Apache-2.0
// When the emulated GPU refuses work, as CUDA does: after a fault in a device's work (a sticky
// error: every later call on that device fails, naming the first fault), and in a child forked
// after the runtime started (a CUDA context does not survive fork(); such a child must exec).
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "device/emulated_memory.h"

namespace loom::device::emulated {

// Per device: the first failure of any work that device's streams ran. Once set it stays set,
// as a CUDA context's error does, until clear() (tests only).
class StickyErrors {
 public:
  // Keeps `failure` if it is the device's first.
  void record(int device, const std::string& failure);
  bool failed(int device) const { return failed_[device].load(std::memory_order_acquire); }
  // Throws loomUnhandledCudaError naming the device's first failure, if it has one.
  void check(int device) const;
  // The text check() throws; "" when the device has not failed.
  std::string message(int device) const;
  void clear(int device);

 private:
  std::atomic<bool> failed_[kDeviceCount] = {};
  mutable std::mutex mutex_;
  std::string first_[kDeviceCount];
};

// Registers the fork handler (once per process; later calls do nothing). From then on a child
// that fork() makes is refused by refuseInForkedChild.
void installForkGuard();
// True in a child forked after installForkGuard().
bool inForkedChild() noexcept;
// Throws loomInvalidUsage in such a child: its copy of the runtime has no stream workers and
// locks that threads of the parent may have held when it forked.
void refuseInForkedChild();

}  // namespace loom::device::emulated
