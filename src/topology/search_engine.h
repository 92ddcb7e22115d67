// SPDX-License-Identifier: Apache-2.0
// The search machinery that rings and trees share (internal to topology/). A channel is a
// sequence of the node's GPUs (a ring closes it, a tree chain does not) that may enter and leave
// the node through Net ports. Every candidate channel is charged, at the speed being tried, to
// every directed link of every route it uses; a channel fits only where all those links still
// have room. The driver walks a speed ladder from fast to slow and, at each speed, path-type
// limits from best to worst, and keeps the set of channels with the best aggregate bandwidth.
#pragma once

#include <vector>

#include "topology/search.h"

namespace loom::topology::search_detail {

// How a channel uses the machine.
struct ChannelShape {
  Pattern pattern = Pattern::Ring;
  bool closeRing = true;     // ring (back to the first GPU, or out by a Net); tree: chain ends
  bool bothWays = false;     // tree: data goes up and down every hop of the chain
  int netGpus = 1;           // multi-node: GPUs at the head of the chain that talk to the Net
                             // (1: ring, TREE; 2: BALANCED_TREE shares the NIC traffic)
  bool rotateStart = false;  // tree: channels start at different GPUs (roots are spread)
};

// Runs the whole search for one shape: ladder of speeds, path-type limits, channel search with
// an iteration budget, then NCCL's channel duplication. Deterministic.
Graph searchGraph(const System& system, const PathTable& paths, const SearchOptions& options,
                  const ChannelShape& shape);

// Aggregate bandwidth of a graph: channels times per-channel bandwidth (the slower of intra and
// inter on multi-node graphs).
double aggregateBandwidth(const Graph& graph);

}  // namespace loom::topology::search_detail
