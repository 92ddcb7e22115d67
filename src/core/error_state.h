// SPDX-License-Identifier: Apache-2.0
// What a communicator knows of failure: whether it was aborted or revoked, how many calls are
// running (revoke reports loomInProgress until they have returned), and its first error, which
// sticks. Every thread may read it; the flags are what waits deep in a call poll.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "loom.h"

namespace loom {

class ErrorState {
 public:
  // loomCommAbort: every wait fails promptly, bootstrap exchanges (split, shrink) too.
  void abort() {
    bootstrapStop_.store(true);
    callStop_.store(true);
  }
  // loomCommRevoke: calls in flight fail promptly and later ones are refused, but the bootstrap
  // stays usable (split, shrink) and the failures are not errors of the job.
  void revoke() {
    revoked_.store(true);
    callStop_.store(true);
  }
  bool stopped() const { return callStop_.load(); }  // aborted or revoked
  bool revoked() const { return revoked_.load(); }
  // Polled by collectives' waits (abort or revoke) and by bootstrap waits (abort only).
  const std::atomic<bool>* callStopFlag() const { return &callStop_; }
  const std::atomic<bool>* bootstrapStopFlag() const { return &bootstrapStop_; }

  // The first error of any call, sticky, as loomCommGetAsyncError reports it. `failedCall`
  // names the call that failed ("allreduce #2 (10 x float32)"), for the calls refused after it.
  void record(loomResult_t code, const std::string& message, const std::string& failedCall);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // loomInProgress while a revoked communicator still runs a call, else the first error. Its
  // message is the failure's own until a later call has been refused, then that refusal's
  // (refusal()): what the newest failed call said, with the failure's at its end.
  loomResult_t asyncError(std::string* message = nullptr) const;
  // After a failure: the error for a later call, which is not run. It says since which call the
  // communicator is unusable and that it must be made anew, and ends with the failure's own
  // message, introduced as that call's, so that it does not read as a new disagreement. `who`
  // starts it ("rank 0"), `comm` names the communicator. loom_torch (user_errors.cc) finds
  // its phrases to say them in PyTorch's words: change both together.
  std::pair<loomResult_t, std::string> refusal(const std::string& who, const std::string& comm);

  // Held while a call runs. Only the holder of the communicator's turn runs a call, so at most
  // one is inside at a time: two stores, not two read-modify-writes on every call.
  class Running {
   public:
    explicit Running(ErrorState& state) : running_(state.running_) { running_.store(true, std::memory_order_release); }
    ~Running() { running_.store(false, std::memory_order_release); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    std::atomic<bool>& running_;
  };

 private:
  std::atomic<bool> callStop_{false};       // stops collectives: abort or revoke
  std::atomic<bool> bootstrapStop_{false};  // stops bootstrap exchanges: abort only
  std::atomic<bool> revoked_{false};
  std::atomic<bool> running_{false};        // the turn holder is inside Running
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};  // error_ != loomSuccess, readable without the lock
  loomResult_t error_ = loomSuccess;
  std::string message_;     // the failure's own
  std::string failedCall_;  // which call failed
  std::string refused_;     // the latest refusal of a later call; empty until there was one
};

}  // namespace loom
