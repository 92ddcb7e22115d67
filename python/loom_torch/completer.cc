// SPDX-License-Identifier: Apache-2.0
#include "completer.h"

namespace loom_torch {

Completer::~Completer() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    pool_->stopping = true;
    threads.swap(threads_);
  }
  pool_->ready.notify_all();
  for (std::thread& thread : threads) {
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();  // joining itself would throw; it holds the pool and ends after this task
    } else {
      thread.join();
    }
  }
}

void Completer::post(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(pool_->mutex);
  pool_->tasks.push_back(std::move(task));
  // Every thread may be inside a callback that waits for this very completion: then only a
  // new thread can run it.
  if (pool_->idle == 0 && threads_.size() < maxThreads_) {
    threads_.emplace_back([pool = pool_] { loop(pool); });
    return;
  }
  lock.unlock();
  pool_->ready.notify_one();
}

void Completer::loop(const std::shared_ptr<Pool>& pool) {
  std::unique_lock<std::mutex> lock(pool->mutex);
  for (;;) {
    ++pool->idle;
    pool->ready.wait(lock, [&] { return pool->stopping || !pool->tasks.empty(); });
    --pool->idle;
    if (pool->tasks.empty()) return;  // stopping, and everything ran
    std::function<void()> task = std::move(pool->tasks.front());
    pool->tasks.pop_front();
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
