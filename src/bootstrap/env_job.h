// SPDX-License-Identifier: Apache-2.0
// Rank, size and rendezvous from the environment of a launcher: loomrun, torchrun, OpenMPI's
// mpirun, Slurm's srun.
#pragma once

#include "bootstrap/socket_bootstrap.h"

namespace loom {

struct EnvJob {
  int rank = -1;
  int nranks = 0;
  sockaddr_storage rootAddress{};
  Secret secret{};
  std::string launcher;  // "loomrun", "torchrun", "mpirun", "slurm": for logs
};

// Throws loomInvalidArgument naming the variables that are missing or malformed.
EnvJob readEnvJob();

// LOOM_COMM_ID's value as an address: the one parser behind loomGetUniqueId and
// loomCommInitFromEnv, so a malformed one is the same error in both (LOOM_COMM_ID="x": why).
sockaddr_storage commIdAddress(const std::string& text);

// The unique id every rank of an environment-launched job agrees on without talking:
// the root address and the secret from the environment, commUid derived from the secret, and
// the generation: how many times this process has called this, this call included (one call
// per loomCommInitFromEnv that goes on to the rendezvous).
UniqueIdContents envUniqueId(const EnvJob& job);

// The id of a root pinned at `commId` (host:port) that no one has started yet: rank 0 starts it
// when it inits (NCCL's meaning of NCCL_COMM_ID), so every rank can make the same id without
// talking. The secret is LOOM_COMM_SECRET's, or derived as envUniqueId's is; the generation
// counts on from the same count as envUniqueId's.
UniqueIdContents rankZeroRootId(const std::string& commId);

}  // namespace loom
