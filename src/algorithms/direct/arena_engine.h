// SPDX-License-Identifier: Apache-2.0
// The direct engine (direct_engine.h) over a shared arena (transport/shm/shm_arena.h):
//
//   eager   (messages up to LOOM_DIRECT_EAGER_BYTES): each rank copies its input into its post
//           slot in the shared arena and publishes the call's sequence number in the same
//           cache line; the others read all inputs from there. One synchronisation, no
//           round trips: this is the small-message latency path.
//   single-copy (larger, when process_vm_readv is permitted): ranks publish their buffer
//           addresses; each rank reduces its own segment by reading the peers' segments with
//           process_vm_readv into a cache-sized staging chunk, then reads the other reduced
//           segments straight into its output. Data crosses memory once, as in the bound
//           "read both halves, write the reduced half, copy the peer's half".
//
// Results are bitwise identical on every rank: each output element is computed by one rank
// (single-copy) or by every rank in the same order, rank 0 first (eager).
//
// The protocol's one rule: a post slot (two per rank, by parity of the sequence number) is
// rewritten only after every peer has posted the previous call, which it does only after it
// has finished the call before that, the last one that could read the slot. Calls that run
// as schedules therefore post too (postOnly). Every post carries the call's descriptor, so
// ranks that disagree on a call fail with loomInvalidUsage instead of corrupting data.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/direct/direct_engine.h"
#include "loom.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/shm_arena.h"

namespace loom::algo {

class ArenaEngine final : public DirectEngine {
 public:
  ArenaEngine(std::unique_ptr<transport::ShmArena> arena, std::vector<pid_t> pids, int rank,
              DirectSettings settings, int timeoutMs, const std::atomic<bool>* abortFlag);
  ~ArenaEngine() override;
  ArenaEngine(const ArenaEngine&) = delete;
  ArenaEngine& operator=(const ArenaEngine&) = delete;

  bool handles(const CallSpec& call) const override;
  void run(const CallSpec& call, const Describe& describe) override;
  void postOnly(const CallSpec& call, const Describe& describe) override;
  void announceDeparture() override;

 private:
  struct Addresses {
    uint64_t send, recv;
  };

  size_t elementBytes(const CallSpec& call) const;
  bool eager(const CallSpec& call) const { return call.inputBytes(nranks_) <= settings_.eagerBytes; }

  // The protocol (arena_engine.cc).
  void publish(const CallSpec& call, const void* payload, size_t bytes, const Describe& describe);
  void awaitPosts(const CallSpec& call, const Describe& describe);
  const char* peerPayload(int peer, uint64_t sequence) const;
  Addresses peerAddresses(int peer, uint64_t sequence) const;
  void readPeer(int peer, uint64_t remote, void* local, size_t bytes, const Describe& describe) const;
  void publishProgress(uint64_t sequence, uint64_t chunksDone);
  void awaitProgress(int peer, uint64_t sequence, uint64_t chunks, const Describe& describe);
  // Publishes that this rank is done with its peers' memory and waits until they are done
  // with its own (only then may the caller reuse its buffers).
  void finishAndAwaitPeers(uint64_t sequence, const Describe& describe);
  void wakePeers();
  // Inline: the flag is usually there already, and that check is all the common case costs
  // (no stack frame for the wait's policy).
  void awaitFlag(int peer, const std::atomic<uint64_t>& flag, uint64_t target, const char* what,
                 const Describe& describe) const {
    if (flag.load(std::memory_order_acquire) >= target) return;
    waitForPeer(peer, flag, target, what, describe);
  }
  [[gnu::noinline]] void waitForPeer(int peer, const std::atomic<uint64_t>& flag, uint64_t target, const char* what,
                                     const Describe& describe) const;

  // The collectives (direct_allreduce.cc, direct_gather.cc, direct_reduce.cc).
  void allReduceEager(const CallSpec& call, const Describe& describe);
  void allReduceSingleCopy(const CallSpec& call, const Describe& describe);
  void allGather(const CallSpec& call, const Describe& describe);
  void broadcast(const CallSpec& call, const Describe& describe);
  void reduceScatter(const CallSpec& call, const Describe& describe);
  void reduce(const CallSpec& call, const Describe& describe);
  // Small messages only (direct_alltoall.cc); larger ones run as mesh schedules.
  void allToAllEager(const CallSpec& call, const Describe& describe);
  void gatherEager(const CallSpec& call, const Describe& describe);
  void scatterEager(const CallSpec& call, const Describe& describe);
  // dst = every rank's posted input at `offset` bytes reduced (eager calls): in rank order,
  // pairwise with the vector kernels where that is already one rounding per element in the
  // canonical order (integers, float32/float64 but avg), else with the canonical kernel
  // (16- and 8-bit floats accumulate in float32 and round once; avg cannot overflow). Always the
  // canonical kernel in deterministic mode.
  void reducePosted(const CallSpec& call, void* dst, size_t offset);
  // dst = mine op (every peer's input at `offset`, `bytes` <= chunkBytes long), read with
  // single-copy reads into the staging chunk. `stream`: accumulate in staging (cache) and
  // write dst once with non-temporal stores.
  void reduceFromPeers(const CallSpec& call, uint64_t offset, size_t bytes, const void* mine,
                       void* dst, const std::vector<Addresses>& peers, bool stream, const Describe& describe);
  // dst = `bytes` at `remote` in `peer`; through the staging chunk and streaming stores when
  // `stream`, else straight into dst.
  void copyFromPeer(int peer, uint64_t remote, void* dst, size_t bytes, bool stream, const Describe& describe);
  bool streaming(size_t outputBytes) const { return outputBytes >= settings_.streamBytes; }

  std::unique_ptr<transport::ShmArena> arena_;
  std::vector<pid_t> pids_;
  int rank_;
  int nranks_;
  DirectSettings settings_;
  int timeoutMs_;
  const std::atomic<bool>* abortFlag_;
  mutable std::vector<transport::Doorbell> bells_;  // by rank, in the arena (waits sleep on our own)
  std::vector<uint64_t> knownPosted_;  // per peer: highest sequence seen posted
  char* staging_ = nullptr;            // two chunks, pre-faulted
  std::vector<const void*> rankInputs_;  // reducePosted's operands, by rank (no allocation per call)
};

}  // namespace loom::algo
