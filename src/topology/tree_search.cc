// SPDX-License-Identifier: Apache-2.0
// Trees. Inside a node a tree is a chain of the node's GPUs (data goes up the chain for the
// reduce and down for the broadcast, so every hop is charged in both directions); across nodes
// the chain heads form NCCL's double binary tree (doubleBinaryTree, double_tree.cc), reached
// through the NIC nearest to the head. With several nodes a BALANCED_TREE, which lets the
// second GPU of the chain carry half of the NIC traffic, is kept when it gives more bandwidth
// than the plain TREE (it helps where one GPU's PCI link to the NIC is the bottleneck).
#include "topology/search.h"
#include "topology/search_engine.h"

namespace loom::topology {

Graph searchTrees(const System& system, const PathTable& paths, const SearchOptions& options) {
  search_detail::ChannelShape shape;
  shape.pattern = Pattern::Tree;
  shape.closeRing = false;
  shape.bothWays = true;
  shape.rotateStart = true;
  shape.netGpus = 1;
  Graph tree = search_detail::searchGraph(system, paths, options, shape);
  if (options.nodes <= 1 || tree.channels.empty() || tree.channels.front().gpus.size() < 2)
    return tree;

  shape.pattern = Pattern::BalancedTree;
  shape.netGpus = 2;
  Graph balanced = search_detail::searchGraph(system, paths, options, shape);
  const double treeBandwidth = search_detail::aggregateBandwidth(tree);
  const double balancedBandwidth = search_detail::aggregateBandwidth(balanced);
  if (balanced.nChannels > 0 && balancedBandwidth > treeBandwidth * (1 + 1e-9)) return balanced;
  return tree;
}

}  // namespace loom::topology
