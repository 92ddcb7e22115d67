// A doorbell is one rank's wake-up word in shared memory. Peers ring it (increment + futex wake,
// the wake only when someone sleeps) after posting data or freeing FIFO space; the rank
// sleeps on it with a timeout when spinning and yielding found nothing to do. That lets
// 8 ranks share 2 cores without burning them.
#pragma once

#include <atomic>
#include <cstdint>

namespace loom::transport {

struct alignas(64) DoorbellWord {
  std::atomic<uint32_t> sequence{0};  // bumped on every ring; the futex word
  std::atomic<uint32_t> sleepers{0};  // > 0 while the owner may be in futex_wait
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

class Doorbell {
 public:
  explicit Doorbell(DoorbellWord* word) : word_(word) {}
  DoorbellWord* word() const { return word_; }

  // Called by peers after making progress visible (release ordering on the data first).
  void ring();
  // Owner side: read before re-checking for work, then pass to sleep(). Sleeping returns at
  // once if the bell was rung since `seen`, else after a ring or `timeoutUs`.
  uint32_t snapshot() const { return word_->sequence.load(std::memory_order_seq_cst); }
  void sleep(uint32_t seen, int timeoutUs);

 private:
  DoorbellWord* word_;
};

}  // namespace loom::transport
