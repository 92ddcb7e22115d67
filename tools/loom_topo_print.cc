// SPDX-License-Identifier: Apache-2.0
// loom-topo's text report: the machine as a tree, the path matrix, then rings and trees.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tools/loom_topo.h"
#include "topology/graph_xml.h"

namespace loom::tools {

using topology::Graph;
using topology::Link;
using topology::LinkType;
using topology::Node;
using topology::NodeType;
using topology::System;

namespace {

// Links that place a node under another in the picture: PCI (and C2C) from above, a NIC's
// network port below the NIC. NVLink and inter-socket links are drawn as cross links instead.
bool isTreeEdge(const System& system, int from, const Link& link) {
  const Node& target = system.node(link.to);
  if (target.type == NodeType::Cpu) return false;
  if (link.type == LinkType::Pci || link.type == LinkType::C2c) return target.type != NodeType::Net;
  return link.type == LinkType::Network && system.node(from).type == NodeType::Nic &&
         target.type == NodeType::Net;
}

std::string describeNode(const Node& node) {
  std::ostringstream out;
  out << node.label();
  switch (node.type) {
    case NodeType::Cpu: {
      out << "  numa " << node.cpu.numaId;
      std::string model = node.cpu.arch;
      if (!node.cpu.vendor.empty()) model += (model.empty() ? "" : " ") + node.cpu.vendor;
      if (!model.empty()) out << ", " << model;
      if (node.cpu.familyId >= 0) out << " family " << node.cpu.familyId;
      if (node.cpu.modelId >= 0) out << " model " << node.cpu.modelId;
      if (!node.cpu.affinity.empty()) out << ", cpus " << node.cpu.affinity;
      break;
    }
    case NodeType::Gpu:
      out << "  dev " << node.gpu.dev << ", rank " << node.gpu.rank;
      if (node.gpu.amd) {
        out << ", AMD " << (node.gpu.gcn.empty() ? "GPU" : node.gpu.gcn) << " (" << node.gpu.sm
            << " CUs)";
      } else if (node.gpu.sm > 0) {
        out << ", sm " << node.gpu.sm;
      }
      if (node.gpu.gdr) out << ", gdr";
      if (!node.pci.busId.empty() && node.label().find(node.pci.busId) == std::string::npos) {
        out << ", " << node.pci.busId;
      }
      break;
    case NodeType::Net:
      out << "  dev " << node.net.dev << ", port " << node.net.port;
      if (node.net.speedMbps > 0) out << ", " << formatNumber(node.net.speedMbps) << " Mb/s";
      if (node.net.gdr) out << ", gdr";
      break;
    case NodeType::NvSwitch:
      out << "  " << node.nvSwitchCount << " switch(es) folded";
      break;
    case NodeType::Pci:
    case NodeType::Nic:
      if (!node.pci.vendor.empty()) out << "  " << node.pci.vendor << ":" << node.pci.device;
      if (!node.pci.busId.empty() && node.label().find(node.pci.busId) == std::string::npos) {
        out << "  " << node.pci.busId;
      }
      break;
  }
  if (node.type != NodeType::Cpu && node.type != NodeType::Net && node.pci.linkWidth > 0) {
    out << ", " << node.pci.linkSpeed << " x" << node.pci.linkWidth;
  }
  return out.str();
}

std::string describeLink(const Link& link) {
  return std::string(topology::linkTypeName(link.type)) + " " + formatNumber(link.bandwidth) +
         " GB/s";
}

const Link* linkBetween(const System& system, int from, int to) {
  for (const Link& link : system.node(from).links) {
    if (link.to == to) return &link;
  }
  return nullptr;
}

void printSubtree(std::ostream& out, const System& system, const DisplayTree& tree, int index,
                  int depth) {
  const std::string indent(static_cast<size_t>(depth) * 2, ' ');
  out << indent << describeNode(system.node(index));
  const int parent = tree.parent[static_cast<size_t>(index)];
  if (parent >= 0) {
    if (const Link* up = linkBetween(system, parent, index))
      out << "  [" << describeLink(*up) << "]";
  }
  out << "\n";
  const auto& children = tree.children[static_cast<size_t>(index)];
  for (const Link& link : system.node(index).links) {
    const bool structural =
        link.to == parent || std::find(children.begin(), children.end(), link.to) != children.end();
    if (structural || link.to == index) continue;
    out << indent << "    ~ " << describeLink(link) << " -> " << system.node(link.to).label()
        << "\n";
  }
  for (int child : children) printSubtree(out, system, tree, child, depth + 1);
}

void printSystem(std::ostream& out, const System& system) {
  int counts[topology::kNodeTypeCount] = {};
  for (const Node& node : system.nodes()) ++counts[static_cast<int>(node.type)];
  out << "System (" << (system.source.empty() ? "unknown source" : system.source)
      << "): " << counts[static_cast<int>(NodeType::Cpu)] << " CPU, "
      << counts[static_cast<int>(NodeType::Gpu)] << " GPU, "
      << counts[static_cast<int>(NodeType::Nic)] << " NIC, "
      << counts[static_cast<int>(NodeType::Net)] << " NET, "
      << counts[static_cast<int>(NodeType::Pci)] << " PCI switch, "
      << counts[static_cast<int>(NodeType::NvSwitch)] << " NVSwitch node(s)\n";
  out << "  ([TYPE GB/s] is the link from the parent; '~' lines are other links)\n";
  const DisplayTree tree = buildDisplayTree(system);
  // A model replicated for several nodes repeats itself: show the first machine only.
  int hidden = 0;
  for (int root : tree.roots) {
    if (system.node(root).host == 0) {
      printSubtree(out, system, tree, root, 1);
    } else {
      ++hidden;
    }
  }
  if (hidden > 0) out << "  (" << hidden << " more top-level nodes on other machines not shown)\n";
}

std::string shortName(const System& system, int index) {
  const Node& node = system.node(index);
  switch (node.type) {
    case NodeType::Gpu:
      return "GPU" + std::to_string(node.gpu.dev);
    case NodeType::Cpu:
      return "CPU" + std::to_string(node.cpu.numaId);
    default:
      break;
  }
  const auto nics = system.nodesOfType(node.type);
  const auto position = std::find(nics.begin(), nics.end(), index) - nics.begin();
  return std::string(topology::nodeTypeName(node.type)) + std::to_string(position);
}

void printPathMatrix(std::ostream& out, const TopoView& view) {
  const System& system = view.result.system;
  const std::vector<int> nodes = matrixNodes(system);
  if (nodes.empty()) return;
  std::vector<std::string> names;
  size_t width = 6;
  for (int index : nodes) names.push_back(shortName(system, index));
  std::vector<std::vector<std::string>> cells(nodes.size());
  for (size_t row = 0; row < nodes.size(); ++row) {
    for (int column : nodes) {
      const topology::Path& path = view.result.paths.path(nodes[row], column);
      std::string cell = topology::pathTypeName(path.type);
      if (path.type != topology::PathType::Loc && path.type != topology::PathType::Dis) {
        cell += " " + formatNumber(path.bandwidth);
      }
      width = std::max(width, cell.size() + 2);
      cells[row].push_back(cell);
    }
  }
  // One line per row, cells padded to a common width, no trailing blanks.
  auto printRow = [&](const std::string& head, const std::vector<std::string>& row) {
    std::string line = head;
    line.resize(8, ' ');
    for (const auto& cell : row) line += cell + std::string(width - cell.size(), ' ');
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  out << "\nPaths (type and bottleneck GB/s, row -> column):\n";
  printRow("", names);
  for (size_t row = 0; row < nodes.size(); ++row) printRow(names[row], cells[row]);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = system.node(nodes[i]);
    if (node.type != NodeType::Nic) continue;
    out << "  " << names[i] << " = " << node.label();
    for (const Link& link : node.links) {
      const Node& port = system.node(link.to);
      if (port.type == NodeType::Net && port.host == node.host) out << " " << port.label();
    }
    out << "\n";
  }
  out << "  LOC self, NVL NVLink, NVB NVLink via a GPU, C2C chip-to-chip, PIX one PCI switch,\n"
         "  PXB several switches, PXN via a peer GPU, PHB CPU root complex, SYS across sockets\n";
}

void printGraph(std::ostream& out, const char* title, const Graph& graph, const TopoView& view) {
  const int gpus = view.gpusPerNode;
  if (gpus == 0 && graph.channels.empty()) {
    out << "\n"
        << title << ": none (no GPUs in this model; CPU ranks are ordered by socket and"
        << " NUMA node)\n";
    return;
  }
  out << "\n"
      << title << ": " << topology::patternName(graph.pattern) << ", " << graph.nChannels
      << " channel(s) x " << formatNumber(graph.bwIntra) << " GB/s";
  if (view.nodes > 1) out << " (inter-node " << formatNumber(graph.bwInter) << " GB/s)";
  out << ", typeIntra " << topology::pathTypeName(graph.typeIntra) << ", typeInter "
      << topology::pathTypeName(graph.typeInter) << (graph.crossNic ? ", crossNic" : "") << "\n";
  for (size_t c = 0; c < graph.channels.size(); ++c) {
    const auto& channel = graph.channels[c];
    out << "  channel " << c << ": ";
    if (channel.netIn >= 0) out << "NET " << channel.netIn << " > ";
    out << "GPU";
    for (int dev : channel.gpus) out << " " << dev;
    if (channel.netOut >= 0) out << " > NET " << channel.netOut;
    if (gpus > 0) {
      out << "   ranks";
      for (int rank : topology::channelRanks(graph, static_cast<int>(c), gpus, view.nodes)) {
        out << " " << rank;
      }
    }
    out << "\n";
  }
}

void printDoubleTree(std::ostream& out, int nodes) {
  if (nodes < 2) return;
  const topology::DoubleTree trees = topology::doubleBinaryTree(nodes);
  out << "  across nodes: double binary tree (parent of node 0..." << nodes - 1 << ", -1 root)\n";
  for (const auto* tree : {&trees.first, &trees.second}) {
    out << (tree == &trees.first ? "    tree 0:" : "    tree 1:");
    for (int parent : tree->parent) out << " " << parent;
    out << "\n";
  }
}

}  // namespace

std::string formatNumber(double value) { return topology::formatSpeed(value); }

int gpusPerNode(const topology::TopologyResult& result) {
  int count = gpuCount(result.system);
  if (count > 0) return count;
  for (const topology::Graph* graph : {&result.ring, &result.tree}) {
    for (const topology::Channel& channel : graph->channels) {
      for (int dev : channel.gpus) count = std::max(count, dev + 1);
    }
  }
  return count;
}

int gpuCount(const System& system) {
  int count = 0;
  for (const Node& node : system.nodes()) count += (node.type == NodeType::Gpu && node.host == 0);
  return count;
}

std::vector<int> matrixNodes(const System& system) {
  std::vector<int> nodes;
  for (NodeType type : {NodeType::Gpu, NodeType::Nic, NodeType::Cpu}) {
    for (int index : system.nodesOfType(type)) {
      if (system.node(index).host == 0) nodes.push_back(index);
    }
  }
  return nodes;
}

DisplayTree buildDisplayTree(const System& system) {
  const auto count = static_cast<size_t>(system.size());
  DisplayTree tree;
  tree.parent.assign(count, -1);
  tree.children.assign(count, {});
  std::vector<char> placed(count, 0);
  // Depth first from each CPU in order; a node joins the first CPU that reaches it.
  auto adopt = [&](auto& self, int index) -> void {
    std::vector<int> found;
    for (const Link& link : system.node(index).links) {
      if (!placed[static_cast<size_t>(link.to)] && isTreeEdge(system, index, link)) {
        placed[static_cast<size_t>(link.to)] = 1;
        found.push_back(link.to);
      }
    }
    std::sort(found.begin(), found.end());
    for (int child : found) {
      tree.parent[static_cast<size_t>(child)] = index;
      tree.children[static_cast<size_t>(index)].push_back(child);
      self(self, child);
    }
  };
  const std::vector<int> cpus = system.nodesOfType(NodeType::Cpu);
  for (int cpu : cpus) placed[static_cast<size_t>(cpu)] = 1;
  for (int cpu : cpus) {
    tree.roots.push_back(cpu);
    adopt(adopt, cpu);
  }
  // What no CPU reaches (the folded NVSwitch, a model without CPUs) stands on its own.
  for (int index = 0; index < system.size(); ++index) {
    if (placed[static_cast<size_t>(index)]) continue;
    placed[static_cast<size_t>(index)] = 1;
    tree.roots.push_back(index);
    adopt(adopt, index);
  }
  return tree;
}

void printReport(std::ostream& out, const TopoView& view) {
  printSystem(out, view.result.system);
  printPathMatrix(out, view);
  const char* origin = view.result.graphsFromFile ? " (from graph file)" : "";
  printGraph(out, (std::string("Rings") + origin).c_str(), view.result.ring, view);
  printGraph(out, (std::string("Trees") + origin).c_str(), view.result.tree, view);
  printDoubleTree(out, view.nodes);
}

}  // namespace loom::tools
