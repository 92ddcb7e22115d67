// SPDX-License-Identifier: Apache-2.0
// loom-topo's parts: the main program (loom_topo.cc) loads or discovers the machine and asks
// the topology engine for paths, rings and trees; the three writers render one result as
// text for people (loom_topo_print.cc), JSON for scripts (loom_topo_json.cc) and Graphviz for
// pictures (loom_topo_dot.cc).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "topology/topology_engine.h"

namespace loom::tools {

struct TopoView {
  const topology::TopologyResult& result;
  int nodes = 1;  // identical nodes the rings and trees span (--nodes)
  // GPUs per node for channelRanks: the model's GPUs, or, for a graph file shown on its own,
  // the highest GPU dev its channels name + 1 (0: no GPU anywhere).
  int gpusPerNode = 0;
};
int gpusPerNode(const topology::TopologyResult& result);

// The display hierarchy of the machine: CPUs at the top, PCI switches, GPUs and NICs below them
// by PCI links, a NIC's network ports below it. parent[i] is -1 for roots (CPUs, and anything
// no CPU reaches, such as the folded NVSwitch); children are in node index order.
struct DisplayTree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  std::vector<int> roots;
};
DisplayTree buildDisplayTree(const topology::System& system);

// Matrix rows/columns of the path table: GPUs, then NICs, then CPUs, each in node order.
std::vector<int> matrixNodes(const topology::System& system);
// GPUs per node for channelRanks (0 on a machine without GPUs).
int gpuCount(const topology::System& system);
// "12", "24.5": GB/s with at most three decimals, no trailing zeros (stable across runs).
std::string formatNumber(double value);

void printReport(std::ostream& out, const TopoView& view);
void writeJson(std::ostream& out, const TopoView& view);
// `maxRings`: how many of the ring graph's channels are drawn as coloured edges.
void writeDot(std::ostream& out, const TopoView& view, int maxRings = 4);

}  // namespace loom::tools
