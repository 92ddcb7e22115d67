// SPDX-License-Identifier: Apache-2.0
// The order of a communicator's calls. Calls execute in the order they were issued, whichever
// thread runs them (the caller, a stream thread, a group thread): issuing takes a ticket, and
// a call runs when its ticket's turn has come. The turn holder numbers the calls it runs (the
// sequence number every rank gives the same call, which the cross-rank mismatch check
// compares), and work queued on streams is counted so loomCommFinalize can wait for it.
//
// The turn: ticket t runs once `served_` == t. The holder of a ticket whose turn has come
// checks that with one atomic load (the common, uncontended case); only threads that must wait
// take the mutex, and the finishing call notifies only when someone waits.
//
// Issuing: taking a ticket and queueing the call (on a stream, or in the running thread) are
// one step inside beginIssue/endIssue, so a stream's FIFO order is always its turn order (two
// threads taking tickets 5 and 6 and queueing them as 6, 5 would leave the stream thread
// waiting on 6 for a turn that sits behind it). A second thread arriving while the step is
// held is concurrent issue: it is refused, not queued, since the pairing across ranks would
// depend on which thread won on each rank.
//
// A failed wait: once a call's wait for its turn times out, the turn it waited for may never
// come, so every later wait fails at once (failed()) instead of each waiting a full timeout.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace loom {

class CallOrder {
 public:
  // The issuing step. One atomic word holds the next ticket and a busy bit, so entering the
  // step and taking a ticket cost one read-modify-write, as taking a ticket alone did before.
  // beginIssue: false if another thread is inside its issuing step on this communicator now.
  bool beginIssue() {
    const uint64_t word = issue_.fetch_or(1, std::memory_order_acquire);
    if (word & 1) return false;
    stepTicket_ = word >> 1;
    return true;
  }
  // Inside the step: the next ticket (a group takes several).
  uint64_t ticketInStep() { return stepTicket_++; }
  void endIssue() { issue_.store(stepTicket_ << 1, std::memory_order_release); }
  // The three at once, waiting out another thread's step (for callers that are not issuing).
  // Every ticket must be run (or its turn ended) exactly once.
  uint64_t takeTicket() {
    while (!beginIssue()) {
    }
    const uint64_t ticket = ticketInStep();
    endIssue();
    return ticket;
  }
  // Returns true once `ticket`'s turn has come or `stop` is set; false if neither happened
  // within timeoutMs, and at once (for every ticket) after any wait has timed out.
  bool waitForTurn(uint64_t ticket, int timeoutMs, const std::atomic<bool>& stop);
  // Whether `ticket`'s turn has come and `stop` is not set (waitForTurn's first look; inline, for
  // the uncontended call, which takes its turn at once).
  bool turnHasCome(uint64_t ticket, const std::atomic<bool>& stop) const {
    return served_.load(std::memory_order_acquire) == ticket && !stop.load();
  }
  // A wait for a turn has timed out: the order is broken for good.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void endTurn(uint64_t ticket);
  // Wakes waiting calls so they see a stop flag set just before: a call waiting behind one that
  // cannot end (queued on a stream that is stuck elsewhere) would otherwise sleep to its timeout.
  void wakeWaiters();
  // The turn holder's next call number: 1, 2, ... Collectives only: every rank takes part in
  // each of them, so every rank numbers them alike.
  uint64_t nextSequence() { return ++sequence_; }
  // The turn holder's next point-to-point message number to (send) or from `peer`: 1, 2, ...
  // Messages of one pair and direction are numbered alike on both of its ranks.
  uint64_t nextMessage(bool send, int peer) {
    std::vector<uint64_t>& numbers = send ? sentTo_ : receivedFrom_;
    if (numbers.size() <= static_cast<size_t>(peer)) numbers.resize(static_cast<size_t>(peer) + 1, 0);
    return ++numbers[static_cast<size_t>(peer)];
  }

  // Work queued on streams but not finished yet; loomCommFinalize waits for it.
  void asyncWorkAdded() { pendingAsync_.fetch_add(1); }
  void asyncWorkDone();
  // False if some work was still pending after timeoutMs; `pending` says how much.
  bool waitForAsyncWork(int timeoutMs, int* pending);

 private:
  std::mutex turnMutex_;
  std::condition_variable turnChanged_;
  std::atomic<uint64_t> issue_{0};  // (next ticket << 1) | a thread is inside the issuing step
  uint64_t stepTicket_ = 0;          // touched only inside the step
  std::atomic<uint64_t> served_{0};  // tickets whose call has finished (or failed)
  std::atomic<int> turnWaiters_{0};
  std::atomic<bool> failed_{false};
  uint64_t sequence_ = 0;  // touched only by the turn holder
  std::vector<uint64_t> sentTo_, receivedFrom_;  // by peer; touched only by the turn holder

  std::atomic<int> pendingAsync_{0};
  std::mutex asyncMutex_;
  std::condition_variable asyncDrained_;
};

}  // namespace loom
