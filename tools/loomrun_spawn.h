// SPDX-License-Identifier: Apache-2.0
// Starting one rank: its environment, its CPU, its stdio, its process group, and a clear
// answer when the program cannot be executed at all.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace loom::launcher {

// Where the ranks meet: LOOM_COMM_ID and LOOM_COMM_SECRET.
struct Rendezvous {
  std::string commId;  // "127.0.0.1:<port>"
  std::string secret;  // 32 hex digits (128 bits)
};

// Takes LOOM_COMM_ID / LOOM_COMM_SECRET from loomrun's own environment when set (so a user
// can pin them), otherwise picks a free loopback port and a fresh random secret.
Rendezvous chooseRendezvous();

// The environment every rank sees: loomrun's own, minus any stale LOOM_* rank variables,
// plus this launch's rank, sizes and rendezvous.
class RankEnvironment {
 public:
  RankEnvironment(const Rendezvous& rendezvous, int worldSize);
  std::vector<std::string> forRank(int rank) const;

 private:
  std::vector<std::string> inherited_;
  Rendezvous rendezvous_;
  int worldSize_;
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowedCpus();

struct SpawnSpec {
  const std::vector<std::string>* command = nullptr;  // program then arguments; PATH is searched
  std::vector<std::string> environment;
  int stdinFd = -1;          // -1: inherit
  int stdoutFd = -1;         // -1: inherit
  int stderrFd = -1;         // -1: inherit
  std::optional<int> cpu;    // pin to this CPU before exec
  pid_t processGroup = 0;    // join this group; 0: lead a new one
  sigset_t childSignalMask;  // the mask the program should start with
};

struct SpawnOutcome {
  pid_t pid = -1;          // the running child when failureErrno == 0
  int failureErrno = 0;    // why the child could not become the program (it is already reaped)
  std::string failedStep;  // "exec", "setpgid", "sched_setaffinity", "dup2"
};

// fork + exec. Only returns once the child has either exec'd the program or given up, so an
// unknown program is reported before the next rank is started. Throws loom::Error if the
// launcher itself cannot fork.
SpawnOutcome spawnRank(const SpawnSpec& spec);

}  // namespace loom::launcher
