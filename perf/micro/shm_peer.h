// SPDX-License-Identifier: Apache-2.0
// Two processes joined by the library's shm transport, for benchmarks of the FIFO path:
// the caller is rank 0; a forked child is rank 1 and runs a given function on its side.
// Both sides create the transport with createShmTransport and move data with
// Connection::postSend/postRecv/progress, waiting the way the executor does (spin, then
// sched_yield, then sleep on the doorbell), so what is timed is what a collective pays.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>

#include "transport/shm/shm_transport.h"

namespace loom::micro {

class PairBootstrap;

// One side of the pair.
class ShmEndpoint {
 public:
  // `link` (outlives this) tells when the peer process is gone, so a wait fails at once
  // instead of after the stall limit.
  ShmEndpoint(std::unique_ptr<transport::Transport> transport, int peer,
              const PairBootstrap* link);

  // Posts the message and progresses until it is handed over (sendDone: in the peer's slots,
  // not necessarily received).
  void send(const void* data, size_t bytes);
  // Posts a receive of exactly `bytes` and progresses until `sink` has had all of them.
  void receive(size_t bytes, transport::RecvSink* sink);

 private:
  template <typename Done>
  void progressUntil(Done done);

  std::unique_ptr<transport::Transport> transport_;
  transport::Connection* connection_;
  transport::WaitSet waits_;
  const PairBootstrap* link_;
  std::chrono::steady_clock::time_point lastProgress_;
};

struct ShmPairOptions {
  transport::ShmOptions shm;  // namePrefix is filled in per pair
  int parentCpu = -1;         // pin the calling process there (-1: leave as is)
  int childCpu = -1;          // pin the child there (-1: leave as is)
};

// The first two CPUs this process may run on, or -1, -1 with fewer than two (or !pin).
ShmPairOptions planCpus(bool pin);
// Pins the calling thread to `cpu`; throws loomSystemError on failure. No-op for -1.
void pinToCpu(int cpu);

// A forked child connected to this process over shm. The child runs `childMain` on its
// endpoint and exits (status 0, or 1 after printing an exception). Until join() returns,
// destroying this kills and reaps the child; the child dies with this process too.
class ShmPeerProcess {
 public:
  using ChildMain = std::function<void(ShmEndpoint&)>;
  ShmPeerProcess(const ShmPairOptions& options, const ChildMain& childMain);
  ~ShmPeerProcess();
  ShmPeerProcess(const ShmPeerProcess&) = delete;
  ShmPeerProcess& operator=(const ShmPeerProcess&) = delete;

  ShmEndpoint& endpoint() { return *endpoint_; }
  // Waits for the child; throws loomRemoteError unless it exited with status 0.
  void join();

 private:
  // Kills and reaps the child unless it was joined. Declared first: destroyed last, after
  // the endpoint has unmapped everything.
  struct Child {
    pid_t pid = -1;
    ~Child();
  };
  Child child_;
  std::unique_ptr<PairBootstrap> bootstrap_;
  std::unique_ptr<ShmEndpoint> endpoint_;
};

}  // namespace loom::micro
