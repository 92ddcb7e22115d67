// SPDX-License-Identifier: Apache-2.0
// System -> NCCL system XML. The PCI tree has no stored direction, so it is rebuilt by walking
// PCI links depth first from each CPU, children in link order. Links are appended as the
// reader creates nodes, so this order is the document order the model was read from, and
// reading the output back creates the same nodes in the same order (see topo_xml.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "base/log.h"
#include "topology/ascii_text.h"
#include "topology/link_bandwidth.h"
#include "topology/topo_xml.h"

namespace loom::topology {

namespace {

std::string formatNumber(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);  // shortest exact
  return std::string(buffer, result.ptr);
}

std::string formatHex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

bool isGpuClass(const std::string& pciClass) {
  return startsWith(pciClass, "0x03") || startsWith(pciClass, "0x12");
}

void setIfNotEmpty(XmlElement& e, const char* key, const std::string& value) {
  if (!value.empty()) e.setAttribute(key, value);
}

void addExtra(XmlElement& e, const Node& node, const std::string& elementName) {
  const auto found = node.extra.find(elementName);
  if (found == node.extra.end()) return;
  for (const auto& [key, value] : found->second) e.setAttribute(key, value);
}

std::vector<std::string> splitCommas(const std::string& list) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t comma = std::min(list.find(',', begin), list.size());
    if (comma > begin) parts.push_back(list.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return parts;
}

class TopologyWriter {
 public:
  explicit TopologyWriter(const System& system) : s_(system) {}

  XmlElement write() {
    // A dry walk first: the <gpu> elements may be left out only when the reader would number
    // the GPUs the same way from the bare <pci> entries (AWS-style files stay as they were).
    walkAll(nullptr);
    writeBareGpus_ = !gpuOrder_.empty();
    for (size_t i = 0; i < gpuOrder_.size(); ++i) {
      writeBareGpus_ = writeBareGpus_ && isBareGpu(s_.node(gpuOrder_[i]), static_cast<int>(i));
    }
    XmlElement root;
    root.name = "system";
    root.setAttribute("version", std::to_string(s_.version));
    setIfNotEmpty(root, "host_hash", s_.hostHash);
    walkAll(&root);
    for (int i = 0; i < s_.size(); ++i) {
      const Node& node = s_.node(i);
      const bool tree =
          node.type == NodeType::Gpu || node.type == NodeType::Pci || node.type == NodeType::Nic;
      if (tree && node.host == 0 && !visited_[static_cast<size_t>(i)]) {
        LOOM_WARN(GRAPH, "topology dump: %s hangs under no CPU; not written", node.label().c_str());
      }
    }
    return root;
  }

 private:
  // element == nullptr: only record the GPU document order.
  void walkAll(XmlElement* root) {
    visited_.assign(static_cast<size_t>(s_.size()), 0);
    gpuOrder_.clear();
    const std::vector<int> cpus = s_.nodesOfType(NodeType::Cpu);
    for (int cpu : cpus) visited_[static_cast<size_t>(cpu)] = 1;
    for (int cpu : cpus) {
      const Node& node = s_.node(cpu);
      if (node.host != 0) continue;  // --nodes replicas: the dump describes one machine
      XmlElement* element = root ? &root->addChild("cpu") : nullptr;
      if (element) writeCpuAttributes(node, *element);
      walkChildren(cpu, element);
    }
  }

  void walkChildren(int index, XmlElement* element) {
    const Node& parent = s_.node(index);
    // An index, not a pointer: adding <pci> siblings may move the <nic> element.
    constexpr size_t kNone = ~size_t{0};
    size_t nic = kNone;
    for (const Link& link : parent.links) {
      const Node& child = s_.node(link.to);
      if (link.type == LinkType::Network && child.type == NodeType::Net) {
        if (!element || isInferred(child)) continue;
        if (nic == kNone) {
          openNic(parent, *element);
          nic = element->children.size() - 1;
        }
        writeNet(child, element->children[nic].addChild("net"));
        continue;
      }
      if (link.type != LinkType::Pci || visited_[static_cast<size_t>(link.to)]) continue;
      if (child.type == NodeType::Cpu || child.type == NodeType::Net ||
          child.type == NodeType::NvSwitch || child.host != parent.host) {
        continue;
      }
      visited_[static_cast<size_t>(link.to)] = 1;
      if (child.type == NodeType::Nic && child.pci.busId.empty()) {
        // A NIC with no PCI function: <nic> straight under its parent.
        walkChildren(link.to, element);
        continue;
      }
      if (child.type == NodeType::Gpu) gpuOrder_.push_back(link.to);
      XmlElement* pci = element ? &element->addChild("pci") : nullptr;
      if (pci) writePci(link.to, *pci);
      walkChildren(link.to, pci);
    }
    // A NIC node whose <nic> must exist although it has no <net>: the type is not implied
    // by its class.
    if (element && nic == kNone && parent.type == NodeType::Nic &&
        (parent.pci.busId.empty() || parent.extra.count("nic") ||
         !startsWith(parent.pci.pciClass, "0x02"))) {
      openNic(parent, *element);
    }
  }

