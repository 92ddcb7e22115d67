// SPDX-License-Identifier: Apache-2.0
// The launcher's event loop: start the ranks, copy their output, reap them, and stop all of
// them when one fails, when loomrun is signalled or when the timeout expires.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/loomrun_fd.h"
#include "tools/loomrun_options.h"
#include "tools/loomrun_output.h"

namespace loom::launcher {

class Supervisor {
 public:
  // Blocks SIGCHLD/SIGINT/SIGTERM/SIGHUP into a signalfd and ignores SIGPIPE for the
  // launcher's lifetime; the destructor restores both.
  explicit Supervisor(const LaunchOptions& options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs the launch to the end and returns loomrun's exit status: 0 when every rank exited
  // 0; else the first failing rank's status (128+signal if killed), 128+signal when loomrun
  // was signalled, 124 on timeout, 127/126 when the program cannot be executed.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Rank {
    int index = 0;
    pid_t pid = -1;
    bool running = false;
    std::optional<TaggedStream> stdoutCopy;  // only with --tag-output
    std::optional<TaggedStream> stderrCopy;
  };

  void startRanks();
  void waitForEvents();
  int pollTimeoutMs() const;
  void handleSignals();
  void reapChildren();
  void onRankExit(Rank& rank, int waitStatus);
  void onLauncherSignal(int signo);
  void checkDeadlines();
  void stopAll(int signo);
  void killAll();
  void signalRanks(int signo);
  int runningCount() const;
  void report(const std::string& message) const;

  const LaunchOptions& options_;
  sigset_t originalMask_;
  struct sigaction originalPipeAction_ {};
  struct sigaction originalChildAction_ {};
  UniqueFd signalFd_;
  std::vector<Rank> ranks_;
  pid_t group_ = 0;                // process group of every rank (rank 0's pid)
  std::optional<int> exitStatus_;  // set by the first failure, signal or timeout
  bool stopping_ = false;
  bool killed_ = false;
  int stopSignal_ = SIGTERM;
  std::optional<Clock::time_point> timeoutAt_;  // --timeout
  std::optional<Clock::time_point> killAt_;     // grace period after the stop signal ends
  std::optional<Clock::time_point> abandonAt_;  // ranks that survive SIGKILL (stuck in D state)
};

}  // namespace loom::launcher
