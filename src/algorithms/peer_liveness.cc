// SPDX-License-Identifier: Apache-2.0
#include "algorithms/peer_liveness.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string_view>

namespace loom::algo {

bool processDead(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // A killed child stays a zombie until its parent reaps it; it will never post again.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return false;
  char line[512];
  const size_t length = std::fread(line, 1, sizeof(line) - 1, file);
  std::fclose(file);
  // "pid (comm) S ...": comm may hold spaces and parentheses, so find the last ')'.
  const std::string_view text(line, length);
  const size_t close = text.rfind(')');
  const char state =
      close != std::string_view::npos && close + 2 < text.size() ? text[close + 2] : 0;
  return state == 'Z' || state == 'X';
}

std::vector<pid_t> checkablePeerPids(const std::vector<pid_t>& pids,
                                     const std::vector<bool>& sameHost, int selfRank) {
  std::vector<pid_t> checkable(pids.size(), 0);
  for (size_t rank = 0; rank < pids.size(); ++rank) {
    if (static_cast<int>(rank) == selfRank || rank >= sameHost.size() || !sameHost[rank]) continue;
    // Every peer is alive while the communicator is being set up: a pid that looks dead now is
    // not one this process can see, so checking it later would only raise false alarms.
    if (!processDead(pids[rank])) checkable[rank] = pids[rank];
  }
  return checkable;
}

std::vector<DeadPeer> findDeadPeers(const std::vector<pid_t>& pids) {
  std::vector<DeadPeer> dead;
  for (size_t rank = 0; rank < pids.size(); ++rank) {
    if (pids[rank] != 0 && processDead(pids[rank])) {
      dead.push_back(DeadPeer{static_cast<int>(rank), pids[rank]});
    }
  }
  return dead;
}

std::string describeDeadPeers(const std::vector<DeadPeer>& dead) {
  std::string text;
  for (const DeadPeer& peer : dead) {
    if (!text.empty()) text += ", ";
    text += "rank " + std::to_string(peer.rank) + " (pid " + std::to_string(peer.pid) + ")";
  }
  return text + " died";
}

}  // namespace loom::algo
