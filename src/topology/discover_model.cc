// SPDX-License-Identifier: Apache-2.0
// From a HostInventory (hwloc or sysfs) to a System, and discoverHost() itself. The rules for
// which hardware becomes which node are here, once, whichever scanner collected it.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/log.h"
#include "loom_config.h"
#include "topology/discover.h"
#include "topology/host_inventory.h"
#include "topology/link_bandwidth.h"

namespace loom::topology {
namespace {

constexpr const char* kVendorNvidia = "0x10de";
constexpr const char* kVendorAmd = "0x1002";

bool classStartsWith(const PciAttributes& attrs, const char* prefix) {
  return attrs.pciClass.rfind(prefix, 0) == 0;
}
bool isBridge(const PciAttributes& attrs) { return classStartsWith(attrs, "0x0604"); }
// Display (0x0300) and 3D (0x0302) controllers from a GPU vendor; other display devices (the
// BMC's VGA chip) are not compute GPUs.
bool isGpu(const PciAttributes& attrs) {
  return classStartsWith(attrs, "0x03") &&
         (attrs.vendor == kVendorNvidia || attrs.vendor == kVendorAmd);
}

class ModelBuilder {
 public:
  explicit ModelBuilder(const HostInventory& inventory) : inventory_(inventory) {}

  System build() {
    system_.source = inventory_.source;
    indexFunctions();
    selectFunctions();
    numberDevices();
    for (const NumaDomain& domain : domains()) addCpu(domain);
    // Every pair of CPU nodes is joined; the bandwidth leaving a socket depends on its kind.
    std::vector<int> cpus = system_.nodesOfType(NodeType::Cpu);
    for (size_t a = 0; a < cpus.size(); ++a) {
      for (size_t b = a + 1; b < cpus.size(); ++b) {
        system_.connect(cpus[a], cpus[b], LinkType::InterSocket,
                        interSocketBandwidth(system_.node(cpus[a]).cpu));
      }
    }
    return std::move(system_);
  }

 private:
  std::vector<NumaDomain> domains() const {
    if (!inventory_.numaDomains.empty()) return inventory_.numaDomains;
    return {NumaDomain{0, ""}};
  }

  // The NUMA domain a subtree hangs under: its own when known and present, else the first.
  int domainFor(int numaId) const {
    for (const NumaDomain& domain : domains()) {
      if (domain.numaId == numaId) return numaId;
    }
    return domains().front().numaId;
  }

  void indexFunctions() {
    for (const PciFunction& function : inventory_.pci) byBusId_[function.attrs.busId] = &function;
    for (const NetPort& port : inventory_.nets) {
      if (!port.pciBusId.empty() && byBusId_.count(port.pciBusId)) {
        netsByFunction_[port.pciBusId].push_back(&port);
      } else {
        // No PCI function (a bond), or one the scanner did not see: hang it off a CPU.
        virtualNets_.push_back(&port);
      }
    }
  }

  // The bridge a function hangs under in the model, "" for a CPU. Root ports are left out as
  // NCCL leaves them out: a device behind a root port hangs directly off the CPU.
  std::string modelParent(const PciFunction& function) const {
    auto parent = byBusId_.find(function.parentBusId);
    if (parent == byBusId_.end()) return "";
    const PciFunction& bridge = *parent->second;
    if (bridge.parentBusId.empty() || !byBusId_.count(bridge.parentBusId)) return "";
    return bridge.attrs.busId;
  }

  // GPUs and NICs, and the bridges above them; everything else on the bus is left out.
  void selectFunctions() {
    for (const PciFunction& function : inventory_.pci) {
      const PciAttributes& attrs = function.attrs;
      bool nic = classStartsWith(attrs, "0x02") || netsByFunction_.count(attrs.busId);
      if (!isGpu(attrs) && !nic) continue;
      kept_.insert(attrs.busId);
      for (std::string parent = modelParent(function); !parent.empty();
           parent = modelParent(*byBusId_.at(parent))) {
        kept_.insert(parent);
      }
    }
    for (const std::string& busId : kept_) {
      const PciFunction& function = *byBusId_.at(busId);
      std::string parent = modelParent(function);
      if (parent.empty()) {
        topLevel_[domainFor(function.numaId)].push_back(busId);
      } else {
        children_[parent].push_back(busId);
      }
    }
  }

  // GPUs in bus order (what CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi give); network ports by
  // name then port.
  void numberDevices() {
    int dev = 0;
    for (const std::string& busId : kept_) {  // std::set: sorted by bus id
      if (isGpu(byBusId_.at(busId)->attrs)) gpuDev_[busId] = dev++;
    }
    std::vector<const NetPort*> ports;
    for (const NetPort& port : inventory_.nets) ports.push_back(&port);
    std::stable_sort(ports.begin(), ports.end(), [](const NetPort* a, const NetPort* b) {
      return a->attrs.name != b->attrs.name ? a->attrs.name < b->attrs.name
                                            : a->attrs.port < b->attrs.port;
    });
    for (size_t i = 0; i < ports.size(); ++i) netDev_[ports[i]] = static_cast<int>(i);
  }

