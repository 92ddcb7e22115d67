// SPDX-License-Identifier: Apache-2.0
// The machine model's small helpers: names, lookups, link bookkeeping and structural compare.
#include "topology/system.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.h"

namespace loom::topology {

const char* nodeTypeName(NodeType type) {
  switch (type) {
    case NodeType::Gpu:
      return "GPU";
    case NodeType::Pci:
      return "PCI";
    case NodeType::NvSwitch:
      return "NVS";
    case NodeType::Cpu:
      return "CPU";
    case NodeType::Nic:
      return "NIC";
    case NodeType::Net:
      return "NET";
  }
  return "?";
}

const char* linkTypeName(LinkType type) {
  switch (type) {
    case LinkType::Loc:
      return "LOC";
    case LinkType::NvLink:
      return "NVL";
    case LinkType::C2c:
      return "C2C";
    case LinkType::Pci:
      return "PCI";
    case LinkType::InterSocket:
      return "SYS";
    case LinkType::Network:
      return "NET";
  }
  return "?";
}

std::string Node::label() const {
  std::string label = std::string(nodeTypeName(type)) + "/";
  switch (type) {
    case NodeType::Gpu:
      label += std::to_string(gpu.dev);
      break;
    case NodeType::Cpu:
      label += std::to_string(cpu.numaId);
      break;
    case NodeType::Net:
      label += net.name.empty() ? std::to_string(net.dev) : net.name;
      break;
    case NodeType::NvSwitch:
      label += pci.busId.empty() ? "0" : pci.busId;
      break;
    case NodeType::Pci:
    case NodeType::Nic:
      label += pci.busId.empty() ? "-" : pci.busId;
      break;
  }
  // Replicated machines (--nodes) share bus ids and device numbers: say which machine.
  if (host != 0) label += "@" + std::to_string(host);
  return label;
}

int System::addNode(Node node) {
  nodes_.push_back(std::move(node));
  return size() - 1;
}

int System::addNvSwitch(const std::string& busId) {
  Node nvSwitch;
  nvSwitch.type = NodeType::NvSwitch;
  nvSwitch.pci.busId = busId;
  nvSwitch.pci.pciClass = "0x068000";  // PCI bridge, as NCCL writes NVSwitches
  return addNode(std::move(nvSwitch));
}

void System::addLink(int from, int to, LinkType type, double bandwidth) {
  if (from < 0 || from >= size() || to < 0 || to >= size()) {
    throwInternal("System::addLink: node index out of range (" + std::to_string(from) + " -> " +
                  std::to_string(to) + " of " + std::to_string(size()) + ")");
  }
  for (Link& link : node(from).links) {
    if (link.to == to && link.type == type) {
      link.bandwidth += bandwidth;
      return;
    }
  }
  node(from).links.push_back(Link{to, type, bandwidth});
}

void System::connect(int a, int b, LinkType type, double bandwidth) {
  addLink(a, b, type, bandwidth);
  addLink(b, a, type, bandwidth);
}

std::vector<int> System::nodesOfType(NodeType type) const {
  std::vector<int> result;
  for (int i = 0; i < size(); ++i) {
    if (nodes_[static_cast<size_t>(i)].type == type) result.push_back(i);
  }
  return result;
}

int System::findByBusId(const std::string& busId) const {
  if (busId.empty()) return -1;
  for (int i = 0; i < size(); ++i) {
    if (nodes_[static_cast<size_t>(i)].pci.busId == busId) return i;
  }
  return -1;
}

int System::findGpuByDev(int dev, int host) const {
  for (int i = 0; i < size(); ++i) {
    const Node& n = nodes_[static_cast<size_t>(i)];
    if (n.type == NodeType::Gpu && n.host == host && n.gpu.dev == dev) return i;
  }
  return -1;
}

int System::findCpuByNuma(int numaId, int host) const {
  for (int i = 0; i < size(); ++i) {
    const Node& n = nodes_[static_cast<size_t>(i)];
    if (n.type == NodeType::Cpu && n.host == host && n.cpu.numaId == numaId) return i;
  }
  return -1;
}

int System::parentCpu(int index) const {
  // The PCI tree has no stored direction: walk PCI links breadth first from the node, never
  // through another GPU/NIC/NET endpoint, and return the first CPU met. On a tree this is the
  // CPU the node hangs under.
  if (index < 0 || index >= size()) return -1;
  if (node(index).type == NodeType::Cpu) return index;
  std::vector<char> seen(static_cast<size_t>(size()), 0);
  std::vector<int> frontier{index};
  seen[static_cast<size_t>(index)] = 1;
  for (size_t head = 0; head < frontier.size(); ++head) {
    const int current = frontier[head];
    for (const Link& link : node(current).links) {
      if (link.type != LinkType::Pci || seen[static_cast<size_t>(link.to)]) continue;
      seen[static_cast<size_t>(link.to)] = 1;
      const Node& next = node(link.to);
      if (next.type == NodeType::Cpu) return link.to;
      if (next.type == NodeType::Pci) frontier.push_back(link.to);
    }
  }
  return -1;
}

namespace {

// Collects the first difference; later checks are skipped once one is found.
class Differ {
 public:
  template <typename T>
  void check(const std::string& what, const T& a, const T& b) {
    if (!first_.empty() || a == b) return;
    std::ostringstream text;
    text << what << ": " << a << " != " << b;
    first_ = text.str();
  }
  void checkBandwidth(const std::string& what, double a, double b) {
    if (!first_.empty()) return;
    // Written as decimal text and read back: allow the last bits of a double to differ.
    if (std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b))) return;
    std::ostringstream text;
    text.precision(17);
    text << what << ": " << a << " != " << b;
    first_ = text.str();
  }
  void fail(const std::string& message) {
    if (first_.empty()) first_ = message;
  }
  bool found() const { return !first_.empty(); }
  const std::string& text() const { return first_; }

