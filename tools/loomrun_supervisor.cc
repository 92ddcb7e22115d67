// SPDX-License-Identifier: Apache-2.0
#include "tools/loomrun_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "tools/loomrun_spawn.h"

namespace loom::launcher {
namespace {

// How long ranks get to exit after SIGTERM (or a forwarded SIGINT) before SIGKILL.
constexpr std::chrono::seconds kStopGrace{3};
// How long to wait for ranks to vanish after SIGKILL before giving up on them.
constexpr std::chrono::seconds kKillGrace{5};

std::string plural(int count, const char* noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string signalText(int signo) {
  const char* name = ::strsignal(signo);
  return "signal " + std::to_string(signo) + " (" + (name != nullptr ? name : "unknown") + ")";
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

}  // namespace

Supervisor::Supervisor(const LaunchOptions& options) : options_(options) {
  // SIGCHLD must not be ignored, or the kernel reaps the ranks before we see how they ended.
  struct sigaction defaultAction {};
  defaultAction.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &defaultAction, &originalChildAction_);
  // A closed stdout must not kill the launcher while ranks still need supervising.
  struct sigaction ignoreAction {};
  ignoreAction.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignoreAction, &originalPipeAction_);

  sigset_t handled;
  sigemptyset(&handled);
  for (int signo : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, signo);
  ::sigprocmask(SIG_BLOCK, &handled, &originalMask_);
  signalFd_.reset(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signalFd_.valid()) throwSystem("loomrun: signalfd");
}

Supervisor::~Supervisor() {
  signalFd_.reset();
  ::sigprocmask(SIG_SETMASK, &originalMask_, nullptr);
  ::sigaction(SIGPIPE, &originalPipeAction_, nullptr);
  ::sigaction(SIGCHLD, &originalChildAction_, nullptr);
}

int Supervisor::run() {
  try {
    startRanks();
  } catch (const std::exception& error) {
    report(error.what());
    if (!exitStatus_) exitStatus_ = 1;
    if (runningCount() > 0) stopAll(SIGTERM);
  }
  if (options_.timeoutSeconds && !stopping_) {
    timeoutAt_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(*options_.timeoutSeconds));
  }

  while (runningCount() > 0) {
    if (abandonAt_ && Clock::now() >= *abandonAt_) {
      report("loomrun: " + plural(runningCount(), "rank") +
             " did not exit after SIGKILL; giving up on them");
      break;
    }
    waitForEvents();
    checkDeadlines();
  }

  // The ranks are gone; a background child of one may still hold its pipe, so copy what is
  // already buffered instead of waiting for end of file.
  for (Rank& rank : ranks_) {
    if (rank.stdoutCopy) rank.stdoutCopy->drainAndClose();
    if (rank.stderrCopy) rank.stderrCopy->drainAndClose();
  }
  // Children the ranks left behind in their group (a shell's background job) go too when
  // the launch was stopped; after a clean run they are the user's business.
  if (stopping_ && group_ > 0) ::kill(-group_, SIGKILL);
  return exitStatus_.value_or(0);
}

void Supervisor::startRanks() {
  RankEnvironment environment(chooseRendezvous(), options_.nranks);
  std::vector<int> cpus;
  if (options_.bind == BindPolicy::kCore) cpus = allowedCpus();
  UniqueFd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull.valid()) throwSystem("loomrun: open /dev/null");
  // The ranks run in a background process group, where reading a terminal would stop them
  // (SIGTTIN); so only rank 0 gets stdin, and only when it is a pipe or file.
  bool shareStdin = ::isatty(STDIN_FILENO) == 0;

  ranks_.reserve(options_.nranks);
  for (int index = 0; index < options_.nranks; ++index) {
    SpawnSpec spec;
    spec.command = &options_.command;
    spec.environment = environment.forRank(index);
    spec.stdinFd = (index == 0 && shareStdin) ? -1 : devNull.get();
    std::optional<Pipe> stdoutPipe, stderrPipe;
    if (options_.tagOutput) {
      stdoutPipe = makePipe();
      stderrPipe = makePipe();
      spec.stdoutFd = stdoutPipe->writeEnd.get();
      spec.stderrFd = stderrPipe->writeEnd.get();
    }
    if (!cpus.empty()) spec.cpu = cpus[static_cast<size_t>(index) % cpus.size()];
    spec.processGroup = group_;
    spec.childSignalMask = originalMask_;

    SpawnOutcome outcome = spawnRank(spec);
    if (outcome.failureErrno != 0) {
      const std::string reason = std::strerror(outcome.failureErrno);
      if (outcome.failedStep == "exec") {
        report("loomrun: cannot execute '" + options_.command[0] + "': " + reason);
        bool notFound = outcome.failureErrno == ENOENT || outcome.failureErrno == ENOTDIR;
        exitStatus_ = notFound ? 127 : 126;
      } else {
        report("loomrun: cannot start rank " + std::to_string(index) + ": " + outcome.failedStep +
               ": " + reason);
        exitStatus_ = 1;
      }
      if (runningCount() > 0) stopAll(SIGTERM);
      return;
    }

    Rank& rank = ranks_.emplace_back();
    rank.index = index;
    rank.pid = outcome.pid;
    rank.running = true;
    if (group_ == 0) group_ = outcome.pid;
    if (options_.tagOutput) {
      // Our copies of the write ends close here (end of scope), so EOF means the rank is done.
      // Built by appending: GCC 12 warns falsely (-Wrestrict) on "[" + std::to_string(...).
      std::string prefix("[");
      prefix.append(std::to_string(index)).append("] ");
      rank.stdoutCopy.emplace(std::move(stdoutPipe->readEnd), prefix, STDOUT_FILENO);
      rank.stderrCopy.emplace(std::move(stderrPipe->readEnd), prefix, STDERR_FILENO);
    }
  }
}

