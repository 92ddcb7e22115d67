// SPDX-License-Identifier: Apache-2.0
// Waiting for a peer in the direct collectives: for a flag in the shared arena to reach a
// value. A peer on another core is usually a few hundred nanoseconds behind, so the wait first
// spins; when ranks outnumber cores the peer may not even be running, so it then yields the
// core, and finally sleeps on this rank's doorbell (futex) until a peer rings it.
//
// Every wait is bounded: it fails after `timeoutMs` without the flag moving, promptly after
// loomCommAbort, and within about 100 ms when the process it waits for (or, with
// WaitPolicy::peerPids, any rank on this host) has died, or when (WaitPolicy::arena) any rank
// has left the communicator (destroyed or aborted it) while its process lives on.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/peer_liveness.h"
#include "base/function_ref.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/shm_arena.h"

namespace loom::algo {

struct WaitPolicy {
  transport::Doorbell* ownDoorbell = nullptr;  // slept on; peers ring it
  int timeoutMs = 600000;
  const std::atomic<bool>* abortFlag = nullptr;
  // Busy-wait iterations before yielding. Zero when ranks outnumber cores: the peer we wait
  // for may be waiting for this very core, so spinning only delays it.
  int spins = 2048;
  // Yield at least this long before sleeping (ExecutionContext::yieldBeforeSleepMs says why).
  int yieldBeforeSleepMs = 0;
  // Names the call for errors ("allreduce #12 (4096 x float32, comm 1a2b)"); called only
  // when an error is raised, so the common path builds no strings. Refers to the engine's
  // caller's callable, which outlives the wait.
  FunctionRef<std::string()> describe;
  // By rank, the pids of every peer on this host (0 = unchecked, see checkablePeerPids); when
  // set, a stalled wait checks all of them, not only the peer it waits on, so it fails when any
  // rank dies even if the peer it waits on is alive but stuck behind the dead one.
  const std::vector<pid_t>* peerPids = nullptr;
  // When set, a stalled wait also fails once any rank other than `selfRank` has marked itself
  // departed in the arena: a live process that left would otherwise look like a slow one.
  const transport::ShmArena* arena = nullptr;
  int selfRank = -1;
};

// Returns when `flag` >= `target`. `peer`/`peerPid` name the rank that writes the flag (for the
// dead-peer check and the error message), `what` the stage ("post", "reduced chunk", "done").
void waitForFlag(const std::atomic<uint64_t>& flag, uint64_t target, int peer, pid_t peerPid,
                 const char* what, const WaitPolicy& policy);

}  // namespace loom::algo
