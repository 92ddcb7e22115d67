// SPDX-License-Identifier: Apache-2.0
// Waiting for another rank without taking the core it may need. A peer on another core is
// usually a few hundred nanoseconds behind, so a wait first spins; ranks may outnumber cores
// (8 ranks on 2 cores is normal here), so it then yields the core; and at last it sleeps, on a
// futex or in poll(), for intervals that double while nothing happens, up to a cap that keeps
// deadline and abort checks regular. Every waiting loop of Loom (the executor, the direct
// engine's flags) walks these three phases; only the lengths differ.
#pragma once

#include <algorithm>

namespace loom {

// One iteration of a spin-wait: tells the CPU (and a hyperthread sibling) that we are waiting.
inline void cpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

struct BackoffPolicy {
  int spinRounds = 64;       // rounds that spin (0: never spin, e.g. when ranks outnumber cores)
  int yieldRounds = 128;     // then rounds that yield the core
  int firstSleepUs = 50;     // then sleeps, starting here,
  int roundsPerDoubling = 8;  // doubling every this many rounds,
  int maxDoublings = 8;       // at most this many times,
  int maxSleepUs = 10000;     // and never longer than this
};

// Ranks that outnumber their cores yield at least this long before a wait sleeps: a sleeping
// rank idles its core and the kernel refills it from the other cores, unevenly once the wait is
// over (ExecutionContext::yieldBeforeSleepMs; the direct engine's WaitPolicy likewise). Short
// stalls of that kind are a few ms (another process or a kernel thread taking a core).
inline constexpr int kOversubscribedYieldMs = 10;

class Backoff {
 public:
  enum class Phase { Spin, Yield, Sleep };

  explicit Backoff(const BackoffPolicy& policy) : policy_(policy) {}

  // Called after a round that found nothing to do: what this round of waiting should be.
  Phase next() {
    ++rounds_;
    if (rounds_ <= policy_.spinRounds) return Phase::Spin;
    if (rounds_ <= policy_.spinRounds + policy_.yieldRounds) return Phase::Yield;
    return Phase::Sleep;
  }
  // The round just returned was the first to yield (the wait has become a real one).
  bool justStoppedSpinning() const { return rounds_ == policy_.spinRounds + 1; }
  // Which yielding round the round just returned is: 1 for the first, 0 while still spinning.
  int yieldRound() const { return std::max(0, rounds_ - policy_.spinRounds); }
  // Rounds waited since the last reset, this one included.
  int rounds() const { return rounds_; }
  // How long a Sleep round sleeps.
  int sleepUs() const {
    const int slept = rounds_ - policy_.spinRounds - policy_.yieldRounds - 1;
    const int doublings = std::min(policy_.maxDoublings, std::max(0, slept) / policy_.roundsPerDoubling);
    return std::min(policy_.maxSleepUs, policy_.firstSleepUs << doublings);
  }
  // `rounds` idle rounds were already spent spinning elsewhere on the same wait (a waiter that
  // hands over to another counts them here): they count toward the spin phase.
  void skip(int rounds) { rounds_ += std::max(0, std::min(rounds, policy_.spinRounds)); }
  // The caller's clock says the wait has not yet yielded for as long as it must before it
  // sleeps (ranks that outnumber cores: see ExecutionContext::yieldBeforeSleepMs): the next
  // `rounds` rounds yield again. Their yieldRound() numbers repeat the last `rounds` of the
  // yield phase, so a caller pacing its clock reads by them keeps its pace.
  void yieldMore(int rounds) {
    rounds_ = std::max(policy_.spinRounds, std::min(rounds_, policy_.spinRounds + policy_.yieldRounds - rounds));
  }
  // Something moved: the next wait starts spinning again.
  void reset() { rounds_ = 0; }

 private:
  BackoffPolicy policy_;
  int rounds_ = 0;
};

}  // namespace loom
