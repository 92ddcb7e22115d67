// SPDX-License-Identifier: Apache-2.0
// Is a peer's process still there? Ranks on the same host can answer that for each other from
// the pid alone (kill(pid, 0) and /proc), which turns a peer killed mid-call into a prompt,
// precise error instead of a wait for the timeout. Across hosts the transports report a dead
// peer themselves (a socket reads EOF or ECONNRESET).
//
// Every waiting loop checks the whole list of same-host peers, not only the peer it waits on:
// in a ring, a rank two hops from the dead one waits on a live neighbour that has stopped
// forwarding because it failed, and would otherwise learn nothing until the timeout.
// The checks are made only after a wait has gone idle for a while (about every 100 ms), never
// per message, so they cost nothing on the fast path.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace loom::algo {

// True when `pid` no longer runs (gone, or a zombie waiting to be reaped).
bool processDead(pid_t pid);

// How often a wait that has stopped moving looks for dead peers.
inline constexpr int kLivenessCheckIntervalMs = 100;

// Pids by rank, for the liveness checks: a peer's pid where it runs on this host and its pid is
// visible here, 0 for this rank and where it is not (another host, or another pid namespace
// that happens to share the host identity: its pid would mean nothing, or another process,
// here). `sameHost[r]` says whether rank r shares this host.
std::vector<pid_t> checkablePeerPids(const std::vector<pid_t>& pids,
                                     const std::vector<bool>& sameHost, int selfRank);

struct DeadPeer {
  int rank = -1;
  pid_t pid = 0;
};

// Every rank among `pids` (indexed by rank, 0 = unchecked) whose process has died, by rank.
// All of them, not the first: ranks that failed because of a death often exit right after, and
// a survivor cannot tell the first death from those that followed it.
std::vector<DeadPeer> findDeadPeers(const std::vector<pid_t>& pids);

// "rank 2 (pid 123) died", "rank 1 (pid 5), rank 2 (pid 6) died".
std::string describeDeadPeers(const std::vector<DeadPeer>& dead);

}  // namespace loom::algo
