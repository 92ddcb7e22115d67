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
#include <mutex>
#include <thread>
#include <vector>

namespace loom_torch {

class Completer {
 public:
  explicit Completer(size_t maxThreads = 16) : maxThreads_(maxThreads) {}
  ~Completer();  // runs what is posted, then joins
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // Runs `task` on one of the completer's threads; exceptions it throws are dropped (a
  // future's own callbacks report theirs through the futures they return).
  void post(std::function<void()> task);

 private:
  void loop();

  const size_t maxThreads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;  // threads waiting for a task
  bool stopping_ = false;
};

}  // namespace loom_torch
