// SPDX-License-Identifier: Apache-2.0
// NCCL/RCCL system XML -> System. The rules are listed in topo_xml.h; this file walks the
// element tree once, creating nodes in document order, then resolves what refers to other
// nodes by bus id (NVLink/xGMI, C2C, pcilink) and finally orders the GPUs by device number.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "base/error.h"
#include "base/log.h"
#include "topology/ascii_text.h"
#include "topology/bounded_file.h"
#include "topology/link_bandwidth.h"
#include "topology/topo_xml.h"

namespace loom::topology {

namespace {

// "07:00.0" -> "0000:07:00.0"; lower case, as sysfs and NCCL write them.
std::string normalizeBusId(const std::string& busId) {
  std::string id = lowerCase(busId);
  if (std::count(id.begin(), id.end(), ':') == 1) id = "0000:" + id;
  return id;
}

bool isNvSwitchClass(const std::string& pciClass) {
  return startsWith(lowerCase(pciClass), "0x0680");
}

struct PendingGpuLink {
  int gpu;
  std::string target;  // normalized bus id
  int count;
  std::string tclass;
  const char* element;  // "nvlink" or "xgmi"
  int line;
};

struct PendingC2c {
  int gpu;
  int count;
  double bwMBps;
  int line;
};

struct PendingPciLink {
  int from;
  std::string target;
  int line;
};

class TopologyReader {
 public:
  explicit TopologyReader(const std::string& source) : source_(source) {}

  System read(const XmlElement& root) {
    if (root.name != "system") fail(root, "the root element is <" + root.name + ">, not <system>");
    system_.source = source_;
    system_.version = intAttribute(root, "version", 1);
    system_.hostHash = root.attributeOr("host_hash", "");
    for (const auto& [key, value] : root.attributes) {
      if (key != "version" && key != "host_hash") {
        LOOM_WARN(GRAPH, "%s:%d: <system> attribute %s ignored", source_.c_str(), root.line,
                  key.c_str());
      }
    }
    for (const XmlElement& child : root.children) {
      if (child.name == "cpu") {
        readCpu(child);
      } else {
        skipUnknown(root, child);
      }
    }
    connectSockets();
    resolveGpuLinks();
    resolveC2c();
    resolvePciLinks();
    inferMissingNets();
    return orderGpusByDev();
  }

 private:
  // Partial files (Azure ND v2/v4/v5, AWS p4d) list NICs as bare <pci class="0x02....">: NCCL
  // finds their ports at run time from the network plugin. So that such a machine still has
  // somewhere for multi-node channels to enter and leave, each NIC without a <net> gets one
  // port of unknown speed (netBandwidth's default), numbered after the declared ones and
  // marked extra["net"]["inferred"] so the writer leaves it out and a dump stays the file.
  void inferMissingNets() {
    int nextDev = 0;
    for (int index : system_.nodesOfType(NodeType::Net)) nextDev = std::max(nextDev, system_.node(index).net.dev + 1);
    for (int nic : system_.nodesOfType(NodeType::Nic)) {
      bool hasNet = false;
      for (const Link& link : system_.node(nic).links) hasNet = hasNet || system_.node(link.to).type == NodeType::Net;
      if (hasNet) continue;
      Node net;
      net.type = NodeType::Net;
      net.net.name = "inferred-" + system_.node(nic).pci.busId;
      net.net.dev = nextDev++;
      net.net.gdr = true;  // unknown until run time; GPUDirect is what such NICs are there for
      net.extra[kInferredNetElement][kInferredNetAttribute] = "1";
      const int netIndex = system_.addNode(std::move(net));
      system_.connect(nic, netIndex, LinkType::Network, netBandwidth(0));
    }
  }

  [[noreturn]] void fail(const XmlElement& element, const std::string& what) const {
    throwArgument(source_ + ":" + std::to_string(element.line) + ": " + what);
  }
  void skipUnknown(const XmlElement& parent, const XmlElement& child) const {
    LOOM_WARN(GRAPH, "%s:%d: unknown element <%s> inside <%s> skipped", source_.c_str(), child.line,
              child.name.c_str(), parent.name.c_str());
  }

