// SPDX-License-Identifier: Apache-2.0
// What a communicator knows of failure: whether it was aborted or revoked, how many calls are
// running (revoke reports loomInProgress until they have returned), and its first error, which
// sticks. Every thread may read it; the flags are what waits deep in a call poll.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

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

  // The first error of any call, sticky, as loomCommGetAsyncError reports it.
  void record(loomResult_t code, const std::string& message);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // loomInProgress while a revoked communicator still runs a call, else the first error.
  loomResult_t asyncError(std::string* message = nullptr) const;

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
  std::string message_;
};

}  // namespace loom
