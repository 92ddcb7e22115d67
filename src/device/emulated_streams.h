// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's streams: each has its own worker thread that runs the stream's work (copies,
// kernels, event records and waits) one task at a time, in the order it was enqueued, while
// the host goes on, as a GPU runs a stream. Two streams run concurrently, on two threads, so
// work that a missing event wait leaves unordered really does race.
//
// A task that throws is a fault: the stream and its device fail (StickyErrors), every later
// task of the device is skipped rather than run on state the fault left, and synchronize()
// and every later call on the device report the first fault.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "device/emulated_faults.h"

namespace loom::device::emulated {

struct Task {
  const char* what = "";         // "copy", "reduce kernel": names it in messages
  std::function<void()> run;     // throws loom::Error on a fault
  // Told why the task will not run (an earlier fault); may be empty. An event record uses it
  // to complete its marker as failed, so no wait on it hangs.
  std::function<void(const std::string& failure)> abandon;
};

class Stream {
 public:
  Stream(int device, uint64_t id, StickyErrors& sticky);
  // Runs what is still queued, then joins the worker (cuStreamDestroy lets queued work finish).
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  // "device stream 3 of emulated device 0".
  std::string name() const;

  // Throws the device's sticky error instead of enqueueing after a fault.
  void enqueue(Task task);
  // Waits for everything enqueued so far. Throws loomSystemError when no task completes for
  // timeoutMs (a task that takes longer counts as no progress), and the device's sticky error
  // when this stream's work or any of the device's failed.
  void synchronize(int timeoutMs);

 private:
  void work();

  const int device_;
  const uint64_t id_;
  StickyErrors& sticky_;
  std::mutex mutex_;
  std::condition_variable wake_;      // the worker: work arrived, or stop
  std::condition_variable progress_;  // synchronize(): a task completed
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  const char* running_ = nullptr;  // the task being run, for the timeout's message
  bool stopping_ = false;
  std::thread worker_;  // last: started once everything it reads exists
};

}  // namespace loom::device::emulated
