// Direct collectives for communicators whose ranks all share one host: instead of passing
// pieces around a ring through FIFOs, every rank reads what it needs straight from its peers.
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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom.h"
#include "algorithms/schedule.h"
#include "transport/shm/shm_arena.h"

namespace loom::algo {

struct DirectCall {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // as in the API call (sendcount for all-gather, recvcount for reduce-scatter)
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
  int root = 0;
  uint64_t sequence = 0;  // 1, 2, ...: the same on every rank for the same call
};

struct DirectSettings {
  size_t eagerBytes = 16 * 1024;   // largest input staged through the arena
  size_t chunkBytes = 256 * 1024;  // single-copy staging and progress granularity
  size_t streamBytes = 8 << 20;    // outputs at least this large are written around the cache
  bool crossMemory = false;        // process_vm_readv works between every pair of ranks
  bool oversubscribed = false;     // more ranks on this host than cores to run them
  bool checkCalls = true;          // LOOM_CHECK >= 1: ranks that disagree on a call fail
};

// What every rank must agree on about a call, and its name in error messages
// ("allreduce(count 4096, float32, sum)").
transport::CallDescriptor callDescriptor(Collective collective, loomDataType_t type, loomRedOp_t op, int root,
                                         size_t count);
std::string describeCallDescriptor(const transport::CallDescriptor& descriptor);

class DirectEngine {
 public:
  using Describe = std::function<std::string()>;

  DirectEngine(transport::ShmArena& arena, std::vector<pid_t> pids, int rank,
               DirectSettings settings, int timeoutMs, const std::atomic<bool>* abortFlag);
  ~DirectEngine();
  DirectEngine(const DirectEngine&) = delete;
  DirectEngine& operator=(const DirectEngine&) = delete;

  // True when run() takes this call; otherwise a schedule runs it after postOnly().
  bool handles(const DirectCall& call) const;
  void run(const DirectCall& call, const Describe& describe);
  void postOnly(const DirectCall& call, const Describe& describe);

  const DirectSettings& settings() const { return settings_; }

 private:
  struct Addresses {
    uint64_t send, recv;
  };

  size_t elementBytes(const DirectCall& call) const;
  size_t inputBytes(const DirectCall& call) const;  // what one rank contributes
  bool eager(const DirectCall& call) const { return inputBytes(call) <= settings_.eagerBytes; }

  // The protocol (direct_engine.cc).
  void publish(const DirectCall& call, const void* payload, size_t bytes, const Describe& describe);
  void awaitPosts(const DirectCall& call, const Describe& describe);
  const char* peerPayload(int peer, uint64_t sequence) const;
  Addresses peerAddresses(int peer, uint64_t sequence) const;
  void readPeer(int peer, uint64_t remote, void* local, size_t bytes, const Describe& describe) const;
  void publishProgress(uint64_t sequence, uint64_t chunksDone);
  void awaitProgress(int peer, uint64_t sequence, uint64_t chunks, const Describe& describe);
  // Publishes that this rank is done with its peers' memory and waits until they are done
  // with its own (only then may the caller reuse its buffers).
  void finishAndAwaitPeers(uint64_t sequence, const Describe& describe);
  void wakePeers();
  void awaitFlag(int peer, const std::atomic<uint64_t>& flag, uint64_t target, const char* what,
                 const Describe& describe) const;

  // The collectives (direct_allreduce.cc, direct_gather.cc, direct_reduce.cc).
  void allReduceEager(const DirectCall& call, const Describe& describe);
  void allReduceSingleCopy(const DirectCall& call, const Describe& describe);
  void allGather(const DirectCall& call, const Describe& describe);
  void broadcast(const DirectCall& call, const Describe& describe);
  void reduceScatter(const DirectCall& call, const Describe& describe);
  void reduce(const DirectCall& call, const Describe& describe);
  // dst = mine op (every peer's input at `offset`, `bytes` <= chunkBytes long), read with
  // single-copy reads into the staging chunk. `stream`: accumulate in staging (cache) and
  // write dst once with non-temporal stores.
  void reduceFromPeers(const DirectCall& call, uint64_t offset, size_t bytes, const void* mine,
                       void* dst, const std::vector<Addresses>& peers, bool stream, const Describe& describe);
  // dst = `bytes` at `remote` in `peer`; through the staging chunk and streaming stores when
  // `stream`, else straight into dst.
  void copyFromPeer(int peer, uint64_t remote, void* dst, size_t bytes, bool stream, const Describe& describe);
  bool streaming(size_t outputBytes) const { return outputBytes >= settings_.streamBytes; }

  transport::ShmArena& arena_;
  std::vector<pid_t> pids_;
  int rank_;
  int nranks_;
  DirectSettings settings_;
  int timeoutMs_;
  const std::atomic<bool>* abortFlag_;
  std::vector<uint64_t> knownPosted_;  // per peer: highest sequence seen posted
  char* staging_ = nullptr;            // two chunks, pre-faulted
};

// Splits `count` elements of `elementBytes` into `parts` contiguous segments whose boundaries
// fall on 64-byte multiples where possible; returns segment `index` as [begin, end).
std::pair<size_t, size_t> segmentOf(size_t count, size_t elementBytes, int parts, int index);

}  // namespace loom::algo
