// SPDX-License-Identifier: Apache-2.0
// The communicator's use of the topology engine: load the machine model when the user asks
// for one (LOOM_TOPO_FILE or LOOM_GRAPH_FILE; the dump variables make rank 0 write what it
// found), search rings, and agree on the ring order every ring and chain schedule follows.
// Without any of those variables no discovery runs (it costs init time on every rank);
// CPU-only ranks are still ordered by socket and NUMA node from sysfs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/host_layout.h"
#include "topology/rank_order.h"
#include "topology/topology_engine.h"

namespace loom {

// The machine model and its rings, when the environment asks for one; null otherwise.
std::unique_ptr<topology::TopologyResult> loadTopology(int rank, const std::string& commName);
// What the ring order depends on (channel 0's GPU order and the GPU count); 0 without a model.
// Ranks given different files disagree on it.
uint64_t topologyDigest(const topology::TopologyResult* topology);
// Ring position -> rank, from where every rank runs and the searched ring.
std::vector<int> planRing(const std::vector<topology::RankPlace>& places, const topology::TopologyResult* topology,
                          const std::string& commName);
// The host layout the hierarchical schedules follow (algo::chooseHierarchy over every rank's
// host identity and LOOM_ALGO: any rank's `ring` makes it the ring), with the choice and its
// reason logged once at INFO; null where the flat ring runs.
std::unique_ptr<algo::HostLayout> planHierarchy(const std::vector<uint64_t>& hostIds,
                                                const std::vector<algo::AlgorithmSetting>& settings, bool deterministic,
                                                const std::string& commName);

}  // namespace loom
