// SPDX-License-Identifier: Apache-2.0
#include "core/error_state.h"

namespace loom {

void ErrorState::record(loomResult_t code, const std::string& message) {
  std::lock_guard lock(mutex_);
  if (error_ == loomSuccess) {
    error_ = code;
    message_ = message;
    failed_.store(true, std::memory_order_release);
  }
}

loomResult_t ErrorState::asyncError(std::string* message) const {
  if (revoked() && running_.load(std::memory_order_acquire)) return loomInProgress;
  std::lock_guard lock(mutex_);
  if (message) *message = message_;
  return error_;
}

}  // namespace loom
