// An ordered host stream: work items run one after another on the stream's own thread, so a
// caller can enqueue collectives and go on computing (as a CUDA stream does for NCCL).
// The first failure is kept and reported by synchronize(); later items still run, since
// they may belong to other communicators.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "loom.h"

namespace loom {

class Stream {
 public:
  Stream();
  ~Stream();  // finishes queued work, then joins the thread
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // `work` reports failure by throwing loom::Error.
  // `afterIdle` (optional) runs once the stream no longer counts this work as running, so
  // whoever it wakes (loomCommFinalize) finds the stream idle.
  void enqueue(std::function<void()> work, std::function<void()> afterIdle = nullptr);
  // Waits until everything enqueued so far has run; returns (and clears) the first error.
  loomResult_t synchronize(std::string* message);
  bool idle() const;

 private:
  void loop();

  mutable std::mutex mutex_;
  std::condition_variable workReady_;
  std::condition_variable drained_;
  std::deque<std::pair<std::function<void()>, std::function<void()>>> queue_;
  bool running_ = false;  // an item is executing
  bool stopping_ = false;
  loomResult_t error_ = loomSuccess;
  std::string errorMessage_;
  std::thread thread_;
};

}  // namespace loom

struct loomStream {
  loom::Stream impl;
};
