// SPDX-License-Identifier: Apache-2.0
// The shm doorbell's wake-up handshake between two processes (src/transport/shm/doorbell.h).
// Each round of a ping-pong publishes a word, rings the peer and goes straight to sleep until
// the peer's word arrives, so every round runs the sleeper/ringer race the handshake must
// win: a lost wake-up shows as a sleep that lasts its whole (long) timeout. The test has teeth:
// with the sleeper's membarrier switched off while rings still skip their fence, it lost
// wake-ups in 2 runs of 2 here (2.3 s and 4.3 s instead of 0.75 s).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>

#include "base/backoff.h"
#include "transport/shm/doorbell.h"

namespace {

using loom::transport::Doorbell;
using loom::transport::DoorbellWord;
using Clock = std::chrono::steady_clock;

constexpr int kRounds = 20000;
constexpr int kSleepTimeoutUs = 2000000;  // a lost wake-up costs 2 s: unmistakable
constexpr auto kLostWakeup = std::chrono::milliseconds(500);

struct Shared {
  DoorbellWord bells[2];
  alignas(64) std::atomic<uint32_t> words[2];
};

// A busy wait of 0 to ~2 us, different every round: the sleeper then registers at every
// moment relative to the ringer's store and look, including inside the few hundred
// nanoseconds where a ring without ordering would miss it.
void jitter(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  for (uint64_t spins = (state >> 33) % 24; spins > 0; --spins) loom::cpuPause();
}

// Plays side `me`: publishes rounds 1..kRounds, each after seeing the peer's previous one.
// Returns the number of sleeps that looked like lost wake-ups.
int playSide(Shared& shared, int me) {
  const int peer = 1 - me;
  Doorbell own(&shared.bells[me]);
  Doorbell peerBell(&shared.bells[peer]);
  uint64_t random = 12345 + static_cast<uint64_t>(me);
  int lost = 0;
  // Sleeps until the peer has published `round`; a sleep as long as its timeout was a lost ring.
  const auto awaitPeer = [&](uint32_t round) {
    const auto arrived = [&] { return shared.words[peer].load(std::memory_order_acquire) >= round; };
    jitter(random);
    while (!arrived()) {
      const auto start = Clock::now();
      own.sleepUnlessReady(arrived, kSleepTimeoutUs);
      if (Clock::now() - start > kLostWakeup) ++lost;
    }
  };
  for (uint32_t round = 1; round <= kRounds; ++round) {
    if (me == 1) awaitPeer(round);  // side 0 leads each round, side 1 answers it
    shared.words[me].store(round, std::memory_order_release);
    peerBell.ring();
    if (me == 0) awaitPeer(round);
  }
  return lost;
}

// Both processes set up as a rank's shm transport does; `fencedRings` then makes the rings
// fence as they do where the kernel has no membarrier.
void pingPongBetweenProcesses(bool fencedRings) {
  const auto setUp = [fencedRings] {
    loom::transport::enableAsymmetricDoorbells();
    static const bool registered = loom::transport::doorbell_detail::ringsWithoutFence.load();
    loom::transport::doorbell_detail::ringsWithoutFence.store(registered && !fencedRings);
  };
  void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* shared = new (memory) Shared{};
  // Each process registers for itself, as each rank's shm transport does.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setUp();
    _exit(playSide(*shared, 1) == 0 ? 0 : 1);
  }
  setUp();
  const auto start = Clock::now();
  const int lost = playSide(*shared, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%d sleeping round trips in %.2f s (rings %s a fence)\n", kRounds, seconds,
              loom::transport::doorbell_detail::ringsWithoutFence.load() ? "without" : "with");
  EXPECT_EQ(lost, 0) << "the leading side slept through a ring";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the answering side slept through a ring";
  munmap(memory, sizeof(Shared));
}

TEST(Doorbell, NoWakeupIsLostBetweenTwoProcesses) { pingPongBetweenProcesses(false); }
TEST(Doorbell, NoWakeupIsLostWithFencedRings) { pingPongBetweenProcesses(true); }

}  // namespace
