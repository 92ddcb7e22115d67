// SPDX-License-Identifier: Apache-2.0
// loom-topo --dot: a Graphviz digraph of the machine. Each CPU is a cluster holding what hangs
// under it; every pair of linked nodes gets one edge labelled with type and GB/s (both
// directions, or two edges when the directions differ); the first rings are drawn on top as
// coloured, numbered edges that do not move the layout (constraint=false).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tools/loom_topo.h"

namespace loom::tools {

using topology::Link;
using topology::Node;
using topology::NodeType;
using topology::System;

namespace {

const char* const kRingColours[] = {"red",    "blue",  "darkgreen", "darkorange",
                                    "purple", "brown", "deeppink",  "cyan4"};

std::string dotId(int index) { return "n" + std::to_string(index); }

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

const char* shapeOf(NodeType type) {
  switch (type) {
    case NodeType::Cpu:
      return "box3d";
    case NodeType::Gpu:
      return "box";
    case NodeType::Pci:
      return "ellipse";
    case NodeType::NvSwitch:
      return "hexagon";
    case NodeType::Nic:
      return "component";
    case NodeType::Net:
      return "oval";
  }
  return "ellipse";
}

void writeNode(std::ostream& out, const System& system, int index, const std::string& indent) {
  const Node& node = system.node(index);
  // Escaped first; the Graphviz line breaks (backslash n) are appended afterwards.
  std::string label = escape(node.label());
  if (node.type == NodeType::Gpu && node.gpu.sm > 0) {
    label += node.gpu.amd ? "\\n" + std::to_string(node.gpu.sm) + " CUs"
                          : "\\nsm " + std::to_string(node.gpu.sm);
  }
  if (node.type == NodeType::Net && node.net.speedMbps > 0) {
    label += "\\n" + formatNumber(node.net.speedMbps / 1000) + " Gb/s";
  }
  out << indent << dotId(index) << " [label=\"" << label << "\", shape=" << shapeOf(node.type)
      << (node.type == NodeType::Gpu ? ", style=filled, fillcolor=palegreen" : "") << "];\n";
}

void writeClusters(std::ostream& out, const System& system, const DisplayTree& tree) {
  auto writeSubtree = [&](auto& self, int index, const std::string& indent) -> void {
    writeNode(out, system, index, indent);
    for (int child : tree.children[static_cast<size_t>(index)]) self(self, child, indent);
  };
  for (int root : tree.roots) {
    const Node& node = system.node(root);
    if (node.host != 0) continue;  // a model replicated for --nodes: draw the first machine
    if (node.type != NodeType::Cpu) {
      writeSubtree(writeSubtree, root, "  ");
      continue;
    }
    out << "  subgraph cluster_" << dotId(root) << " {\n    label=\"" << escape(node.label())
        << " (NUMA " << node.cpu.numaId << ")\";\n    style=rounded;\n";
    writeSubtree(writeSubtree, root, "    ");
    out << "  }\n";
  }
}

std::string edgeLabel(const Link& link) {
  return std::string(topology::linkTypeName(link.type)) + " " + formatNumber(link.bandwidth);
}

void writeLinks(std::ostream& out, const System& system) {
  for (int from = 0; from < system.size(); ++from) {
    for (const Link& link : system.node(from).links) {
      if (link.to == from || system.node(from).host != 0 || system.node(link.to).host != 0) {
        continue;
      }
      const Link* back = nullptr;
      for (const Link& candidate : system.node(link.to).links) {
        if (candidate.to == from && candidate.type == link.type) back = &candidate;
      }
      const bool symmetric = back && back->bandwidth == link.bandwidth;
      // A symmetric pair is drawn once, from the lower index; anything else edge by edge.
      if (symmetric && link.to < from) continue;
      out << "  " << dotId(from) << " -> " << dotId(link.to) << " [label=\"" << edgeLabel(link)
          << "\"" << (symmetric ? ", dir=both" : "")
          << (link.type == topology::LinkType::NvLink ? ", color=darkgreen" : "") << "];\n";
    }
  }
}

int findNet(const System& system, int dev) {
  for (int index : system.nodesOfType(NodeType::Net)) {
    if (system.node(index).net.dev == dev && system.node(index).host == 0) return index;
  }
  return -1;
}

void writeRings(std::ostream& out, const System& system, const topology::Graph& ring,
                int maxRings) {
  const size_t drawn = std::min(ring.channels.size(), static_cast<size_t>(std::max(maxRings, 0)));
  for (size_t c = 0; c < drawn; ++c) {
    const topology::Channel& channel = ring.channels[c];
    std::vector<int> order;
    for (int dev : channel.gpus) order.push_back(system.findGpuByDev(dev));
    const int netIn = channel.netIn >= 0 ? findNet(system, channel.netIn) : -1;
    const int netOut = channel.netOut >= 0 ? findNet(system, channel.netOut) : -1;
    std::vector<std::pair<int, int>> hops;
    if (netIn >= 0 && !order.empty()) hops.emplace_back(netIn, order.front());
    for (size_t i = 0; i + 1 < order.size(); ++i) hops.emplace_back(order[i], order[i + 1]);
    if (netOut >= 0 && !order.empty()) {
      hops.emplace_back(order.back(), netOut);
    } else if (order.size() > 1 && netIn < 0) {
      hops.emplace_back(order.back(), order.front());  // one node: the ring closes on itself
    }
    const char* colour = kRingColours[c % (sizeof kRingColours / sizeof kRingColours[0])];
    for (const auto& [from, to] : hops) {
      if (from < 0 || to < 0) continue;
      out << "  " << dotId(from) << " -> " << dotId(to) << " [color=" << colour
          << ", fontcolor=" << colour << ", penwidth=2, style=bold, constraint=false, label=\"ring "
          << c << "\"];\n";
    }
  }
}

}  // namespace

void writeDot(std::ostream& out, const TopoView& view, int maxRings) {
  const System& system = view.result.system;
  out << "digraph loom_topology {\n"
      << "  graph [label=\"" << escape(system.source.empty() ? "loom-topo" : system.source)
      << ": links labelled TYPE GB/s; coloured edges are the first rings\", labelloc=t, "
         "compound=true, rankdir=TB];\n"
      << "  node [fontsize=10];\n  edge [fontsize=8];\n";
  writeClusters(out, system, buildDisplayTree(system));
  writeLinks(out, system);
  writeRings(out, system, view.result.ring, maxRings);
  out << "}\n";
}

}  // namespace loom::tools
