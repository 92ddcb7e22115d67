// SPDX-License-Identifier: Apache-2.0
// Host discovery through hwloc: NUMA domains with their CPU sets, the CPU's identity and the PCI
// tree (functions and the bridges above them). Link speed strings come from sysfs even here:
// hwloc reports a link as a GB/s figure, while the model keeps the text NCCL writes.
#include "loom_config.h"
#include "topology/host_inventory.h"

#if LOOM_HAVE_HWLOC

#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/log.h"

namespace loom::topology {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;
// In C++ the PCI attribute struct is nested in hwloc's attribute union.
using HwlocPci = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

TopologyHandle loadTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return nullptr;
  TopologyHandle topology(raw);
  // Keep every PCI object: the model builder decides which bridges matter (those above a GPU
  // or NIC), and hwloc's "important" filter would drop a NIC it does not recognise.
  if (hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL) != 0) return nullptr;
  // The Linux component reads the PCI tree from sysfs by itself. The libpciaccess plugin
  // ("pci") leaks on every load (seen under LeakSanitizer with Debian's hwloc 2.9), and the GPU
  // plugins would load vendor runtimes (or, for "gl", talk to an X server) for nothing: Loom
  // asks NVML itself. Unknown names are ignored by hwloc.
  for (const char* plugin : {"pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero"}) {
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (hwloc_topology_load(raw) != 0) return nullptr;
  return topology;
}

// The kernel's cpumap format, as wide as the machine's complete CPU set so that every domain's
// mask has the same number of words (as node*/cpumap does).
std::string formatCpuSet(hwloc_const_bitmap_t set, int highestCpu) {
  int words = highestCpu < 0 ? 1 : highestCpu / 32 + 1;
  std::string mask;
  for (int word = words - 1; word >= 0; --word) {
    // hwloc hands the set out in unsigned longs (64 bits on Linux x86_64/arm64/ppc64).
    constexpr unsigned kBitsPerLong = 8 * sizeof(unsigned long);
    unsigned firstBit = static_cast<unsigned>(word) * 32;
    unsigned long chunk = hwloc_bitmap_to_ith_ulong(set, firstBit / kBitsPerLong);
    unsigned shift = firstBit % kBitsPerLong;
    auto bits = static_cast<uint32_t>(chunk >> shift);
    // Like the kernel, the top word has only the digits the CPU count needs ("3" on a
    // 2-CPU machine, "ffff,ffffffff,ffffffff" on an 80-CPU one).
    int bitsInWord = word == words - 1 ? highestCpu + 1 - word * 32 : 32;
    int digits = std::max(1, (bitsInWord + 3) / 4);
    char text[16];
    std::snprintf(text, sizeof(text), "%0*x", digits, bits);
    if (!mask.empty()) mask += ',';
    mask += text;
  }
  return mask;
}

std::string hex4(unsigned value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", value);
  return text;
}

std::string busIdOf(const HwlocPci& pci) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain), pci.bus,
                pci.dev, pci.func);
  return text;
}

// The upstream PCI attributes of a function or of a PCI-to-PCI bridge; nullptr for host bridges
// and everything that is not on PCI.
const HwlocPci* pciAttributes(hwloc_obj_t object) {
  if (object->type == HWLOC_OBJ_PCI_DEVICE) return &object->attr->pcidev;
  if (object->type == HWLOC_OBJ_BRIDGE &&
      object->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
    return &object->attr->bridge.upstream.pci;
  }
  return nullptr;
}

PciFunction describeFunction(hwloc_topology_t topology, hwloc_obj_t object, const HwlocPci& pci,
                             const std::string& sysfsRoot) {
  PciFunction function;
  function.attrs.busId = busIdOf(pci);
  // hwloc keeps class and subclass only; sysfs (read below) adds the programming interface.
  function.attrs.pciClass = hex4(pci.class_id) + "00";
  function.attrs.vendor = hex4(pci.vendor_id);
  function.attrs.device = hex4(pci.device_id);
  function.attrs.subsystemVendor = hex4(pci.subvendor_id);
  function.attrs.subsystemDevice = hex4(pci.subdevice_id);
  readPciLink(sysfsRoot, function.attrs);
  if (const HwlocPci* parent = object->parent ? pciAttributes(object->parent) : nullptr;
      parent && object->parent->type == HWLOC_OBJ_BRIDGE) {
    function.parentBusId = busIdOf(*parent);
  }
  // The NUMA domain is the one of the first non-I/O ancestor, when it covers exactly one.
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, object);
  if (ancestor && ancestor->nodeset && hwloc_bitmap_weight(ancestor->nodeset) == 1) {
    function.numaId = hwloc_bitmap_first(ancestor->nodeset);
  }
  return function;
}

}  // namespace

bool scanWithHwloc(const std::string& sysfsRoot, HostInventory& inventory) {
  TopologyHandle topology = loadTopology();
  if (!topology) {
    LOOM_WARN(GRAPH, "hwloc could not load this machine's topology; reading sysfs instead");
    return false;
  }
  hwloc_topology_t topo = topology.get();
  inventory.source = "hwloc";

  int highestCpu = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(topo));
  int numaCount = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numaCount; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    // Memory-only domains (GPU memory on Grace Hopper, CXL expanders) have no CPU to hang
    // devices from.
    if (!numa->cpuset || hwloc_bitmap_iszero(numa->cpuset)) continue;
    inventory.numaDomains.push_back(
        NumaDomain{static_cast<int>(numa->os_index), formatCpuSet(numa->cpuset, highestCpu)});
  }

  // Every package of a host is the same part: the first one names it.
  if (hwloc_obj_t package = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0)) {
    if (const char* vendor = hwloc_obj_get_info_by_name(package, "CPUVendor")) {
      inventory.cpu.vendor = vendor;
    }
    if (const char* family = hwloc_obj_get_info_by_name(package, "CPUFamilyNumber")) {
      inventory.cpu.familyId = std::atoi(family);
    }
    if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModelNumber")) {
      inventory.cpu.modelId = std::atoi(model);
    }
  }

  for (hwloc_obj_t object = hwloc_get_next_pcidev(topo, nullptr); object;
       object = hwloc_get_next_pcidev(topo, object)) {
    inventory.pci.push_back(describeFunction(topo, object, object->attr->pcidev, sysfsRoot));
  }
  for (hwloc_obj_t object = hwloc_get_next_bridge(topo, nullptr); object;
       object = hwloc_get_next_bridge(topo, object)) {
    if (const HwlocPci* pci = pciAttributes(object)) {
      inventory.pci.push_back(describeFunction(topo, object, *pci, sysfsRoot));
    }
  }
  return true;
}

}  // namespace loom::topology

#else  // !LOOM_HAVE_HWLOC

namespace loom::topology {

bool scanWithHwloc(const std::string&, HostInventory&) { return false; }

}  // namespace loom::topology

#endif
