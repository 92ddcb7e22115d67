// SPDX-License-Identifier: Apache-2.0
#include "device/emulated_faults.h"

#include <pthread.h>

#include "base/error.h"

namespace loom::device::emulated {
namespace {

// Set in the child by the atfork handler: a plain store, safe there.
std::atomic<bool> forkedChild{false};

void markForkedChild() { forkedChild.store(true, std::memory_order_relaxed); }

}  // namespace

void StickyErrors::record(int device, const std::string& failure) {
  const std::lock_guard lock(mutex_);
  if (failed_[device].load(std::memory_order_relaxed)) return;
  first_[device] = failure;
  failed_[device].store(true, std::memory_order_release);
}

std::string StickyErrors::message(int device) const {
  if (!failed(device)) return {};
  const std::lock_guard lock(mutex_);
  return "emulated device " + std::to_string(device) +
         " has a sticky error (as a CUDA context keeps one after a fault, every later call on the device "
         "fails): " + first_[device];
}

void StickyErrors::check(int device) const {
  if (failed(device)) throw Error(loomUnhandledCudaError, message(device));
}

void StickyErrors::clear(int device) {
  const std::lock_guard lock(mutex_);
  first_[device].clear();
  failed_[device].store(false, std::memory_order_release);
}

void installForkGuard() {
  static const int registered = pthread_atfork(nullptr, nullptr, &markForkedChild);
  if (registered != 0) throwSystem("emulated device runtime: pthread_atfork", registered);
}

bool inForkedChild() noexcept { return forkedChild.load(std::memory_order_relaxed); }

void refuseInForkedChild() {
  if (inForkedChild()) {
    throw Error(loomInvalidUsage,
                "the emulated device runtime was initialised before fork(); as with CUDA, a forked child "
                "cannot use it: exec the child");
  }
}

}  // namespace loom::device::emulated
