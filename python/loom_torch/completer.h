// SPDX-License-Identifier: Apache-2.0
// Completer: the threads that complete a process group's futures, so that user callbacks never
// run on the Loom stream's thread.
//
// A future's callbacks (DDP comm hooks) run when it completes, and some wait for more
// collectives inside a callback: PowerSGD's hook all-reduces and waits on that future within
// its callbacks. Run on the stream's thread, such a callback would wait for work queued behind
// itself, forever. So the stream's thread only finishes the work (waking wait()) and posts the
// future's completion here. A callback that blocks here takes a thread, and the next completion
// gets a new one while none is idle (up to a bound), as a cached thread pool does. So a callback
// waiting on a later future is completed by another thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace loom_torch {

class Completer {
 public:
  explicit Completer(size_t maxThreads = 16) : maxThreads_(maxThreads) {}
  // Runs what is posted, then joins. Destroyed by one of its own tasks (a callback that
  // destroys the process group), it joins the others and leaves the calling thread to end by
  // itself once that task returns: what that task still runs (the rest of its callbacks) runs
  // after this returns. A task blocked on a future that only the destroying task would complete
  // keeps the join waiting: a callback must not wait on its own chain.
  ~Completer();
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // Runs `task` on one of the completer's threads; exceptions it throws are dropped (a
  // future's own callbacks report theirs through the futures they return).
  void post(std::function<void()> task);

 private:
  // What the threads share. Each thread holds it too, so a thread that outlives the Completer
  // (the one that destroyed it, inside a task) still finds it.
  struct Pool {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<std::function<void()>> tasks;
    size_t idle = 0;  // threads waiting for a task
    bool stopping = false;
  };
  static void loop(const std::shared_ptr<Pool>& pool);

  const size_t maxThreads_;
  const std::shared_ptr<Pool> pool_ = std::make_shared<Pool>();
  std::vector<std::thread> threads_;  // under pool_->mutex
};

}  // namespace loom_torch
