// SPDX-License-Identifier: Apache-2.0
#include "tools/loomrun_spawn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "base/error.h"
#include "tools/loomrun_fd.h"

extern char** environ;

namespace loom::launcher {
namespace {

// Variables loomrun owns; inherited copies (e.g. from an enclosing loomrun) must not leak in.
constexpr std::array<const char*, 6> kLaunchVariables = {"LOOM_RANK",       "LOOM_LOCAL_RANK",
                                                         "LOOM_WORLD_SIZE", "LOOM_LOCAL_SIZE",
                                                         "LOOM_COMM_ID",    "LOOM_COMM_SECRET"};

bool isLaunchVariable(std::string_view entry) {
  for (const char* name : kLaunchVariables) {
    size_t length = std::strlen(name);
    if (entry.size() > length && entry.compare(0, length, name) == 0 && entry[length] == '=') {
      return true;
    }
  }
  return false;
}

// The kernel hands out a port that is free now; rank 0's root server binds it moments later.
// Another process could take it in between, but on a launch-local loopback port that race is
// rare and shows up as a clear bind error in rank 0.
std::string pickFreeLoopbackPort() {
  UniqueFd socketFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socketFd.valid()) throwSystem("loomrun: socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(socketFd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    throwSystem("loomrun: bind 127.0.0.1:0");
  }
  socklen_t length = sizeof(address);
  if (::getsockname(socketFd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throwSystem("loomrun: getsockname");
  }
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

std::string randomHexSecret() {
  std::array<unsigned char, 16> bytes{};
  UniqueFd urandom(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  if (!urandom.valid()) throwSystem("loomrun: open /dev/urandom");
  size_t filled = 0;
  while (filled < bytes.size()) {
    ssize_t got = ::read(urandom.get(), bytes.data() + filled, bytes.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throwSystem("loomrun: read /dev/urandom", got == 0 ? EIO : errno);
    filled += static_cast<size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  return text;
}

std::vector<char*> pointersTo(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// What a child that could not become the program tells its parent through the status pipe.
struct ChildFailure {
  int step;
  int err;
};
enum ChildStep : int { kStepSetpgid, kStepAffinity, kStepDup2, kStepExec };

const char* stepName(int step) {
  switch (step) {
    case kStepSetpgid:
      return "setpgid";
    case kStepAffinity:
      return "sched_setaffinity";
    case kStepDup2:
      return "dup2";
    default:
      return "exec";
  }
}

// Runs in the forked child: only system calls, no allocation. Never returns.
[[noreturn]] void becomeRank(const SpawnSpec& spec, char* const* argv, char* const* envp,
                             const cpu_set_t* cpuSet, pid_t parentPid, int statusFd) {
  auto fail = [statusFd](int step) {
    ChildFailure failure{step, errno};
    ssize_t ignored = ::write(statusFd, &failure, sizeof(failure));
    (void)ignored;
    ::_exit(127);
  };
  if (::setpgid(0, spec.processGroup) != 0) fail(kStepSetpgid);
  // If loomrun dies (even by SIGKILL) the rank goes too; the check closes the window where
  // the parent died before prctl took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parentPid) ::_exit(127);
  if (cpuSet != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), cpuSet) != 0) {
    fail(kStepAffinity);
  }
  const int targets[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
  const int sources[3] = {spec.stdinFd, spec.stdoutFd, spec.stderrFd};
  for (int i = 0; i < 3; ++i) {
    if (sources[i] >= 0 && ::dup2(sources[i], targets[i]) < 0) fail(kStepDup2);
  }
  // loomrun ignores SIGPIPE and blocks the signals it reads through a signalfd; both are
  // inherited across exec, so give the program the defaults it expects.
  struct sigaction defaultAction {};
  defaultAction.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &defaultAction, nullptr);
  ::sigprocmask(SIG_SETMASK, &spec.childSignalMask, nullptr);
  ::execvpe(argv[0], argv, envp);
  fail(kStepExec);
  ::_exit(127);  // unreachable: fail() exits
}

}  // namespace

Rendezvous chooseRendezvous() {
  Rendezvous rendezvous;
  // Passed on as they are: the ranks parse them (loomCommInitFromEnv), with the registry's errors.
  const std::string commId = config::text(config::Knob::CommId);
  const std::string secret = config::text(config::Knob::CommSecret);
  rendezvous.commId = !commId.empty() ? commId : pickFreeLoopbackPort();
  rendezvous.secret = !secret.empty() ? secret : randomHexSecret();
  return rendezvous;
}

RankEnvironment::RankEnvironment(const Rendezvous& rendezvous, int worldSize)
    : rendezvous_(rendezvous), worldSize_(worldSize) {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!isLaunchVariable(*entry)) inherited_.emplace_back(*entry);
  }
}

std::vector<std::string> RankEnvironment::forRank(int rank) const {
  std::vector<std::string> environment = inherited_;
  // One host: local rank and size equal the global ones.
  environment.push_back("LOOM_RANK=" + std::to_string(rank));
  environment.push_back("LOOM_LOCAL_RANK=" + std::to_string(rank));
  environment.push_back("LOOM_WORLD_SIZE=" + std::to_string(worldSize_));
  environment.push_back("LOOM_LOCAL_SIZE=" + std::to_string(worldSize_));
  environment.push_back("LOOM_COMM_ID=" + rendezvous_.commId);
  environment.push_back("LOOM_COMM_SECRET=" + rendezvous_.secret);
  return environment;
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) throwSystem("loomrun: sched_getaffinity");
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

SpawnOutcome spawnRank(const SpawnSpec& spec) {
  // Everything the child needs is built before fork: after fork it only makes system calls.
  std::vector<char*> argv = pointersTo(*spec.command);
  std::vector<char*> envp = pointersTo(spec.environment);
  cpu_set_t cpuSet;
  CPU_ZERO(&cpuSet);
  if (spec.cpu) CPU_SET(*spec.cpu, &cpuSet);
  Pipe status = makePipe();  // close-on-exec: EOF without data means exec succeeded
  pid_t parentPid = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) throwSystem("loomrun: fork");
  if (pid == 0) {
    status.readEnd.reset();
    becomeRank(spec, argv.data(), envp.data(), spec.cpu ? &cpuSet : nullptr, parentPid,
               status.writeEnd.get());
  }
  // Set the group from this side too, so it is in place before anyone signals the group.
  // Fails harmlessly (EACCES) once the child has exec'd; it set the group itself by then.
  ::setpgid(pid, spec.processGroup == 0 ? pid : spec.processGroup);
  status.writeEnd.reset();

  ChildFailure failure{};
  ssize_t got;
  do {
    got = ::read(status.readEnd.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);

  SpawnOutcome outcome;
  outcome.pid = pid;
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    outcome.failureErrno = failure.err;
    outcome.failedStep = stepName(failure.step);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  return outcome;
}

}  // namespace loom::launcher
