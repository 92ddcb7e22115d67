// SPDX-License-Identifier: Apache-2.0
#include "device/emulated_events.h"

#include <utility>

namespace loom::device::emulated {

void RecordMarker::complete(const std::string& failure) {
  {
    const std::lock_guard lock(mutex_);
    if (done_) return;
    done_ = true;
    failure_ = failure;
  }
  completed_.notify_all();
}

bool RecordMarker::done() const {
  const std::lock_guard lock(mutex_);
  return done_;
}

std::string RecordMarker::wait() const {
  std::unique_lock lock(mutex_);
  completed_.wait(lock, [&] { return done_; });
  return failure_;
}

std::string RecordMarker::failure() const {
  const std::lock_guard lock(mutex_);
  return failure_;
}

void Event::setLatest(std::shared_ptr<RecordMarker> marker) {
  const std::lock_guard lock(mutex_);
  latest_ = std::move(marker);
}

std::shared_ptr<RecordMarker> Event::latest() const {
  const std::lock_guard lock(mutex_);
  return latest_;
}

}  // namespace loom::device::emulated
