// SPDX-License-Identifier: Apache-2.0
// The inter-node double binary tree. A single binary tree leaves half the nodes as leaves that
// only ever send, so half the inbound bandwidth goes unused; a second tree whose inner nodes are
// exactly the first tree's leaves puts that bandwidth to work. Each tree carries half the data.
//
// Shape: the in-order binary tree over positions 1..n in which a position's lowest set bit is
// its height (odd positions are leaves, 2 and 6 sit above them, 4 above those, ...), cut to n
// nodes. Its inner nodes are the even positions. Rank r sits at position r + 1 in the first
// tree. In the second tree ranks are mirrored (r -> n - 1 - r) when n is even and shifted by one
// (r -> r + 1 mod n) when n is odd: both turn every inner rank of the first tree into a leaf.
// (Mirroring an odd count keeps the middle rank in place, so it cannot work there; shifting an
// odd count wraps n - 1 onto position 1, a leaf, so it does.)
#include "base/error.h"
#include "topology/search.h"

namespace loom::topology {
namespace {

int lowestBit(int position) { return position & -position; }

// Children of a 1-based position in the in-order tree cut to `count` positions. The left child
// always exists below a non-leaf; the right subtree may be partly cut off, in which case its
// highest surviving node (found by halving the step) takes its place.
std::vector<int> childPositions(int position, int count) {
  std::vector<int> children;
  int step = lowestBit(position) / 2;
  if (step == 0) return children;
  children.push_back(position - step);
  for (int right = step; right > 0; right /= 2) {
    if (position + right <= count) {
      children.push_back(position + right);
      break;
    }
  }
  return children;
}

// Fills one tree given where each rank sits (rankAt[position - 1] = rank).
TreeLinks buildTree(const std::vector<int>& rankAt) {
  const int count = static_cast<int>(rankAt.size());
  TreeLinks tree;
  tree.parent.assign(static_cast<size_t>(count), -1);
  tree.children.assign(static_cast<size_t>(count), {});
  for (int position = 1; position <= count; ++position) {
    const int rank = rankAt[static_cast<size_t>(position - 1)];
    for (int childPosition : childPositions(position, count)) {
      const int child = rankAt[static_cast<size_t>(childPosition - 1)];
      tree.children[static_cast<size_t>(rank)].push_back(child);
      tree.parent[static_cast<size_t>(child)] = rank;
    }
  }
  return tree;
}

}  // namespace

DoubleTree doubleBinaryTree(int nodes) {
  if (nodes < 1)
    throwArgument("doubleBinaryTree: need at least one node, got " + std::to_string(nodes));
  const auto count = static_cast<size_t>(nodes);
  std::vector<int> firstRankAt(count), secondRankAt(count);
  for (int rank = 0; rank < nodes; ++rank) {
    firstRankAt[static_cast<size_t>(rank)] = rank;
    const int secondPosition = (nodes % 2 == 0) ? nodes - 1 - rank : (rank + 1) % nodes;
    secondRankAt[static_cast<size_t>(secondPosition)] = rank;
  }
  return DoubleTree{buildTree(firstRankAt), buildTree(secondRankAt)};
}

}  // namespace loom::topology