 private:
  std::string first_;
};

std::string describeExtra(const std::map<std::string, std::map<std::string, std::string>>& extra) {
  std::string text;
  for (const auto& [element, attributes] : extra) {
    for (const auto& [name, value] : attributes) text += element + "." + name + "=" + value + " ";
  }
  return text.empty() ? "(none)" : text;
}

void compareNode(Differ& d, const std::string& at, const Node& a, const Node& b) {
  d.check(at + " type", std::string(nodeTypeName(a.type)), std::string(nodeTypeName(b.type)));
  d.check(at + " host", a.host, b.host);
  d.check(at + " cpu.numaId", a.cpu.numaId, b.cpu.numaId);
  d.check(at + " cpu.arch", a.cpu.arch, b.cpu.arch);
  d.check(at + " cpu.vendor", a.cpu.vendor, b.cpu.vendor);
  d.check(at + " cpu.familyId", a.cpu.familyId, b.cpu.familyId);
  d.check(at + " cpu.modelId", a.cpu.modelId, b.cpu.modelId);
  d.check(at + " cpu.affinity", a.cpu.affinity, b.cpu.affinity);
  d.check(at + " pci.busId", a.pci.busId, b.pci.busId);
  d.check(at + " pci.class", a.pci.pciClass, b.pci.pciClass);
  d.check(at + " pci.vendor", a.pci.vendor, b.pci.vendor);
  d.check(at + " pci.device", a.pci.device, b.pci.device);
  d.check(at + " pci.subsystemVendor", a.pci.subsystemVendor, b.pci.subsystemVendor);
  d.check(at + " pci.subsystemDevice", a.pci.subsystemDevice, b.pci.subsystemDevice);
  d.check(at + " pci.linkSpeed", a.pci.linkSpeed, b.pci.linkSpeed);
  d.check(at + " pci.linkWidth", a.pci.linkWidth, b.pci.linkWidth);
  d.check(at + " gpu.dev", a.gpu.dev, b.gpu.dev);
  d.check(at + " gpu.rank", a.gpu.rank, b.gpu.rank);
  d.check(at + " gpu.sm", a.gpu.sm, b.gpu.sm);
  d.check(at + " gpu.gcn", a.gpu.gcn, b.gpu.gcn);
  d.check(at + " gpu.arch", a.gpu.arch, b.gpu.arch);
  d.check(at + " gpu.gdr", a.gpu.gdr, b.gpu.gdr);
  d.check(at + " gpu.amd", a.gpu.amd, b.gpu.amd);
  d.check(at + " net.name", a.net.name, b.net.name);
  d.check(at + " net.dev", a.net.dev, b.net.dev);
  d.checkBandwidth(at + " net.speedMbps", a.net.speedMbps, b.net.speedMbps);
  d.check(at + " net.port", a.net.port, b.net.port);
  d.check(at + " net.guid", a.net.guid, b.net.guid);
  d.check(at + " net.maxConn", a.net.maxConn, b.net.maxConn);
  d.check(at + " net.latencyUs", a.net.latencyUs, b.net.latencyUs);
  d.check(at + " net.gdr", a.net.gdr, b.net.gdr);
  d.check(at + " net.coll", a.net.coll, b.net.coll);
  d.check(at + " nvSwitchCount", a.nvSwitchCount, b.nvSwitchCount);
  if (!d.found() && a.extra != b.extra) {
    d.fail(at + " extra attributes: " + describeExtra(a.extra) + " != " + describeExtra(b.extra));
  }
}

}  // namespace

