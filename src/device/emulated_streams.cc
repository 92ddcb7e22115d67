// SPDX-License-Identifier: Apache-2.0
#include "device/emulated_streams.h"

#include <pthread.h>

#include <chrono>
#include <exception>
#include <utility>

#include "base/error.h"

namespace loom::device::emulated {

Stream::Stream(int device, uint64_t id, StickyErrors& sticky)
    : device_(device), id_(id), sticky_(sticky), worker_([this] { work(); }) {}

Stream::~Stream() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

std::string Stream::name() const {
  return "device stream " + std::to_string(id_) + " of emulated device " + std::to_string(device_);
}

void Stream::enqueue(Task task) {
  sticky_.check(device_);
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
    ++enqueued_;
  }
  wake_.notify_one();
}

void Stream::work() {
  // Names the thread in a debugger and in top; failure only loses the name.
  (void)pthread_setname_np(pthread_self(), "loom-emu-stream");
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = task.what;
    }
    // After a fault on the device nothing more runs on it: the state the fault left behind is
    // not something later work may build on (a CUDA context refuses all work after one).
    std::string failure = sticky_.message(device_);
    if (failure.empty()) {
      try {
        task.run();
      } catch (const std::exception& error) {
        failure = std::string(task.what) + " on " + name() + " failed: " + error.what();
        sticky_.record(device_, failure);
      } catch (...) {
        failure = std::string(task.what) + " on " + name() + " failed (not a std::exception)";
        sticky_.record(device_, failure);
      }
    }
    if (!failure.empty() && task.abandon) task.abandon(failure);
    // The task's captures (buffers it kept mapped, kernel arguments) go before it counts as done.
    task = Task{};
    {
      const std::lock_guard lock(mutex_);
      ++completed_;
      running_ = nullptr;
    }
    progress_.notify_all();
  }
}

void Stream::synchronize(int timeoutMs) {
  if (timeoutMs < 0) {
    throwArgument("synchronize(" + name() + ", " + std::to_string(timeoutMs) +
                  " ms): the timeout must be >= 0 (every device wait has a deadline)");
  }
  sticky_.check(device_);
  const auto timeout = std::chrono::milliseconds(timeoutMs);
  {
    std::unique_lock lock(mutex_);
    const uint64_t target = enqueued_;
    uint64_t seen = completed_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (completed_ < target) {
      if (progress_.wait_until(lock, deadline) == std::cv_status::timeout && completed_ == seen) {
        throw Error(loomSystemError,
                    name() + " made no progress for " + std::to_string(timeoutMs) + " ms (" +
                        std::to_string(target - completed_) +
                        " tasks enqueued before this synchronize still to run" +
                        (running_ != nullptr ? std::string(", running: ") + running_ : "") + ")");
      }
      if (completed_ != seen) {  // progress: the deadline starts again
        seen = completed_;
        deadline = std::chrono::steady_clock::now() + timeout;
      }
    }
  }
  sticky_.check(device_);
}

}  // namespace loom::device::emulated
