// SPDX-License-Identifier: Apache-2.0
// A doorbell is one rank's wake-up word in shared memory. Peers ring it after posting data,
// freeing FIFO space or publishing a flag of the direct engine; the rank sleeps on it with a
// timeout when spinning and yielding found nothing to do. That lets 8 ranks share 2 cores
// without burning them.
//
// Ringing is cheap when nobody sleeps, which is nearly always: a load of the owner's line, no
// write to it (a write would move the line to the ringer's core and back on every message).
// The handshake is Dekker's: the sleeper registers (sleepers + 1) and then looks for work once
// more; the ringer publishes and then looks at `sleepers`. Either the sleeper sees the work or
// the ringer sees the sleeper, bumps the sequence (the futex word) and wakes it.
//
// Dekker needs each side's store ordered before its load. The ringer rings after every small
// message, the sleeper sleeps rarely (after spinning and yielding), so the order is bought
// asymmetrically where the kernel allows: the sleeper calls membarrier(GLOBAL_EXPEDITED), which
// runs a full barrier on every CPU that runs a registered process (or finds it between two
// context switches, themselves barriers), and ringers in registered processes skip their
// fence. Without membarrier both sides fence, as before.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "transport/transport.h"

namespace loom::transport {

struct alignas(64) DoorbellWord {
  std::atomic<uint32_t> sequence{0};  // bumped by a ring that found a sleeper; the futex word
  std::atomic<uint32_t> sleepers{0};  // > 0 while the owner may be in futex_wait
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

namespace doorbell_detail {
// Set once this process is registered for membarrier(GLOBAL_EXPEDITED): its rings skip the fence.
extern std::atomic<bool> ringsWithoutFence;
// Whether sleepers must issue membarrier(GLOBAL_EXPEDITED): the kernel offers it, so a ringer
// anywhere on this host may skip its fence.
extern std::atomic<bool> sleepersBarrier;
void sleeperBarrier();
}  // namespace doorbell_detail

// Registers this process for the asymmetric handshake (idempotent, thread-safe); rings skip the
// fence from then on where the kernel supports it. Called when an shm transport is set up.
void enableAsymmetricDoorbells();

class Doorbell final : public Bell {
 public:
  explicit Doorbell(DoorbellWord* word) : word_(word) {}
  DoorbellWord* word() const { return word_; }

  // Peers, after making progress visible (release ordering on the data first).
  void ring() {
    if (doorbell_detail::ringsWithoutFence.load(std::memory_order_relaxed)) {
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the sleeper's membarrier orders us
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (word_->sleepers.load(std::memory_order_relaxed) != 0) wake();
  }

  // Owner side: sleeps until a ring or `timeoutUs`, unless `ready()` is true once registered
  // as a sleeper (work a peer made visible before a ring that found nobody asleep).
  template <class Ready>
  void sleepUnlessReady(Ready&& ready, int timeoutUs) {
    word_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    // Every ringer's publication before its look at `sleepers` is visible from here on.
    if (doorbell_detail::sleepersBarrier.load(std::memory_order_relaxed)) doorbell_detail::sleeperBarrier();
    const uint32_t seen = word_->sequence.load(std::memory_order_seq_cst);
    if (!ready()) wait(seen, timeoutUs);
    word_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
  void sleepUnless(const std::function<bool()>& ready, int timeoutUs) override {
    sleepUnlessReady(ready, timeoutUs);
  }

 private:
  void wake();                                 // bump the sequence, futex_wake
  void wait(uint32_t seen, int timeoutUs);     // futex_wait while the sequence is `seen`

  DoorbellWord* word_;
};

}  // namespace loom::transport