  // Numbers: decimal, or hex with 0x. Empty means absent (some dumps write link_speed="").
  long long integer(const XmlElement& e, const std::string& key, const std::string& text) const {
    const bool hex = startsWith(lowerCase(text), "0x");
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
    if (errno != 0 || end == text.c_str() + (hex ? 2 : 0) || *end != '\0') {
      fail(e, "attribute " + key + "=\"" + text + "\" of <" + e.name + "> is not an integer");
    }
    return value;
  }
  int intAttribute(const XmlElement& e, const std::string& key, int fallback) const {
    const std::string* text = e.attribute(key);
    if (!text || text->empty()) return fallback;
    const long long value = integer(e, key, *text);
    if (value < -2147483647LL || value > 2147483647LL) {
      fail(e, "attribute " + key + "=\"" + *text + "\" of <" + e.name + "> is out of range");
    }
    // -1 means "absent" for these attributes (the writer leaves it out), so any other negative
    // value could not survive a dump: refuse it rather than change it silently.
    if (fallback == -1 && value < -1) {
      fail(e, "attribute " + key + "=\"" + *text + "\" of <" + e.name + "> must not be negative");
    }
    return static_cast<int>(value);
  }
  double doubleAttribute(const XmlElement& e, const std::string& key, double fallback) const {
    const std::string* text = e.attribute(key);
    if (!text || text->empty()) return fallback;
    char* end = nullptr;
    const double value = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || *end != '\0' || !std::isfinite(value)) {
      fail(e, "attribute " + key + "=\"" + *text + "\" of <" + e.name + "> is not a number");
    }
    return value;
  }
  uint64_t hexAttribute(const XmlElement& e, const std::string& key) const {
    const std::string* text = e.attribute(key);
    if (!text || text->empty()) return 0;
    const std::string digits = startsWith(lowerCase(*text), "0x") ? text->substr(2) : *text;
    errno = 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(digits.c_str(), &end, 16);
    if (errno != 0 || end == digits.c_str() || *end != '\0' || digits[0] == '-') {
      fail(e, "attribute " + key + "=\"" + *text + "\" of <" + e.name + "> is not hexadecimal");
    }
    return value;
  }
  // Attributes of `e` not in `known` go to node.extra[e.name].
  static void keepUnknown(const XmlElement& e, std::initializer_list<const char*> known,
                          Node& node) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    for (const auto& attribute : e.attributes) {
      const std::string& key = attribute.first;
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
          known.end()) {
        node.extra[e.name][key] = attribute.second;
      }
    }
  }

  void readCpu(const XmlElement& e) {
    Node cpu;
    cpu.type = NodeType::Cpu;
    cpu.cpu.numaId = intAttribute(e, "numaid", -1);
    cpu.cpu.affinity = e.attributeOr("affinity", "");
    cpu.cpu.arch = e.attributeOr("arch", "");
    cpu.cpu.vendor = e.attributeOr("vendor", "");
    cpu.cpu.familyId = intAttribute(e, "familyid", -1);
    cpu.cpu.modelId = intAttribute(e, "modelid", -1);
    keepUnknown(e, {"numaid", "affinity", "arch", "vendor", "familyid", "modelid"}, cpu);
    const int index = system_.addNode(std::move(cpu));
    for (const XmlElement& child : e.children) {
      if (child.name == "pci") {
        readPci(child, index);
      } else if (child.name == "nic") {
        // No PCI function is described: the NIC hangs off the CPU and only its NET links
        // bound a path, so the CPU link does not limit it.
        Node nic;
        nic.type = NodeType::Nic;
        const int nicIndex = system_.addNode(std::move(nic));
        system_.connect(index, nicIndex, LinkType::Pci, bandwidth::kLoc);
        readNic(child, nicIndex);
      } else {
        skipUnknown(e, child);
      }
    }
  }

  static NodeType pciNodeType(const XmlElement& e, const std::string& pciClass) {
    bool hasGpu = false, hasNic = false, hasPci = false;
    for (const XmlElement& child : e.children) {
      hasGpu = hasGpu || child.name == "gpu";
      hasNic = hasNic || child.name == "nic";
      hasPci = hasPci || child.name == "pci";
    }
    if (hasGpu) return NodeType::Gpu;
    if (hasNic) return NodeType::Nic;
    if (hasPci || startsWith(pciClass, "0x0604")) return NodeType::Pci;
    if (startsWith(pciClass, "0x03") || startsWith(pciClass, "0x12")) return NodeType::Gpu;
    if (startsWith(pciClass, "0x02")) return NodeType::Nic;
    return NodeType::Pci;  // unclassified leaf: see topo_xml.h
  }

  void readPci(const XmlElement& e, int parent) {
    Node node;
    const std::string* busId = e.attribute("busid");
    if (!busId || busId->empty()) fail(e, "<pci> without a busid attribute");
    node.pci.busId = normalizeBusId(*busId);
    node.pci.pciClass = lowerCase(e.attributeOr("class", ""));
    node.pci.vendor = lowerCase(e.attributeOr("vendor", ""));
    node.pci.device = lowerCase(e.attributeOr("device", ""));
    node.pci.subsystemVendor = lowerCase(e.attributeOr("subsystem_vendor", ""));
    node.pci.subsystemDevice = lowerCase(e.attributeOr("subsystem_device", ""));
    node.pci.linkSpeed = e.attributeOr("link_speed", "");
    node.pci.linkWidth = std::max(0, intAttribute(e, "link_width", 0));
    keepUnknown(e,
                {"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device",
                 "link_speed", "link_width"},
                node);
    node.type = pciNodeType(e, node.pci.pciClass);
    node.gpu.amd = node.type == NodeType::Gpu && node.pci.vendor == "0x1002";
    if (busIds_.count(node.pci.busId)) {
      fail(e, "bus id " + node.pci.busId + " appears twice (first on line " +
                  std::to_string(busLines_[node.pci.busId]) + ")");
    }
    const double linkBandwidth = pciBandwidth(node.pci.linkSpeed, node.pci.linkWidth);
    const NodeType type = node.type;
    const std::string id = node.pci.busId;
    const int index = system_.addNode(std::move(node));
    busIds_[id] = index;
    busLines_[id] = e.line;
    system_.connect(parent, index, LinkType::Pci, linkBandwidth);

    bool gpuSeen = false;
    for (const XmlElement& child : e.children) {
      if (child.name == "pci") {
        readPci(child, index);
      } else if (child.name == "pcilink") {
        pciLinks_.push_back({index, normalizeBusId(child.attributeOr("target", "")), child.line});
      } else if (child.name == "gpu" && type == NodeType::Gpu && !gpuSeen) {
        gpuSeen = true;
        readGpu(child, index);
      } else if (child.name == "nic" && type == NodeType::Nic) {
        readNic(child, index);
      } else {
        skipUnknown(e, child);
      }
    }
  }

  void readGpu(const XmlElement& e, int index) {
    Node& gpu = system_.node(index);
    gpu.gpu.dev = intAttribute(e, "dev", -1);
    gpu.gpu.rank = intAttribute(e, "rank", -1);
    gpu.gpu.sm = intAttribute(e, "sm", 0);
    gpu.gpu.gdr = intAttribute(e, "gdr", 0) != 0;
    gpu.gpu.gcn = e.attributeOr("gcn", "");
    gpu.gpu.arch = intAttribute(e, "arch", 0);
    keepUnknown(e, {"dev", "rank", "sm", "gdr", "gcn", "arch"}, gpu);
    if (!gpu.gpu.gcn.empty()) gpu.gpu.amd = true;
    if (gpu.gpu.dev < -1) fail(e, "negative GPU dev");
    for (const XmlElement& child : e.children) {
      if (child.name == "nvlink" || child.name == "xgmi") {
        if (child.name == "xgmi") system_.node(index).gpu.amd = true;
        gpuLinks_.push_back({index, normalizeBusId(child.attributeOr("target", "")),
                             intAttribute(child, "count", 1),
                             lowerCase(child.attributeOr("tclass", "")),
                             child.name == "xgmi" ? "xgmi" : "nvlink", child.line});
      } else if (child.name == "c2c") {
        const int count = intAttribute(child, "count", 1);
        const double bw = doubleAttribute(child, "bw", 0);
        Node& node = system_.node(index);
        if (!node.extra.count("c2c")) {
          node.extra["c2c"]["count"] = child.attributeOr("count", "1");
          node.extra["c2c"]["bw"] = child.attributeOr("bw", "0");
        }
        c2cs_.push_back({index, count, bw, child.line});
      } else {
        skipUnknown(e, child);
      }
    }
  }

  void readNic(const XmlElement& e, int nicIndex) {
    keepUnknown(e, {}, system_.node(nicIndex));
    for (const XmlElement& child : e.children) {
      if (child.name != "net") {
        skipUnknown(e, child);
        continue;
      }
      Node net;
      net.type = NodeType::Net;
      net.net.name = child.attributeOr("name", "");
      net.net.dev = intAttribute(child, "dev", -1);
      net.net.speedMbps = doubleAttribute(child, "speed", 0);
      net.net.port = intAttribute(child, "port", 1);
      net.net.guid = hexAttribute(child, "guid");
      net.net.maxConn = intAttribute(child, "maxconn", 0);
      net.net.latencyUs = static_cast<int>(std::lround(doubleAttribute(child, "latency", 0)));
      net.net.gdr = intAttribute(child, "gdr", 0) != 0;
      net.net.coll = intAttribute(child, "coll", 0) != 0;
      keepUnknown(child,
                  {"name", "dev", "speed", "port", "guid", "maxconn", "latency", "gdr", "coll"},
                  net);
      for (const XmlElement& grandChild : child.children) skipUnknown(child, grandChild);
      const double speed = net.net.speedMbps;
      const int netIndex = system_.addNode(std::move(net));
      system_.connect(nicIndex, netIndex, LinkType::Network, netBandwidth(speed));
    }
  }

  void connectSockets() {
    const std::vector<int> cpus = system_.nodesOfType(NodeType::Cpu);
    for (size_t i = 0; i < cpus.size(); ++i) {
      for (size_t j = i + 1; j < cpus.size(); ++j) {
        const int a = cpus[i], b = cpus[j];
        system_.addLink(a, b, LinkType::InterSocket, interSocketBandwidth(system_.node(a).cpu));
        system_.addLink(b, a, LinkType::InterSocket, interSocketBandwidth(system_.node(b).cpu));
      }
    }
  }

  int findBusId(const std::string& busId) const {
    const auto found = busIds_.find(busId);
    return found == busIds_.end() ? -1 : found->second;
  }

  // The machine's one NvSwitch node, created on first use; remembers every switch bus id.
  int nvSwitchFor(const std::string& busId) {
    if (nvSwitch_ < 0) nvSwitch_ = system_.addNvSwitch(busId);
    if (switchBusIds_.insert(busId).second) {
      Node& node = system_.node(nvSwitch_);
      node.nvSwitchCount = static_cast<int>(switchBusIds_.size());
      std::string& list = node.extra[kNvSwitchExtraElement][kNvSwitchExtraBusIds];
      list += (list.empty() ? "" : ",") + busId;
    }
    return nvSwitch_;
  }

  void resolveGpuLinks() {
    for (const PendingGpuLink& link : gpuLinks_) {
      const Node& gpu = system_.node(link.gpu);
      const char* where = source_.c_str();
      if (link.count <= 0) {
        LOOM_WARN(GRAPH, "%s:%d: <%s> with count %d ignored", where, link.line, link.element,
                  link.count);
        continue;
      }
      const double bw = link.count * gpuLinkBandwidth(gpu.gpu);
      const int target = findBusId(link.target);
      if (target == link.gpu) {
        LOOM_WARN(GRAPH, "%s:%d: <%s> from %s to itself ignored", where, link.line, link.element,
                  gpu.pci.busId.c_str());
      } else if (target >= 0 && system_.node(target).type == NodeType::Gpu) {
        system_.addLink(link.gpu, target, LinkType::NvLink, bw);
      } else if (isNvSwitchClass(link.tclass) || target >= 0) {
        const int fabric = nvSwitchFor(link.target);
        system_.addLink(link.gpu, fabric, LinkType::NvLink, bw);
        system_.addLink(fabric, link.gpu, LinkType::NvLink, bw);
      } else {
        LOOM_WARN(GRAPH, "%s:%d: <%s> target %s (class %s) is not in the file; ignored", where,
                  link.line, link.element, link.target.c_str(),
                  link.tclass.empty() ? "none" : link.tclass.c_str());
      }
    }
  }

  void resolveC2c() {
    for (const PendingC2c& c2c : c2cs_) {
      const int cpu = system_.parentCpu(c2c.gpu);
      const double bw = c2cBandwidth(c2c.count, c2c.bwMBps);
      if (cpu < 0 || bw <= 0) {
        LOOM_WARN(GRAPH, "%s:%d: <c2c> without a CPU or bandwidth ignored", source_.c_str(),
                  c2c.line);
        continue;
      }
      system_.connect(c2c.gpu, cpu, LinkType::C2c, bw);
    }
  }

  void resolvePciLinks() {
    for (const PendingPciLink& link : pciLinks_) {
      const int target = findBusId(link.target);
      if (target < 0 || target == link.from) {
        LOOM_WARN(GRAPH, "%s:%d: <pcilink> target '%s' not usable; ignored", source_.c_str(),
                  link.line, link.target.c_str());
        continue;
      }
      system_.addLink(link.from, target, LinkType::Loc, bandwidth::kLoc);
    }
  }

  // Unnumbered GPUs take the lowest free devs in document order; then GPU slots are refilled
  // in dev order (stable) and every link index is renumbered.
  System orderGpusByDev() {
    const std::vector<int> slots = system_.nodesOfType(NodeType::Gpu);
    std::set<int> used;
    for (int index : slots) {
      const int dev = system_.node(index).gpu.dev;
      if (dev >= 0 && !used.insert(dev).second) {
        LOOM_WARN(GRAPH, "%s: two GPUs with dev %d", source_.c_str(), dev);
      }
    }
    int nextFree = 0;
    for (int index : slots) {
      Node& gpu = system_.node(index);
      if (gpu.gpu.dev >= 0) continue;
      while (used.count(nextFree)) ++nextFree;
      gpu.gpu.dev = nextFree;
      used.insert(nextFree);
    }
    return system_.withGpusInDevOrder();
  }

  const std::string& source_;
  System system_;
  std::map<std::string, int> busIds_;
  std::map<std::string, int> busLines_;
  std::vector<PendingGpuLink> gpuLinks_;
  std::vector<PendingC2c> c2cs_;
  std::vector<PendingPciLink> pciLinks_;
  int nvSwitch_ = -1;
  std::set<std::string> switchBusIds_;
};

}  // namespace

System topologyFromXml(const XmlElement& root, const std::string& sourceName) {
  return TopologyReader(sourceName).read(root);
}

System parseTopologyXml(const std::string& text, const std::string& sourceName) {
  return topologyFromXml(parseXml(text, sourceName), sourceName);
}

System readTopologyFile(const std::string& path) {
  return parseTopologyXml(readBoundedFile(path, "topology file", kMaxXmlBytes), path);
}

}  // namespace loom::topology
