// SPDX-License-Identifier: Apache-2.0
#include "core/stream.h"

#include "base/error.h"
#include "core/comm.h"

namespace loom {

Stream::Stream() : thread_([this] { loop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  workReady_.notify_all();
  thread_.join();
}

void Stream::enqueue(std::vector<CallBatch> item) {
  for (const CallBatch& batch : item) batch.comm->asyncWorkAdded();
  push(Item{std::move(item), {}});
}

void Stream::enqueueHostFunction(std::function<void()> function) { push(Item{{}, std::move(function)}); }

void Stream::push(Item item) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(item));
  }
  workReady_.notify_one();
}

loomResult_t Stream::synchronize(std::string* message) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    throw Error(loomInvalidUsage, "a host function synchronized its own stream: it would wait for itself");
  }
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [&] { return queue_.empty() && !running_; });
  loomResult_t result = error_;
  if (message) *message = errorMessage_;
  error_ = loomSuccess;
  errorMessage_.clear();
  return result;
}

bool Stream::idle() const {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !running_;
}

void Stream::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    workReady_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything ran
    const Item item = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    loomResult_t code = loomSuccess;
    std::string message;
    try {
      if (item.hostFunction) {
        item.hostFunction();
      } else {
        runBatches(item.batches);  // failures are also recorded by each communicator (sticky)
      }
    } catch (const Error& error) {
      code = error.code();
      message = error.what();
    } catch (const std::exception& error) {
      code = loomInternalError;
      message = error.what();
    } catch (...) {
      code = loomInternalError;
      message = "unknown exception in stream work";
    }
    lock.lock();
    if (code != loomSuccess && error_ == loomSuccess) {
      error_ = code;
      errorMessage_ = message;
    }
    running_ = false;
    if (queue_.empty()) drained_.notify_all();
    lock.unlock();
    for (const CallBatch& batch : item.batches) batch.comm->asyncWorkDone();
    lock.lock();
  }
}

}  // namespace loom