  static XmlElement& openNic(const Node& nicNode, XmlElement& parent) {
    XmlElement& nic = parent.addChild("nic");
    addExtra(nic, nicNode, "nic");
    return nic;
  }

  // Nothing a <gpu> element would add: numbered 0, 1, ... in document order by its class.
  static bool isBareGpu(const Node& gpu, int position) {
    if (gpu.gpu.dev != position || gpu.gpu.sm != 0 || gpu.gpu.rank >= 0 || gpu.gpu.gdr ||
        !gpu.gpu.gcn.empty() || gpu.gpu.arch != 0 || gpu.extra.count("gpu") ||
        !isGpuClass(gpu.pci.pciClass)) {
      return false;
    }
    for (const Link& link : gpu.links) {
      if (link.type == LinkType::NvLink || link.type == LinkType::C2c) return false;
    }
    return true;
  }

  static void writeCpuAttributes(const Node& cpu, XmlElement& e) {
    if (cpu.cpu.numaId >= 0) e.setAttribute("numaid", std::to_string(cpu.cpu.numaId));
    setIfNotEmpty(e, "affinity", cpu.cpu.affinity);
    setIfNotEmpty(e, "arch", cpu.cpu.arch);
    setIfNotEmpty(e, "vendor", cpu.cpu.vendor);
    if (cpu.cpu.familyId >= 0) e.setAttribute("familyid", std::to_string(cpu.cpu.familyId));
    if (cpu.cpu.modelId >= 0) e.setAttribute("modelid", std::to_string(cpu.cpu.modelId));
    addExtra(e, cpu, "cpu");
  }

  void writePci(int index, XmlElement& e) {
    const Node& node = s_.node(index);
    const PciAttributes& pci = node.pci;
    e.setAttribute("busid", pci.busId);
    setIfNotEmpty(e, "class", pci.pciClass);
    setIfNotEmpty(e, "vendor", pci.vendor);
    setIfNotEmpty(e, "device", pci.device);
    setIfNotEmpty(e, "subsystem_vendor", pci.subsystemVendor);
    setIfNotEmpty(e, "subsystem_device", pci.subsystemDevice);
    setIfNotEmpty(e, "link_speed", pci.linkSpeed);
    if (pci.linkWidth > 0) e.setAttribute("link_width", std::to_string(pci.linkWidth));
    addExtra(e, node, "pci");
    if (node.type == NodeType::Gpu && (!writeBareGpus_ || !isGpuClass(pci.pciClass))) {
      writeGpu(node, e.addChild("gpu"));
    }
    for (const Link& link : node.links) {
      const Node& target = s_.node(link.to);
      if (link.type == LinkType::Loc && link.to != index && !target.pci.busId.empty()) {
        e.addChild("pcilink").setAttribute("target", target.pci.busId);
      }
    }
  }

  void writeGpu(const Node& gpu, XmlElement& e) {
    e.setAttribute("dev", std::to_string(gpu.gpu.dev));
    if (gpu.gpu.sm > 0) e.setAttribute("sm", std::to_string(gpu.gpu.sm));
    setIfNotEmpty(e, "gcn", gpu.gpu.gcn);
    if (gpu.gpu.arch != 0) e.setAttribute("arch", std::to_string(gpu.gpu.arch));
    if (gpu.gpu.rank >= 0) e.setAttribute("rank", std::to_string(gpu.gpu.rank));
    e.setAttribute("gdr", gpu.gpu.gdr ? "1" : "0");
    addExtra(e, gpu, "gpu");
    const double perLink = gpuLinkBandwidth(gpu.gpu);
    const char* linkElement = gpu.gpu.amd ? "xgmi" : "nvlink";
    for (const Link& link : gpu.links) {
      const Node& target = s_.node(link.to);
      if (link.type == LinkType::C2c) {
        writeC2c(gpu, link, e.addChild("c2c"));
        continue;
      }
      if (link.type != LinkType::NvLink) continue;
      const long count = std::max(1L, std::lround(link.bandwidth / perLink));
      if (target.type == NodeType::Gpu && !target.pci.busId.empty()) {
        XmlElement& nvlink = e.addChild(linkElement);
        nvlink.setAttribute("target", target.pci.busId);
        nvlink.setAttribute("count", std::to_string(count));
        nvlink.setAttribute("tclass",
                            target.pci.pciClass.empty() ? "0x030200" : target.pci.pciClass);
      } else if (target.type == NodeType::NvSwitch) {
        writeSwitchLinks(target, count, linkElement, e);
      } else {
        LOOM_WARN(GRAPH, "topology dump: NVLink %s -> %s has no bus id to name; not written",
                  gpu.label().c_str(), target.label().c_str());
      }
    }
  }

