#include "algorithms/direct/direct_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "base/error.h"

namespace loom::algo {

namespace {

using Clock = std::chrono::steady_clock;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// Sleeps on `doorbell` unless `flag` reached `target` meanwhile. Registering as a sleeper
// before the last look is what makes the waker's check (wakeIfSleeping) safe.
void sleepUnlessReady(transport::DoorbellWord& doorbell, const std::atomic<uint64_t>& flag,
                      uint64_t target, int timeoutUs) {
  doorbell.sleepers.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t seen = doorbell.sequence.load(std::memory_order_seq_cst);
  if (flag.load(std::memory_order_seq_cst) < target) {
    timespec timeout{timeoutUs / 1000000, (timeoutUs % 1000000) * 1000L};
    futex(&doorbell.sequence, FUTEX_WAIT, seen, &timeout);  // EAGAIN/ETIMEDOUT/EINTR all fine
  }
  doorbell.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace

void wakeSleepers(transport::DoorbellWord& doorbell) {
  doorbell.sequence.fetch_add(1, std::memory_order_seq_cst);
  futex(&doorbell.sequence, FUTEX_WAKE, INT32_MAX, nullptr);
}

void waitForFlag(const std::atomic<uint64_t>& flag, uint64_t target, int peer, pid_t peerPid,
                 const char* what, const WaitPolicy& policy) {
  // The peer is usually just behind: spin on the cache line first.
  for (int i = 0; i < policy.spins; ++i) {
    if (flag.load(std::memory_order_acquire) >= target) return;
    cpuPause();
  }
  const auto start = Clock::now();
  auto lastProgressCheck = start;
  int idle = 0;
  for (;;) {
    if (flag.load(std::memory_order_acquire) >= target) return;
    ++idle;
    if (idle < 64) {
      sched_yield();  // ranks may outnumber cores: let the peer run
      continue;
    }
    // Sleep longer the longer nothing happens, at most 2 ms between checks.
    const int sleepUs = std::min(2000, 20 << std::min(7, (idle - 64) / 4));
    if (policy.ownDoorbell != nullptr) {
      sleepUnlessReady(*policy.ownDoorbell, flag, target, sleepUs);
    } else {
      sched_yield();
    }
    const auto now = Clock::now();
    if (policy.abortFlag != nullptr && policy.abortFlag->load(std::memory_order_relaxed)) {
      throw Error(loomInvalidUsage, policy.describe() + " aborted (loomCommAbort or loomCommRevoke) while waiting for rank " +
                                        std::to_string(peer));
    }
    if (now - lastProgressCheck > std::chrono::milliseconds(100)) {
      lastProgressCheck = now;
      if (flag.load(std::memory_order_acquire) >= target) return;
      // Every dead rank, not only the awaited one: that one may have exited after failing
      // because of an earlier death, which the message must still name.
      const std::vector<DeadPeer> dead =
          policy.peerPids != nullptr ? findDeadPeers(*policy.peerPids)
          : processDead(peerPid)     ? std::vector<DeadPeer>{DeadPeer{peer, peerPid}}
                                     : std::vector<DeadPeer>{};
      if (!dead.empty()) {
        throw Error(loomRemoteError, policy.describe() + ": " + describeDeadPeers(dead) +
                                         "; waited for rank " + std::to_string(peer) + "'s " + what);
      }
    }
    if (now - start > std::chrono::milliseconds(policy.timeoutMs)) {
      throw Error(loomSystemError, policy.describe() + " timed out after " + std::to_string(policy.timeoutMs) +
                                       " ms waiting for rank " + std::to_string(peer) + "'s " + what);
    }
  }
}

}  // namespace loom::algo