  void addCpu(const NumaDomain& domain) {
    Node cpu;
    cpu.type = NodeType::Cpu;
    cpu.cpu = inventory_.cpu;
    cpu.cpu.numaId = domain.numaId;
    cpu.cpu.affinity = domain.affinity;
    int index = system_.addNode(std::move(cpu));
    for (const std::string& busId : topLevel_[domain.numaId]) addFunction(busId, index);
    for (const NetPort* port : virtualNets_) {
      if (domainFor(port->numaId) == domain.numaId) addVirtualNic(*port, index);
    }
  }

  void addFunction(const std::string& busId, int parent) {
    const PciFunction& function = *byBusId_.at(busId);
    Node node;
    node.pci = function.attrs;
    auto ports = netsByFunction_.find(busId);
    if (isGpu(function.attrs)) {
      node.type = NodeType::Gpu;
      node.gpu.dev = gpuDev_.at(busId);
      node.gpu.rank = node.gpu.dev;
      node.gpu.amd = function.attrs.vendor == kVendorAmd;
    } else if (isBridge(function.attrs) && children_.count(busId)) {
      node.type = NodeType::Pci;
    } else {
      node.type = NodeType::Nic;
    }
    int index = system_.addNode(std::move(node));
    system_.connect(parent, index, LinkType::Pci,
                    pciBandwidth(function.attrs.linkSpeed, function.attrs.linkWidth));
    if (system_.node(index).type == NodeType::Nic && ports != netsByFunction_.end()) {
      for (const NetPort* port : ports->second) addNet(*port, index);
    }
    for (const std::string& child : children_[busId]) addFunction(child, index);
  }

  void addNet(const NetPort& port, int nic) {
    Node node;
    node.type = NodeType::Net;
    node.net = port.attrs;
    node.net.dev = netDev_.at(&port);
    // GPUDirect RDMA needs an RDMA port and the peer-memory module of the GPU driver.
    node.net.gdr = port.infiniband && gdrModuleLoaded_;
    int index = system_.addNode(std::move(node));
    system_.connect(nic, index, LinkType::Network, netBandwidth(port.attrs.speedMbps));
  }

  void addVirtualNic(const NetPort& port, int cpu) {
    Node nic;
    nic.type = NodeType::Nic;
    nic.extra["nic"]["virtual"] = "1";
    int index = system_.addNode(std::move(nic));
    // A bond's members are PCI devices elsewhere: its link to the CPU must not limit a path
    // (the network port is the bottleneck), which is also how the XML reader models a <nic>
    // directly under a <cpu>.
    system_.connect(cpu, index, LinkType::Pci, bandwidth::kLoc);
    addNet(port, index);
  }

  const HostInventory& inventory_;
  System system_;
  std::map<std::string, const PciFunction*> byBusId_;
  std::map<std::string, std::vector<const NetPort*>> netsByFunction_;
  std::vector<const NetPort*> virtualNets_;
  std::set<std::string> kept_;
  std::map<int, std::vector<std::string>> topLevel_;  // NUMA id -> functions under that CPU
  std::map<std::string, std::vector<std::string>> children_;
  std::map<std::string, int> gpuDev_;
  std::map<const NetPort*, int> netDev_;
  bool gdrModuleLoaded_ = std::ifstream("/sys/module/nvidia_peermem/initstate").good() ||
                          std::ifstream("/sys/module/nv_peer_mem/initstate").good();
};

std::string readWholeFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

System buildHostSystem(const HostInventory& inventory) {
  // GPUs are numbered in bus order but added in tree order (CPU by CPU); when the two differ
  // (DGX A100: GPUs 0 and 1 sit under NUMA domain 3), the GPU slots are refilled in dev order,
  // the canonical order the XML reader also produces, so that a dump reloads to the same model.
  return ModelBuilder(inventory).build().withGpusInDevOrder();
}

System discoverHost(const DiscoveryOptions& options) {
  HostInventory inventory;
  // /proc/cpuinfo first: hwloc overrides the vendor/family/model where it knows them.
  inventory.cpu = parseCpuInfo(readWholeFile(options.procRoot + "/cpuinfo"));
  bool scanned = false;
  // hwloc reads the real /sys: it is only asked when discovery looks at the real machine.
  if (LOOM_HAVE_HWLOC && options.useHwloc && options.sysfsRoot == "/sys") {
    scanned = scanWithHwloc(options.sysfsRoot, inventory);
  }
  if (!scanned) {
    inventory.source = "sysfs";
    inventory.numaDomains = readNumaDomains(options.sysfsRoot);
    inventory.pci = readPciFunctions(options.sysfsRoot);
  }
  inventory.nets = readNetPorts(options.sysfsRoot);
  System system = buildHostSystem(inventory);
  if (options.useNvml) addNvmlInformation(system);
  LOOM_INFO(GRAPH, "discovered host (%s): %zu CPU, %zu GPU, %zu NIC, %zu NET nodes",
            system.source.c_str(), system.nodesOfType(NodeType::Cpu).size(),
            system.nodesOfType(NodeType::Gpu).size(), system.nodesOfType(NodeType::Nic).size(),
            system.nodesOfType(NodeType::Net).size());
  return system;
}

System discoverHost() { return discoverHost(DiscoveryOptions{}); }

}  // namespace loom::topology
