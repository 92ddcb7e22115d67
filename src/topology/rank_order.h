// SPDX-License-Identifier: Apache-2.0
// The order in which a communicator's ranks form their ring. Ranks of one host stay together
// (the ring leaves each host once). Within a host, when the topology names as many GPUs as
// the host has ranks (or more), local rank i stands for GPU dev i and the ranks follow the
// searched ring's first channel; otherwise (CPU-only ranks) they are sorted by CPU package,
// then NUMA node, then rank, so the ring crosses each socket and NUMA boundary as few times
// as possible — twice per boundary, the minimum for a ring.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/search.h"

namespace loom::topology {

struct RankPlace {
  uint64_t hostHash = 0;
  int package = -1;  // CPU socket of the core the rank runs on (-1 unknown)
  int numaNode = -1; // NUMA node of that core (-1 unknown)
};

// Where this process runs: the NUMA node and package of its CPU affinity when it is bound to
// one node, else of the CPU it runs on now. Reads sysfs under `sysfsRoot` (tests use a fake).
RankPlace placeThisProcess(uint64_t hostHash, const std::string& sysfsRoot = "/sys");

struct RingOrder {
  std::vector<int> ranks;  // ring position -> rank
  std::string reason;      // one line for the INFO log: how the order was chosen
};

// `ring` may be null (no topology): CPU ordering everywhere.
RingOrder chooseRingOrder(const std::vector<RankPlace>& places, const Graph* ring, int topologyGpus);

}  // namespace loom::topology
