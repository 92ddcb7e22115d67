// A doorbell is one rank's wake-up word in shared memory. Peers ring it (increment + futex wake,
// the wake only when someone sleeps) after posting data, freeing FIFO space or publishing a
// flag of the direct engine; the rank sleeps on it with a timeout when spinning and yielding
// found nothing to do. That lets 8 ranks share 2 cores without burning them.
//
// The sleeper registers (sleepers + 1) before its last look, and a ringer looks at `sleepers`
// after publishing: either the sleeper sees the news or the ringer sees the sleeper.
#pragma once

#include <atomic>
#include <cstdint>

#include "transport/transport.h"

namespace loom::transport {

struct alignas(64) DoorbellWord {
  std::atomic<uint32_t> sequence{0};  // bumped on every ring; the futex word
  std::atomic<uint32_t> sleepers{0};  // > 0 while the owner may be in futex_wait
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

class Doorbell final : public Bell {
 public:
  explicit Doorbell(DoorbellWord* word) : word_(word) {}
  DoorbellWord* word() const { return word_; }

  // Peers, after making progress visible (release ordering on the data first).
  void ring();
  // Peers, after publishing a flag the owner may be waiting for: the common case (nobody
  // asleep) costs a fence and a load, and no write to the owner's line.
  void ringIfSleeping() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (word_->sleepers.load(std::memory_order_relaxed) != 0) ring();
  }

  // Owner side: read before re-checking for work, then pass to sleep(). Sleeping returns at
  // once if the bell was rung since `seen`, else after a ring or `timeoutUs`.
  uint32_t snapshot() const override { return word_->sequence.load(std::memory_order_seq_cst); }
  void sleep(uint32_t seen, int timeoutUs) override;
  // Owner side: sleeps unless `ready()` is true once registered as a sleeper (a flag that a
  // peer publishes before ringIfSleeping()).
  template <class Ready>
  void sleepUnless(Ready&& ready, int timeoutUs) {
    word_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = word_->sequence.load(std::memory_order_seq_cst);
    if (!ready()) wait(seen, timeoutUs);
    word_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }

 private:
  void wait(uint32_t seen, int timeoutUs);  // futex_wait while the sequence is `seen`

  DoorbellWord* word_;
};

}  // namespace loom::transport
