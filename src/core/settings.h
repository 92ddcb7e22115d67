// SPDX-License-Identifier: Apache-2.0
// Settings of one communicator: from loomConfig_t where the caller set them, else from the
// LOOM_* environment (read through the registry, base/config), else defaults. The member
// initialisers below equal the registry's defaults (tests/unit/test_config.cc checks it).
#pragma once

#include <string>

#include "algorithms/host_layout.h"
#include "loom.h"

namespace loom {

struct CommSettings {
  int timeoutMs = 600000;        // LOOM_TIMEOUT_MS / config.timeoutMs
  bool blocking = true;          // config.blocking
  std::string commName;          // config.commName
  // LOOM_TRANSPORT: the registry name of the one transport every peer must use
  // (transport/registry/registry.h), or "" to let the registry choose.
  std::string transport;
  // LOOM_NET / config.netName (NCCL_NET where NCCL's aliases are honoured): the registry name
  // of the network transport between hosts, checked against the registry's network
  // transports; "" when unset: the registry's first (socket).
  std::string netTransport;
  bool shmDisabled = false;      // LOOM_SHM_DISABLE=1
  int socketsPerPeer = 2;        // LOOM_SOCKET_NSOCKS / config.nChannelsPerNetPeer
  // LOOM_PIECE_BYTES: pipelining granularity; 0 = chosen at init: 128 KiB when every ring
  // neighbour is reached over shared memory, 1 MiB when any is a socket (fewer, larger sends).
  size_t pieceBytes = 0;
  size_t shmSlotBytes = 128 * 1024; // LOOM_SHM_SLOT_BYTES
  int shmSlots = 8;                 // LOOM_SHM_SLOTS
  // LOOM_SPREAD_RANKS: ranks that outnumber their host's cores start spread over them
  // (core/spread_ranks.h).
  bool spreadRanks = true;
  // Direct collectives (all ranks on one host; src/algorithms/direct/direct_engine.h).
  bool directDisabled = false;            // LOOM_ALGO=ring: schedules only
  // LOOM_ALGO: across hosts, the flat ring or the hierarchical schedules (algo::chooseHierarchy),
  // decided alike on every rank: any rank's `ring` makes it the flat ring (core/ring_plan.h).
  algo::AlgorithmSetting algorithm = algo::AlgorithmSetting::Auto;
  size_t directEagerBytes = 16 * 1024;    // LOOM_DIRECT_EAGER_BYTES: staged through the arena
  size_t directChunkBytes = 256 * 1024;   // LOOM_DIRECT_CHUNK_BYTES: single-copy granularity
  bool crossMemoryEnabled = false;        // LOOM_CMA=1: single-copy process_vm_readv transfers
  // Messages at least this large write received data with non-temporal stores.
  size_t streamCopyBytes = INT64_MAX;     // LOOM_STREAM_COPY_BYTES (default: never)
  size_t streamReduceBytes = INT64_MAX;   // LOOM_STREAM_REDUCE_BYTES (default: never)
  // LOOM_CHECK: 0 trusts the ranks to agree on every call; 1 (default) compares each call's
  // collective, type, op, root and count across ranks (loomInvalidUsage on a mismatch);
  // 2 also checks reduction inputs and results for NaN and infinity.
  int checkLevel = 1;
  // LOOM_DETERMINISTIC / config.deterministic: reductions give the same bits for any message
  // size, position, algorithm and transport (algorithms/deterministic_reduce.cc).
  bool deterministic = false;
  // LOOM_DEVICE_COPY_BYTES: device buffers' copies to and from pinned host memory run in pieces
  // of this size alongside the transfer (core/device_staging.h); 0 = whole calls, no overlap.
  size_t deviceCopyBytes = 1 << 20;
};

// Validates `config` (may be null) and merges it with the environment. Throws
// loomInvalidArgument for a config with a wrong magic/size or out-of-range values, and for a
// malformed variable (the registry's message).
CommSettings resolveSettings(const loomConfig_t* config);

}  // namespace loom
