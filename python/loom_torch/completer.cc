#include "completer.h"

namespace loom_torch {

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void Completer::post(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  // Every thread may be inside a callback that waits for this very completion: then only a
  // new thread can run it.
  if (idle_ == 0 && threads_.size() < maxThreads_) {
    threads_.emplace_back([this] { loop(); });
    return;
  }
  lock.unlock();
  ready_.notify_one();
}

void Completer::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) return;  // stopping, and everything ran
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    try {
      task();
    } catch (...) {
    }
    task = nullptr;  // what the task holds goes outside the lock
    lock.lock();
  }
}

}  // namespace loom_torch