int Supervisor::pollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](const std::optional<Clock::time_point>& at) {
    if (at && (!next || *at < *next)) next = at;
  };
  if (!stopping_) consider(timeoutAt_);
  if (!killed_) consider(killAt_);
  consider(abandonAt_);
  if (!next) return -1;
  auto remaining = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<decltype(remaining)>(remaining, 0, 60'000));
}

void Supervisor::waitForEvents() {
  std::vector<pollfd> fds;
  std::vector<TaggedStream*> streams;
  fds.push_back({signalFd_.get(), POLLIN, 0});
  for (Rank& rank : ranks_) {
    for (std::optional<TaggedStream>* copy : {&rank.stdoutCopy, &rank.stderrCopy}) {
      if (*copy && (*copy)->open()) {
        fds.push_back({(*copy)->fd(), POLLIN, 0});
        streams.push_back(&**copy);
      }
    }
  }
  int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
  if (ready < 0) {
    if (errno == EINTR) return;
    throwSystem("loomrun: poll");
  }
  // Output first: what a rank printed just before it failed appears before our report.
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) streams[i - 1]->pump();
  }
  if (fds[0].revents != 0) handleSignals();
}

void Supervisor::handleSignals() {
  signalfd_siginfo info;
  while (true) {
    ssize_t got = ::read(signalFd_.get(), &info, sizeof(info));
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof(info))) break;  // EAGAIN: all read
    if (info.ssi_signo != SIGCHLD) onLauncherSignal(static_cast<int>(info.ssi_signo));
  }
  // SIGCHLDs coalesce, so reap everything that has ended whatever we read.
  reapChildren();
}

void Supervisor::reapChildren() {
  int waitStatus = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &waitStatus, WNOHANG)) > 0) {
    for (Rank& rank : ranks_) {
      if (rank.pid == pid && rank.running) {
        onRankExit(rank, waitStatus);
        break;
      }
    }
  }
}

void Supervisor::onRankExit(Rank& rank, int waitStatus) {
  rank.running = false;
  if (stopping_) return;  // we asked it to stop; its ending is not news
  bool exited = WIFEXITED(waitStatus);
  if (exited && WEXITSTATUS(waitStatus) == 0) return;

  std::string how;
  if (exited) {
    how = "exited with status " + std::to_string(WEXITSTATUS(waitStatus));
    exitStatus_ = WEXITSTATUS(waitStatus);
  } else {
    int signo = WTERMSIG(waitStatus);
    how = "was killed by " + signalText(signo);
    if (WCOREDUMP(waitStatus)) how += " (core dumped)";
    exitStatus_ = 128 + signo;
  }
  std::string message = "loomrun: rank " + std::to_string(rank.index) + " (pid " +
                        std::to_string(rank.pid) + ") " + how;
  int others = runningCount();
  if (others > 0) message += "; stopping the other " + plural(others, "rank");
  report(message);
  stopAll(SIGTERM);
}

void Supervisor::onLauncherSignal(int signo) {
  if (!stopping_) {
    report("loomrun: received " + signalText(signo) + "; stopping " +
           plural(runningCount(), "rank"));
    exitStatus_ = 128 + signo;
    stopAll(signo);  // forwarded as is: a rank may treat SIGINT and SIGTERM differently
  } else if (!killed_) {
    report("loomrun: received " + signalText(signo) + " while stopping; killing " +
           plural(runningCount(), "rank"));
    killAll();
  }
}

void Supervisor::checkDeadlines() {
  Clock::time_point now = Clock::now();
  if (!stopping_ && timeoutAt_ && now >= *timeoutAt_) {
    report("loomrun: timed out after " + secondsText(*options_.timeoutSeconds) + " s; stopping " +
           plural(runningCount(), "rank"));
    exitStatus_ = 124;
    stopAll(SIGTERM);
  }
  if (stopping_ && !killed_ && killAt_ && now >= *killAt_ && runningCount() > 0) {
    report("loomrun: " + plural(runningCount(), "rank") + " still running " +
           std::to_string(kStopGrace.count()) + " s after SIG" + ::sigabbrev_np(stopSignal_) +
           "; sending SIGKILL");
    killAll();
  }
}

void Supervisor::stopAll(int signo) {
  stopping_ = true;
  stopSignal_ = signo;
  killAt_ = Clock::now() + kStopGrace;
  signalRanks(signo);
}

void Supervisor::killAll() {
  killed_ = true;
  abandonAt_ = Clock::now() + kKillGrace;
  signalRanks(SIGKILL);
}

void Supervisor::signalRanks(int signo) {
  // The group reaches what the ranks started too (the sleep under "sh -c"), which the
  // parent-death signal alone would orphan.
  if (group_ > 0) ::kill(-group_, signo);
  // A rank that moved to its own group or session (setsid) still gets the signal.
  for (const Rank& rank : ranks_) {
    if (rank.running && ::getpgid(rank.pid) != group_) ::kill(rank.pid, signo);
  }
}

int Supervisor::runningCount() const {
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; }));
}

void Supervisor::report(const std::string& message) const {
  writeAll(STDERR_FILENO, message + "\n");
}

}  // namespace loom::launcher