  // NCCL lists one <nvlink> per physical switch; the model keeps only the GPU's total, so the
  // links are spread evenly over the folded switches (what NVSwitch systems are built as).
  static void writeSwitchLinks(const Node& fabric, long count, const char* linkElement,
                               XmlElement& e) {
    std::vector<std::string> busIds;
    const auto extra = fabric.extra.find(kNvSwitchExtraElement);
    if (extra != fabric.extra.end()) {
      const auto list = extra->second.find(kNvSwitchExtraBusIds);
      if (list != extra->second.end()) busIds = splitCommas(list->second);
    }
    if (busIds.empty())
      busIds.push_back(fabric.pci.busId.empty() ? "ffff:ff:00.0" : fabric.pci.busId);
    const long n = static_cast<long>(busIds.size());
    for (long i = 0; i < n; ++i) {
      const long share = count / n + (i < count % n ? 1 : 0);
      if (share == 0) continue;
      XmlElement& nvlink = e.addChild(linkElement);
      nvlink.setAttribute("target", busIds[static_cast<size_t>(i)]);
      nvlink.setAttribute("count", std::to_string(share));
      nvlink.setAttribute("tclass", "0x068000");
    }
  }

  static void writeC2c(const Node& gpu, const Link& link, XmlElement& e) {
    const auto kept = gpu.extra.find("c2c");
    if (kept != gpu.extra.end() && kept->second.count("count") && kept->second.count("bw")) {
      const double count = std::strtod(kept->second.at("count").c_str(), nullptr);
      const double bw = std::strtod(kept->second.at("bw").c_str(), nullptr);
      if (std::fabs(c2cBandwidth(static_cast<int>(count), bw) - link.bandwidth) <
          1e-9 * link.bandwidth) {
        e.setAttribute("count", kept->second.at("count"));
        e.setAttribute("bw", kept->second.at("bw"));
        return;
      }
    }
    e.setAttribute("count", "1");
    e.setAttribute("bw", formatNumber(link.bandwidth * bandwidth::kC2cMBpsPerGBps));
  }

  static bool isInferred(const Node& net) {
    const auto element = net.extra.find(kInferredNetElement);
    return element != net.extra.end() && element->second.count(kInferredNetAttribute) > 0;
  }

  static void writeNet(const Node& net, XmlElement& e) {
    setIfNotEmpty(e, "name", net.net.name);
    e.setAttribute("dev", std::to_string(net.net.dev));
    e.setAttribute("speed", formatNumber(net.net.speedMbps));
    e.setAttribute("port", std::to_string(net.net.port));
    e.setAttribute("latency", std::to_string(net.net.latencyUs));
    e.setAttribute("guid", formatHex(net.net.guid));
    e.setAttribute("maxconn", std::to_string(net.net.maxConn));
    e.setAttribute("gdr", net.net.gdr ? "1" : "0");
    if (net.net.coll) e.setAttribute("coll", "1");
    addExtra(e, net, "net");
  }

  const System& s_;
  std::vector<char> visited_;
  std::vector<int> gpuOrder_;
  bool writeBareGpus_ = false;
};

}  // namespace

XmlElement topologyToXml(const System& system) { return TopologyWriter(system).write(); }

std::string writeTopologyXml(const System& system) { return writeXml(topologyToXml(system)); }

void writeTopologyFile(const System& system, const std::string& path) {
  const std::string text = writeTopologyXml(system);
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throwSystem("cannot create " + temporary);
    file << text;
    file.flush();
    if (!file) {
      std::remove(temporary.c_str());
      throwSystem("cannot write " + temporary);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temporary.c_str());
    throwSystem("cannot rename " + temporary + " to " + path, err);
  }
}

}  // namespace loom::topology
