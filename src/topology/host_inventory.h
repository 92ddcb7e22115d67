// SPDX-License-Identifier: Apache-2.0
// What host discovery collects before it builds a System: NUMA domains, the CPU's identity, PCI
// functions with their upstream bridge, and network ports. Two scanners fill it (hwloc when
// Loom is built with it, plain sysfs otherwise) so that the rules that turn hardware into a
// model (which devices are GPUs or NICs, which bridges matter, where a bond hangs) live in one
// place, discover_model.cc. Internal to topology/: the readers take the sysfs and proc roots
// as arguments so tests can point them at a fake tree in a temporary directory.
#pragma once

#include <string>
#include <vector>

#include "topology/system.h"

namespace loom::topology {

// Ethernet ports whose speed sysfs does not know (virtio reports -1, some drivers refuse the
// read): NCCL's socket transport assumes 10 Gb/s in that case, and so does Loom.
constexpr double kDefaultNetSpeedMbps = 10000.0;

struct NumaDomain {
  int numaId = 0;
  std::string affinity;  // kernel cpumap format: 32-bit hex words, most significant first
};

struct PciFunction {
  PciAttributes attrs;
  // Bus id of the PCI bridge right above this function; "" when it sits on a root bus (then
  // it is a root port, a root-complex endpoint or a device of a virtual machine's flat bus).
  std::string parentBusId;
  int numaId = -1;  // -1: the platform does not say (single-socket machines, many VMs)
};

struct NetPort {
  NetAttributes attrs;      // name, speedMbps, port, guid (dev is assigned by the model builder)
  std::string pciBusId;     // the PCI function behind it; "" for a virtual device (bond)
  int numaId = -1;          // for virtual devices: the NUMA domain of their first member
  bool infiniband = false;  // an RDMA port from /sys/class/infiniband
  std::string linkLayer;    // RDMA ports: "InfiniBand" or "Ethernet" (RoCE)
};

struct HostInventory {
  CpuAttributes cpu;  // arch/vendor/family/model; numaId and affinity are per NumaDomain
  std::vector<NumaDomain> numaDomains;
  std::vector<PciFunction> pci;
  std::vector<NetPort> nets;
  std::string source;  // "hwloc" or "sysfs"
};

// ---- sysfs and /proc readers (discover_sysfs.cc) ----

// NUMA domains with CPUs from <sysfs>/devices/system/node/node*/cpumap (memory-only domains
// are left out); one domain 0 covering every online CPU when the kernel has no NUMA support.
std::vector<NumaDomain> readNumaDomains(const std::string& sysfsRoot);
// Every function under <sysfs>/bus/pci/devices with its parent bridge, class, ids, current
// link speed/width and NUMA node.
std::vector<PciFunction> readPciFunctions(const std::string& sysfsRoot);
// Reads the link speed/width (and the full 24-bit class) of one function, where readable.
void readPciLink(const std::string& sysfsRoot, PciAttributes& attrs);
// RDMA ports (<sysfs>/class/infiniband/*/ports/*) that are ACTIVE, then network interfaces
// (<sysfs>/class/net/*) that are neither loopback nor on a function with an RDMA device, nor
// virtual unless they are a bond.
std::vector<NetPort> readNetPorts(const std::string& sysfsRoot);
// vendor_id, "cpu family" and "model" from /proc/cpuinfo text; arch from uname(2).
CpuAttributes parseCpuInfo(const std::string& cpuinfoText);
std::string machineArch();  // "x86_64", "arm64", "ppc64" (NCCL's spelling)

// Small parsers, exposed for tests.
// "100 Gb/sec (4X EDR)" -> 100000 Mb/s; unparsable -> 0.
double parseRdmaRateMbps(const std::string& rate);
// "fe80:0000:0000:0001" or "0x..." -> 64-bit value; unparsable -> 0.
uint64_t parseGuid(const std::string& text);
// The last path component shaped like a PCI address ("0000:3b:00.0"), lower case; "" if none.
std::string lastPciBusIdInPath(const std::string& path);
// "0000:00:1f.2"-shaped (domain present).
bool isPciBusId(const std::string& text);

// ---- hwloc (discover_hwloc.cc) ----

// Fills numaDomains, pci and the CPU identity from hwloc; false when Loom was built without
// hwloc or hwloc could not load the topology (the caller then uses the sysfs readers).
bool scanWithHwloc(const std::string& sysfsRoot, HostInventory& inventory);

// ---- NVML (discover_nvml.cc) ----

// For the NVIDIA GPUs in `system`: compute capability and NVLink peers through NVML, loaded
// with dlopen. Peers that are GPUs become GPU<->GPU NvLink links; anything else is taken to be
// an NVSwitch and folded into the system's one NvSwitch node. No NVML: an INFO line, nothing
// changes.
void addNvmlInformation(System& system);

// ---- the model (discover_model.cc) ----

// Turns an inventory into a System (see discover.h for the shape).
System buildHostSystem(const HostInventory& inventory);

}  // namespace loom::topology
