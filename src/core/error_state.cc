// SPDX-License-Identifier: Apache-2.0
#include "core/error_state.h"

namespace loom {

void ErrorState::record(loomResult_t code, const std::string& message, const std::string& failedCall) {
  std::lock_guard lock(mutex_);
  if (error_ == loomSuccess) {
    error_ = code;
    message_ = message;
    failedCall_ = failedCall;
    failed_.store(true, std::memory_order_release);
  }
}

loomResult_t ErrorState::asyncError(std::string* message) const {
  if (revoked() && running_.load(std::memory_order_acquire)) return loomInProgress;
  std::lock_guard lock(mutex_);
  if (message) *message = refused_.empty() ? message_ : refused_;
  return error_;
}

std::pair<loomResult_t, std::string> ErrorState::refusal(const std::string& who, const std::string& comm) {
  std::lock_guard lock(mutex_);
  const std::string call = failedCall_.empty() ? std::string("an earlier call") : "its " + failedCall_;
  // The call's name without its size: "allreduce #2 (10 x float32)" -> "allreduce #2".
  const std::string shortName = failedCall_.empty() ? call : failedCall_.substr(0, failedCall_.find(" ("));
  refused_ = who + ": communicator " + comm + " is unusable since " + call +
             " failed; destroy it (loomCommDestroy) and create a new one (after a dead rank, loomCommShrink "
             "makes one of the survivors). The failure of " + shortName + ": " + message_;
  return {error_, refused_};
}

}  // namespace loom
