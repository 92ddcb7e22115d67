// SPDX-License-Identifier: Apache-2.0
// loom-topo --json: one object {"system", "paths", "ring", "tree"} (schema in README). Output
// is deterministic: nodes, links and matrix rows come in model order and numbers are rounded to
// three decimals, so two runs on the same input give the same bytes.
#include <algorithm>
#include <cstdio>
#include <string>

#include "tools/loom_topo.h"

namespace loom::tools {

using topology::Graph;
using topology::Node;
using topology::NodeType;
using topology::System;

namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Builds one JSON object's members: key/value pairs joined by commas.
class Members {
 public:
  Members& add(const std::string& key, const std::string& rawJson) {
    text_ += (text_.empty() ? "" : ",") + quote(key) + ":" + rawJson;
    return *this;
  }
  Members& str(const std::string& key, const std::string& value) { return add(key, quote(value)); }
  Members& num(const std::string& key, double value) { return add(key, formatNumber(value)); }
  Members& integer(const std::string& key, long long value) {
    return add(key, std::to_string(value));
  }
  Members& flag(const std::string& key, bool value) { return add(key, value ? "true" : "false"); }
  std::string object() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

template <typename T, typename Render>
std::string array(const std::vector<T>& items, Render render) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + render(items[i]);
  return out + "]";
}

std::string intArray(const std::vector<int>& values) {
  return array(values, [](int value) { return std::to_string(value); });
}

std::string nodeJson(const System& system, int index, int parent) {
  const Node& node = system.node(index);
  Members m;
  m.integer("id", index).str("type", topology::nodeTypeName(node.type)).str("label", node.label());
  m.integer("host", node.host).integer("parent", parent);
  switch (node.type) {
    case NodeType::Cpu:
      m.integer("numaId", node.cpu.numaId)
          .str("arch", node.cpu.arch)
          .str("vendor", node.cpu.vendor);
      m.integer("familyId", node.cpu.familyId).integer("modelId", node.cpu.modelId);
      m.str("affinity", node.cpu.affinity);
      return m.object();
    case NodeType::Net: {
      char guid[32];
      std::snprintf(guid, sizeof guid, "0x%llx", static_cast<unsigned long long>(node.net.guid));
      m.str("name", node.net.name)
          .integer("dev", node.net.dev)
          .num("speedMbps", node.net.speedMbps);
      m.integer("port", node.net.port).str("guid", guid).integer("maxConn", node.net.maxConn);
      m.integer("latencyUs", node.net.latencyUs)
          .flag("gdr", node.net.gdr)
          .flag("coll", node.net.coll);
      return m.object();
    }
    case NodeType::Gpu:
      m.integer("dev", node.gpu.dev).integer("rank", node.gpu.rank).integer("sm", node.gpu.sm);
      m.str("gcn", node.gpu.gcn).integer("arch", node.gpu.arch).flag("gdr", node.gpu.gdr);
      m.flag("amd", node.gpu.amd);
      break;
    case NodeType::NvSwitch:
      m.integer("nvSwitchCount", node.nvSwitchCount);
      break;
    case NodeType::Pci:
    case NodeType::Nic:
      break;
  }
  m.str("busId", node.pci.busId).str("class", node.pci.pciClass).str("vendor", node.pci.vendor);
  m.str("device", node.pci.device).str("linkSpeed", node.pci.linkSpeed);
  m.integer("linkWidth", node.pci.linkWidth);
  return m.object();
}

std::string systemJson(const System& system) {
  const DisplayTree tree = buildDisplayTree(system);
  std::vector<std::string> nodes, links;
  for (int index = 0; index < system.size(); ++index) {
    nodes.push_back(nodeJson(system, index, tree.parent[static_cast<size_t>(index)]));
    for (const topology::Link& link : system.node(index).links) {
      links.push_back(Members()
                          .integer("from", index)
                          .integer("to", link.to)
                          .str("type", topology::linkTypeName(link.type))
                          .num("bw", link.bandwidth)
                          .object());
    }
  }
  auto raw = [](const std::string& item) { return item; };
  return Members()
      .str("source", system.source)
      .integer("version", system.version)
      .str("hostHash", system.hostHash)
      .add("nodes", array(nodes, raw))
      .add("links", array(links, raw))
      .object();
}

std::string pathsJson(const TopoView& view) {
  const System& system = view.result.system;
  const std::vector<int> nodes = matrixNodes(system);
  std::vector<std::string> labels, typeRows, bwRows;
  for (int from : nodes) {
    labels.push_back(quote(system.node(from).label()));
    std::vector<std::string> types, bws;
    for (int to : nodes) {
      const topology::Path& path = view.result.paths.path(from, to);
      types.push_back(quote(topology::pathTypeName(path.type)));
      bws.push_back(formatNumber(path.bandwidth));
    }
    auto raw = [](const std::string& item) { return item; };
    typeRows.push_back(array(types, raw));
    bwRows.push_back(array(bws, raw));
  }
  auto raw = [](const std::string& item) { return item; };
  return Members()
      .add("nodes", intArray(nodes))
      .add("labels", array(labels, raw))
      .add("type", array(typeRows, raw))
      .add("bw", array(bwRows, raw))
      .object();
}

std::string treeLinksJson(const topology::TreeLinks& tree) {
  return Members()
      .add("parent", intArray(tree.parent))
      .add("children", array(tree.children, intArray))
      .object();
}

std::string graphJson(const Graph& graph, const TopoView& view, bool withDoubleTree) {
  const int gpus = view.gpusPerNode;
  std::vector<std::vector<int>> ranks, devs;
  std::vector<int> netIn, netOut;
  for (size_t c = 0; c < graph.channels.size(); ++c) {
    ranks.push_back(gpus > 0 ? topology::channelRanks(graph, static_cast<int>(c), gpus, view.nodes)
                             : std::vector<int>{});
    devs.push_back(graph.channels[c].gpus);
    netIn.push_back(graph.channels[c].netIn);
    netOut.push_back(graph.channels[c].netOut);
  }
  // What one channel really gets: across nodes the slower of its two legs.
  const double perChannel = view.nodes > 1 ? std::min(graph.bwIntra, graph.bwInter) : graph.bwIntra;
  Members m;
  m.str("pattern", topology::patternName(graph.pattern)).integer("nChannels", graph.nChannels);
  m.num("bwPerChannel", perChannel).num("bwIntra", graph.bwIntra).num("bwInter", graph.bwInter);
  m.str("typeIntra", topology::pathTypeName(graph.typeIntra));
  m.str("typeInter", topology::pathTypeName(graph.typeInter));
  m.flag("crossNic", graph.crossNic).flag("sameChannels", graph.sameChannels);
  m.integer("nodes", view.nodes).integer("gpusPerNode", gpus);
  m.flag("fromFile", view.result.graphsFromFile);
  m.add("channels", array(ranks, intArray)).add("gpus", array(devs, intArray));
  m.add("netIn", intArray(netIn)).add("netOut", intArray(netOut));
  if (withDoubleTree) {
    if (view.nodes > 1) {
      const topology::DoubleTree trees = topology::doubleBinaryTree(view.nodes);
      m.add("doubleTree", Members()
                              .add("first", treeLinksJson(trees.first))
                              .add("second", treeLinksJson(trees.second))
                              .object());
    } else {
      m.add("doubleTree", "null");
    }
  }
  return m.object();
}

}  // namespace

void writeJson(std::ostream& out, const TopoView& view) {
  out << Members()
             .add("system", systemJson(view.result.system))
             .add("paths", pathsJson(view))
             .add("ring", graphJson(view.result.ring, view, false))
             .add("tree", graphJson(view.result.tree, view, true))
             .object()
      << "\n";
}

}  // namespace loom::tools
