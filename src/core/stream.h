// SPDX-License-Identifier: Apache-2.0
// An ordered host stream: items run one after another on the stream's own thread, so a caller
// can enqueue collectives and go on computing (as a CUDA stream does for NCCL). An item is the
// calls one enqueue put there (core/call_batch.h): one call, or a group's calls on this stream,
// one batch per communicator; or a host function (loomLaunchHostFunc), which runs when every
// item before it has run. The first failure is kept and reported by synchronize(); later
// items still run, since they may belong to other communicators.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/call_batch.h"
#include "loom.h"

namespace loom {

class Stream {
 public:
  Stream();
  ~Stream();  // finishes queued work, then joins the thread
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The item's calls count as pending work of their communicators until the stream is idle
  // again, so loomCommFinalize (which waits for that) finds the stream idle.
  void enqueue(std::vector<CallBatch> item);
  // Runs `function` on the stream's thread once everything enqueued before it has run. An
  // exception it throws is the stream's error, as a failed call's is.
  void enqueueHostFunction(std::function<void()> function);
  // Waits until everything enqueued so far has run; returns (and clears) the first error.
  // Called from the stream's own thread (a host function) it throws loomInvalidUsage: it
  // would wait for itself.
  loomResult_t synchronize(std::string* message);
  bool idle() const;

 private:
  // One queue entry: calls, or a host function when `batches` is empty.
  struct Item {
    std::vector<CallBatch> batches;
    std::function<void()> hostFunction;
  };
  void push(Item item);
  void loop();

  mutable std::mutex mutex_;
  std::condition_variable workReady_;
  std::condition_variable drained_;
  std::deque<Item> queue_;
  bool running_ = false;  // an item is executing
  bool stopping_ = false;
  loomResult_t error_ = loomSuccess;
  std::string errorMessage_;
  std::thread thread_;
};

}  // namespace loom
