// SPDX-License-Identifier: Apache-2.0
// Rings: every channel visits all GPUs of a node once and returns to the first (one node), or
// enters the node on a Net port, visits all GPUs and leaves on a Net port (several nodes; the
// rings of consecutive nodes chain through the network). The search itself is shared with
// trees (search_engine.cc); this file also holds the pattern names and the rank order of a
// channel across nodes.
#include "base/error.h"
#include "topology/search.h"
#include "topology/search_engine.h"

namespace loom::topology {

const char* patternName(Pattern pattern) {
  switch (pattern) {
    case Pattern::Ring:
      return "RING";
    case Pattern::Tree:
      return "TREE";
    case Pattern::SplitTree:
      return "SPLIT_TREE";
    case Pattern::BalancedTree:
      return "BALANCED_TREE";
  }
  return "RING";
}

// NCCL's numbering in graph XML files (NCCL_TOPO_PATTERN_*).
int patternNcclId(Pattern pattern) {
  switch (pattern) {
    case Pattern::BalancedTree:
      return 1;
    case Pattern::SplitTree:
      return 2;
    case Pattern::Tree:
      return 3;
    case Pattern::Ring:
      return 4;
  }
  return 4;
}

Graph searchRings(const System& system, const PathTable& paths, const SearchOptions& options) {
  search_detail::ChannelShape shape;
  shape.pattern = Pattern::Ring;
  shape.closeRing = true;
  return search_detail::searchGraph(system, paths, options, shape);
}

std::vector<int> channelRanks(const Graph& graph, int channel, int gpusPerNode, int nodes) {
  if (channel < 0 || channel >= static_cast<int>(graph.channels.size()))
    throwArgument("channelRanks: channel " + std::to_string(channel) + " of " +
                  std::to_string(graph.channels.size()));
  if (gpusPerNode < 1 || nodes < 1)
    throwArgument("channelRanks: need at least one GPU per node and one node");
  const auto& gpus = graph.channels[static_cast<size_t>(channel)].gpus;
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int dev : gpus) {
      if (dev < 0 || dev >= gpusPerNode)
        throwArgument("channelRanks: GPU dev " + std::to_string(dev) + " outside 0.." +
                      std::to_string(gpusPerNode - 1));
      ranks.push_back(node * gpusPerNode + dev);
    }
  }
  return ranks;
}

}  // namespace loom::topology