std::string compareSystems(const System& a, const System& b) {
  Differ d;
  d.check("system version", a.version, b.version);
  d.check("system host_hash", a.hostHash, b.hostHash);
  d.check("node count", a.size(), b.size());
  for (int i = 0; i < a.size() && i < b.size() && !d.found(); ++i) {
    const Node& na = a.node(i);
    const Node& nb = b.node(i);
    const std::string at = "node " + std::to_string(i) + " (" + na.label() + ")";
    compareNode(d, at, na, nb);
    d.check(at + " link count", na.links.size(), nb.links.size());
    for (size_t l = 0; l < na.links.size() && l < nb.links.size() && !d.found(); ++l) {
      const Link& la = na.links[l];
      const Link& lb = nb.links[l];
      const std::string linkAt = at + " link " + std::to_string(l);
      d.check(linkAt + " target", la.to, lb.to);
      d.check(linkAt + " type", std::string(linkTypeName(la.type)),
              std::string(linkTypeName(lb.type)));
      d.checkBandwidth(linkAt + " bandwidth", la.bandwidth, lb.bandwidth);
    }
  }
  return d.text();
}

System System::withGpusInDevOrder() const {
  const std::vector<int> slots = nodesOfType(NodeType::Gpu);
  std::vector<int> byDev = slots;
  std::stable_sort(byDev.begin(), byDev.end(), [&](int a, int b) { return node(a).gpu.dev < node(b).gpu.dev; });
  if (byDev == slots) return *this;
  std::vector<int> newIndex(static_cast<size_t>(size()));
  for (int i = 0; i < size(); ++i) newIndex[static_cast<size_t>(i)] = i;
  for (size_t k = 0; k < slots.size(); ++k) newIndex[static_cast<size_t>(byDev[k])] = slots[k];
  std::vector<Node> reordered(static_cast<size_t>(size()));
  for (int i = 0; i < size(); ++i) {
    Node moved = node(i);
    for (Link& link : moved.links) link.to = newIndex[static_cast<size_t>(link.to)];
    reordered[static_cast<size_t>(newIndex[static_cast<size_t>(i)])] = std::move(moved);
  }
  System result;
  result.version = version;
  result.hostHash = hostHash;
  result.source = source;
  for (Node& moved : reordered) result.addNode(std::move(moved));
  return result;
}

}  // namespace loom::topology
