// SPDX-License-Identifier: Apache-2.0
#include "shm_peer.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include "base/backoff.h"
#include "base/error.h"
#include "pair_bootstrap.h"

namespace loom::micro {

namespace {

using Clock = std::chrono::steady_clock;

// A peer that made no progress for this long has failed; the benchmark reports an error
// rather than hanging.
constexpr auto kStallLimit = std::chrono::seconds(20);


std::string uniquePrefix() {
  static std::atomic<int> counter{0};
  return "loom-micro-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

ShmEndpoint::ShmEndpoint(std::unique_ptr<transport::Transport> transport, int peer,
                         const PairBootstrap* link)
    : transport_(std::move(transport)), connection_(transport_->connection(peer)), link_(link) {
}

template <typename Done>
void ShmEndpoint::progressUntil(Done done) {
  lastProgress_ = Clock::now();
  // As the executor (src/algorithms/executor.cc), with its back-off: arm the wait set before
  // looking for work, so a ring between the look and the sleep is not lost.
  Backoff backoff(BackoffPolicy{63, 128, 50, 8, 8, 10000});
  const std::vector<const transport::Connection*> waiting{connection_};
  while (true) {
    const bool moved = connection_->progress();
    if (done()) {
      connection_->flushWakeup();  // the peer may sleep waiting for what just moved
      return;
    }
    if (moved) {
      backoff.reset();
      lastProgress_ = Clock::now();
      continue;
    }
    const Backoff::Phase phase = backoff.next();
    if (phase == Backoff::Phase::Spin) {
      cpuPause();
      continue;
    }
    connection_->flushWakeup();  // before yield or sleep
    if (Clock::now() - lastProgress_ > kStallLimit) {
      throwRemote("shm peer made no progress for " + std::to_string(std::chrono::seconds(kStallLimit).count()) +
                  " s");
    }
    if (phase == Backoff::Phase::Yield) {
      sched_yield();
      continue;
    }
    if (link_->peerClosed()) throwRemote("the shm peer process has exited");
    waits_.sleep(waiting, backoff.sleepUs());
  }
}

void ShmEndpoint::send(const void* data, size_t bytes) {
  const transport::Region region = transport_->registerRegion(const_cast<void*>(data), bytes);
  connection_->postSend(region, 0, bytes);
  progressUntil([this] { return connection_->sendDone(); });
  transport_->deregisterRegion(region);
}

void ShmEndpoint::receive(size_t bytes, transport::RecvSink* sink) {
  connection_->postRecv(bytes, sink);
  progressUntil([this] { return connection_->recvDone(); });
}

ShmPairOptions planCpus(bool pin) {
  ShmPairOptions options;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (!pin || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return options;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (options.parentCpu < 0) {
      options.parentCpu = cpu;
    } else {
      options.childCpu = cpu;
      return options;
    }
  }
  options.parentCpu = -1;  // a single CPU: pinning both there would only serialize them
  return options;
}

void pinToCpu(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    throwSystem("pinning to CPU " + std::to_string(cpu));
  }
}

ShmPeerProcess::Child::~Child() {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

ShmPeerProcess::ShmPeerProcess(const ShmPairOptions& options, const ChildMain& childMain) {
  transport::ShmOptions shm = options.shm;
  shm.namePrefix = uniquePrefix();
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    throwSystem("socketpair for the shm peer process");
  }
  const pid_t parent = getpid();
  child_.pid = ::fork();
  if (child_.pid < 0) {
    const int err = errno;
    ::close(sockets[0]);
    ::close(sockets[1]);
    throwSystem("fork of the shm peer process", err);
  }
  if (child_.pid == 0) {
    ::close(sockets[0]);
    // Die with the parent (a killed benchmark must not leave a child spinning), and leave
    // without running the parent's atexit handlers or flushing its stdio buffers twice.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    int status = 0;
    try {
      pinToCpu(options.childCpu);
      PairBootstrap bootstrap(1, sockets[1]);
      ShmEndpoint endpoint(transport::createShmTransport(bootstrap, {0}, shm), 0, &bootstrap);
      childMain(endpoint);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "shm peer process: %s\n", error.what());
      status = 1;
    }
    std::fflush(stderr);
    _exit(status);
  }
  ::close(sockets[1]);
  bootstrap_ = std::make_unique<PairBootstrap>(0, sockets[0]);
  endpoint_ = std::make_unique<ShmEndpoint>(transport::createShmTransport(*bootstrap_, {1}, shm), 1,
                                            bootstrap_.get());
}

ShmPeerProcess::~ShmPeerProcess() = default;

void ShmPeerProcess::join() {
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(child_.pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) throwSystem("waiting for the shm peer process");
  child_.pid = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throwRemote("shm peer process failed (status " + std::to_string(status) + ")");
  }
}

}  // namespace loom::micro
