// SPDX-License-Identifier: Apache-2.0
// Direct collectives for communicators whose ranks all share one host: instead of passing
// pieces around a ring through FIFOs, every rank reads what it needs straight from its peers,
// through a shared arena (small calls) or single-copy reads of their buffers (large calls,
// with LOOM_CMA=1). arena_engine.h has the protocol.
//
// This header is all the communicator sees: an engine that takes the calls it handles and
// posts the others (a schedule then runs them), and the factory that decides with the other
// ranks how it runs. The engine is built on shared memory (kDirectTransport): the communicator
// asks for one only when that transport joins every pair of ranks.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/call_spec.h"
#include "base/bootstrap.h"
#include "base/function_ref.h"

namespace loom::algo {

struct DirectSettings {
  size_t eagerBytes = 16 * 1024;   // largest input staged through the arena
  size_t chunkBytes = 256 * 1024;  // single-copy staging and progress granularity
  size_t streamBytes = 8 << 20;    // outputs at least this large are written around the cache
  bool crossMemory = false;        // process_vm_readv works between every pair of ranks
  bool oversubscribed = false;     // more ranks on this host than cores to run them
  bool checkCalls = true;          // LOOM_CHECK >= 1: ranks that disagree on a call fail
  // LOOM_DETERMINISTIC: eager reductions use the canonical kernel; larger ones are left to the
  // deterministic schedule (single-copy reads reduce in a rank-rotated order).
  bool deterministic = false;
};

class DirectEngine {
 public:
  // Names the call in error messages; called only when an error is raised. A reference to the
  // caller's callable (base/function_ref.h): built on every call, so it must cost nothing.
  using Describe = FunctionRef<std::string()>;

  virtual ~DirectEngine() = default;
  // True when run() takes this call; otherwise a schedule runs it after postOnly().
  virtual bool handles(const CallSpec& call) const = 0;
  virtual void run(const CallSpec& call, const Describe& describe) = 0;
  // Every call is posted, also those a schedule runs: the arena's slots are reused by parity
  // of the call's sequence number, which is safe only when every call passes through.
  virtual void postOnly(const CallSpec& call, const Describe& describe) = 0;
  // This rank leaves the communicator (loomCommAbort; destruction does it too): peers waiting
  // on it fail at once instead of at their timeout. Safe while a call runs.
  virtual void announceDeparture() = 0;
};

// The transport every pair of ranks must be able to use for a direct engine.
inline constexpr const char* kDirectTransport = "shm";

// What each rank publishes at init so its peers can test whether they may read its memory
// (single-copy reads need ptrace permission).
uint64_t directProbeAddress();

struct DirectSetup {
  int rank = 0;
  std::vector<pid_t> pids;          // by rank
  std::vector<uint64_t> probes;     // by rank: directProbeAddress()
  bool crossMemoryWanted = false;   // every rank asked for single-copy reads (LOOM_CMA=1)
  DirectSettings settings;          // crossMemory is decided here
  uint64_t commUid = 0;             // names the arena
  int timeoutMs = 600000;
  const std::atomic<bool>* abortFlag = nullptr;
  std::string commName;             // for logs
};

// Collective over `bootstrap`: every rank of the communicator calls it alike. Creates and maps
// the arena (every rank learns if any failed), tries single-copy reads from every peer, and
// returns the engine.
std::unique_ptr<DirectEngine> createDirectEngine(Bootstrap& bootstrap, DirectSetup setup);

// Splits `count` elements of `elementBytes` into `parts` contiguous segments whose boundaries
// fall on 64-byte multiples where possible; returns segment `index` as [begin, end).
std::pair<size_t, size_t> segmentOf(size_t count, size_t elementBytes, int parts, int index);

}  // namespace loom::algo
