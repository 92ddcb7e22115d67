// SPDX-License-Identifier: Apache-2.0
// The one phrase for a peer that left the communicator while this rank waited for it: the
// shared-memory transport (a departed mark), the direct engine (the arena's departed lines) and
// the socket transport (the peer closed its connections) all say it alike, naming the pid where
// they know it. loom_torch (python/loom_torch/user_errors.cc) finds this exact text to say it in
// PyTorch's words: change both together.
#pragma once

#include <sys/types.h>

#include <string>

namespace loom {

inline constexpr const char* kLeftTheCommunicator =
    "left the communicator (loomCommDestroy, loomCommAbort, or its process exited)";

// "rank 1 (pid 123) left the communicator (...)"; without "(pid ...)" when pid is 0.
inline std::string peerLeft(int rank, pid_t pid) {
  return "rank " + std::to_string(rank) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) + " " +
         kLeftTheCommunicator;
}

}  // namespace loom
