// SPDX-License-Identifier: Apache-2.0
// Graph search: rings and trees over a System's GPUs (and its network ports when the job spans
// several nodes). A result is NCCL's "graph": a number of channels, each an order of GPUs, the
// bandwidth every channel gets, and the worst path type used inside and between nodes. The
// search is deterministic and bounded in time; it charges each channel's bandwidth to every
// link the channel crosses, so channels that share a link split it.
#pragma once

#include <string>
#include <vector>

#include "topology/paths.h"
#include "topology/system.h"

namespace loom::topology {

enum class Pattern : uint8_t { Ring, Tree, SplitTree, BalancedTree };
const char* patternName(Pattern pattern);  // "RING", "TREE", "SPLIT_TREE", "BALANCED_TREE"
int patternNcclId(Pattern pattern);        // NCCL's numeric pattern in graph XML (4, 3, 2, 1)

struct Channel {
  std::vector<int> gpus;  // GPU `dev` order within one node (tree: the intra-node chain)
  int netIn = -1;         // multi-node: net `dev` the channel enters by, -1 on one node
  int netOut = -1;        // multi-node: net `dev` the channel leaves by
};

struct Graph {
  int id = 0;  // 0 ring, 1 tree (NCCL's graph ids)
  Pattern pattern = Pattern::Ring;
  bool crossNic = false;
  int nChannels = 0;
  double bwIntra = 0;  // GB/s per channel inside a node
  double bwInter = 0;  // GB/s per channel across nodes (== bwIntra on one node)
  PathType typeIntra = PathType::Loc;
  PathType typeInter = PathType::Loc;
  bool sameChannels = false;
  std::vector<Channel> channels;
};

struct SearchOptions {
  int nodes = 1;          // > 1: channels enter and leave each node through its Net nodes
  int minChannels = 1;
  int maxChannels = 32;
  int crossNic = 2;       // 0 never, 1 allowed, 2 only when it helps (NCCL_CROSS_NIC)
  // A backstop only: the iteration budget bounds the search and makes it deterministic (well
  // under 1 s in a release build). The guard must sit far above that, or a slow build
  // (sanitizers) or a loaded machine ends searches early and ranks disagree on the result.
  double timeLimitSeconds = 10.0;
};

Graph searchRings(const System& system, const PathTable& paths, const SearchOptions& options);
Graph searchTrees(const System& system, const PathTable& paths, const SearchOptions& options);

// Rank order of one channel across `nodes` identical nodes: node-major, GPU order within each
// node as in the channel (rank = node * gpusPerNode + position of the GPU's dev).
std::vector<int> channelRanks(const Graph& graph, int channel, int gpusPerNode, int nodes);

// Inter-node double binary tree over `nodes` nodes (NCCL's two complementary trees: no node is
// an inner node in both). Parent -1 marks a root; children are listed per node.
struct TreeLinks {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};
struct DoubleTree {
  TreeLinks first, second;
};
DoubleTree doubleBinaryTree(int nodes);

}  // namespace loom::topology
