// SPDX-License-Identifier: Apache-2.0
// One call from "which machine is this" to "which rings and trees to use": load the model
// (LOOM_TOPO_FILE, or discover this host), optionally dump it (LOOM_TOPO_DUMP_FILE), compute
// paths under the P2P/GDR policy (LOOM_P2P_LEVEL, LOOM_NET_GDR_LEVEL), then search rings and
// trees — or take them from LOOM_GRAPH_FILE — and optionally dump them (LOOM_GRAPH_DUMP_FILE).
// Used by the communicator at init and by loom-topo.
#pragma once

#include <memory>
#include <string>

#include "topology/paths.h"
#include "topology/search.h"
#include "topology/system.h"

namespace loom::topology {

// Not copyable or movable: `paths` points into `system`. Hold it by unique_ptr.
struct TopologyResult {
  System system;
  PathTable paths;
  Graph ring;
  Graph tree;
  bool graphsFromFile = false;  // ring/tree were read from a graph file, not searched

  TopologyResult() = default;
  TopologyResult(const TopologyResult&) = delete;
  TopologyResult& operator=(const TopologyResult&) = delete;
};

struct TopologyRequest {
  std::string topoFile;       // empty: discover this host
  std::string topoDumpFile;   // empty: no dump
  std::string graphFile;      // empty: search
  std::string graphDumpFile;  // empty: no dump
  int nodes = 1;              // identical nodes the job spans (multi-node rings and trees)
  PathPolicy policy;

  // LOOM_TOPO_FILE, LOOM_TOPO_DUMP_FILE, LOOM_GRAPH_FILE, LOOM_GRAPH_DUMP_FILE, LOOM_P2P_LEVEL,
  // LOOM_NET_GDR_LEVEL.
  static TopologyRequest fromEnvironment();
};

// Throws loom::Error(loomInvalidArgument) naming the file when a file cannot be read or parsed.
std::unique_ptr<TopologyResult> analyzeTopology(const TopologyRequest& request);
// Same, on a model the caller already has (loom-topo with --file, tests).
std::unique_ptr<TopologyResult> analyzeSystem(System system, const TopologyRequest& request);

// One line per graph for logs: "ring: 8 channels x 24.0 GB/s, NVL/NVL; ch0 0 1 2 3 ..."
std::string describeGraph(const Graph& graph, int maxChannels = 4);

}  // namespace loom::topology
