// SPDX-License-Identifier: Apache-2.0
#include "algorithms/direct/direct_wait.h"

#include <sched.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/backoff.h"
#include "base/error.h"
#include "base/peer_left.h"

namespace loom::algo {

namespace {

using Clock = std::chrono::steady_clock;

// Spin `spins` rounds (none when ranks outnumber cores), yield 63, then sleep from 20 us,
// doubling every 4 rounds, at most 2 ms between checks.
BackoffPolicy flagBackoff(int spins) { return BackoffPolicy{spins, 63, 20, 4, 7, 2000}; }

// A departed rank wrote everything it ever will before its mark (release), so the flag is
// read again after the mark (acquire): only a flag still short of its target is an error.
void throwIfAnyDeparted(const std::atomic<uint64_t>& flag, uint64_t target, int peer, const char* what,
                        const WaitPolicy& policy) {
  if (policy.arena == nullptr) return;
  for (int rank = 0; rank < policy.arena->nranks(); ++rank) {
    if (rank == policy.selfRank || policy.arena->departed(rank).value.load(std::memory_order_acquire) == 0) continue;
    if (flag.load(std::memory_order_acquire) >= target) return;
    const pid_t pid =
        policy.peerPids != nullptr && rank < static_cast<int>(policy.peerPids->size()) ? (*policy.peerPids)[rank] : 0;
    throw Error(loomRemoteError, policy.describe() + ": " + peerLeft(rank, pid) + "; waited for rank " +
                                     std::to_string(peer) + "'s " + what);
  }
}

}  // namespace

void waitForFlag(const std::atomic<uint64_t>& flag, uint64_t target, int peer, pid_t peerPid,
                 const char* what, const WaitPolicy& policy) {
  // The peer is usually just behind: spin on the cache line first.
  Backoff backoff(flagBackoff(policy.spins));
  // Clock reads only once the wait is a real one: spinning costs nanoseconds, a clock read more.
  Clock::time_point start, lastProgressCheck;
  for (;;) {
    if (flag.load(std::memory_order_acquire) >= target) return;
    const Backoff::Phase phase = backoff.next();
    if (phase == Backoff::Phase::Spin) {
      cpuPause();
      continue;
    }
    if (backoff.justStoppedSpinning()) start = lastProgressCheck = Clock::now();
    if (phase == Backoff::Phase::Yield) {
      sched_yield();  // ranks may outnumber cores: let the peer run
      continue;
    }
    if (policy.yieldBeforeSleepMs > 0 && Clock::now() - start < std::chrono::milliseconds(policy.yieldBeforeSleepMs)) {
      backoff.yieldMore(1);  // not idle long enough to leave the core idle: yield on
      sched_yield();
    } else if (policy.ownDoorbell != nullptr) {
      policy.ownDoorbell->sleepUnlessReady([&] { return flag.load(std::memory_order_seq_cst) >= target; },
                                      backoff.sleepUs());
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
      // because of an earlier death, which the message must still name. A rank that left the
      // communicator before it exited did not die: it is named as having left, below.
      std::vector<DeadPeer> dead =
          policy.peerPids != nullptr ? findDeadPeers(*policy.peerPids)
          : processDead(peerPid)     ? std::vector<DeadPeer>{DeadPeer{peer, peerPid}}
                                     : std::vector<DeadPeer>{};
      if (policy.arena != nullptr) {
        std::erase_if(dead, [&](const DeadPeer& gone) {
          return gone.rank < policy.arena->nranks() &&
                 policy.arena->departed(gone.rank).value.load(std::memory_order_acquire) != 0;
        });
      }
      if (!dead.empty()) {
        throw Error(loomRemoteError, policy.describe() + ": " + describeDeadPeers(dead) +
                                         "; waited for rank " + std::to_string(peer) + "'s " + what);
      }
      throwIfAnyDeparted(flag, target, peer, what, policy);
    }
    if (now - start > std::chrono::milliseconds(policy.timeoutMs)) {
      throw Error(loomSystemError, policy.describe() + " timed out after " + std::to_string(policy.timeoutMs) +
                                       " ms waiting for rank " + std::to_string(peer) + "'s " + what);
    }
  }
}

}  // namespace loom::algo
