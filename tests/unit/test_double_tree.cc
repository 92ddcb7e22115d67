// SPDX-License-Identifier: Apache-2.0
// The inter-node double binary tree (search.h doubleBinaryTree): for 1..64 nodes both trees are
// proper binary trees over every node, no node is inner in both, even counts use every node as
// an inner node once, and the first tree is in order and shallow.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "topology/search.h"

namespace loom::test {
namespace {

void checkTreeShape(const topology::TreeLinks& tree, int nodes, const std::string& what) {
  const auto count = static_cast<size_t>(nodes);
  ASSERT_EQ(tree.parent.size(), count) << what;
  ASSERT_EQ(tree.children.size(), count) << what;
  ASSERT_EQ(std::count(tree.parent.begin(), tree.parent.end(), -1), 1) << what << ": one root";
  const auto root = std::find(tree.parent.begin(), tree.parent.end(), -1) - tree.parent.begin();
  // Walk down from the root (bounded, in case of a cycle): every node is met exactly once, has
  // at most two children, and each child names it as its parent.
  std::vector<int> seen(count, 0), stack{static_cast<int>(root)};
  for (int visits = 0; !stack.empty() && visits <= 2 * nodes; ++visits) {
    const int node = stack.back();
    stack.pop_back();
    ++seen[static_cast<size_t>(node)];
    const auto& children = tree.children[static_cast<size_t>(node)];
    EXPECT_LE(children.size(), 2u) << what << " node " << node;
    for (int child : children) {
      ASSERT_TRUE(child >= 0 && child < nodes) << what << " child " << child;
      EXPECT_EQ(tree.parent[static_cast<size_t>(child)], node) << what << " child " << child;
      stack.push_back(child);
    }
  }
  EXPECT_EQ(seen, std::vector<int>(count, 1)) << what;
}

TEST(DoubleBinaryTree, ComplementaryForOneToSixtyFourNodes) {
  for (int nodes = 1; nodes <= 64; ++nodes) {
    const topology::DoubleTree trees = topology::doubleBinaryTree(nodes);
    const std::string what = "n=" + std::to_string(nodes);
    checkTreeShape(trees.first, nodes, what + " first");
    checkTreeShape(trees.second, nodes, what + " second");
    int innerSomewhere = 0;
    for (int node = 0; node < nodes; ++node) {
      const bool innerFirst = !trees.first.children[static_cast<size_t>(node)].empty();
      const bool innerSecond = !trees.second.children[static_cast<size_t>(node)].empty();
      EXPECT_FALSE(innerFirst && innerSecond) << what << ": node " << node << " inner twice";
      innerSomewhere += innerFirst || innerSecond;
    }
    // Even counts use every node as an inner node exactly once: all inbound bandwidth works.
    if (nodes % 2 == 0) {
      EXPECT_EQ(innerSomewhere, nodes) << what;
    }
  }
}

TEST(DoubleBinaryTree, FirstTreeIsInOrderAndShallow) {
  for (int nodes = 1; nodes <= 64; ++nodes) {
    const topology::TreeLinks tree = topology::doubleBinaryTree(nodes).first;
    for (int node = 0; node < nodes; ++node) {
      const auto& children = tree.children[static_cast<size_t>(node)];
      if (!children.empty()) {
        EXPECT_LT(children.front(), node) << nodes;
      }
      if (children.size() == 2) {
        EXPECT_GT(children.back(), node) << nodes;
      }
      int depth = 0;
      for (int up = node; tree.parent[static_cast<size_t>(up)] != -1;
           up = tree.parent[static_cast<size_t>(up)])
        ++depth;
      EXPECT_LE(1 << depth, 2 * nodes) << "depth " << depth << " for n=" << nodes;
    }
  }
  EXPECT_THROW(topology::doubleBinaryTree(0), loom::Error);
}

}  // namespace
}  // namespace loom::test
