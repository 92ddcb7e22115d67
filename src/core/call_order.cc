// SPDX-License-Identifier: Apache-2.0
#include "core/call_order.h"

#include <chrono>

namespace loom {

bool CallOrder::waitForTurn(uint64_t ticket, int timeoutMs, const std::atomic<bool>& stop) {
  if (turnHasCome(ticket, stop)) return true;
  if (failed()) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  // Register first, then look (under the lock): pairs with endTurn's store-then-look.
  turnWaiters_.fetch_add(1, std::memory_order_seq_cst);
  std::unique_lock lock(turnMutex_);
  const bool woken = turnChanged_.wait_until(lock, deadline, [&] {
    return served_.load(std::memory_order_seq_cst) == ticket || stop.load() || failed();
  });
  turnWaiters_.fetch_sub(1, std::memory_order_seq_cst);
  if (woken && !failed()) return true;
  if (!woken) {
    // Timed out: the turn this call waits for may never come, nor any after it.
    failed_.store(true, std::memory_order_release);
    turnChanged_.notify_all();
  }
  return false;
}

void CallOrder::endTurn(uint64_t ticket) {
  served_.store(ticket + 1, std::memory_order_seq_cst);
  if (turnWaiters_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard guard(turnMutex_);
    turnChanged_.notify_all();
  }
}

// The stop flag is set before the lock is taken, so a waiter either sees it in its predicate or
// is already asleep and woken here.
void CallOrder::wakeWaiters() {
  std::lock_guard guard(turnMutex_);
  turnChanged_.notify_all();
}

void CallOrder::asyncWorkDone() {
  if (pendingAsync_.fetch_sub(1) == 1) {
    std::lock_guard lock(asyncMutex_);
    asyncDrained_.notify_all();
  }
}

bool CallOrder::waitForAsyncWork(int timeoutMs, int* pending) {
  std::unique_lock lock(asyncMutex_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  const bool drained = asyncDrained_.wait_until(lock, deadline, [&] { return pendingAsync_.load() == 0; });
  if (pending != nullptr) *pending = pendingAsync_.load();
  return drained;
}

}  // namespace loom
