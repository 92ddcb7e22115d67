// SPDX-License-Identifier: Apache-2.0
// Discovery of the machine Loom runs on, as a System (system.h) that the XML writer can dump
// and the path and graph searches can use.
//
// Sources: hwloc (when Loom is built with it) for NUMA domains, the CPU and the PCI tree;
// sysfs for PCI link speed/width, network interface speeds, RDMA ports and bonds (and for
// everything when hwloc is absent); NVML, loaded with dlopen only if libnvidia-ml.so.1 exists,
// for GPU compute capability and NVLink peers. A missing GPU driver is not an error: a GPU-less
// machine yields CPU nodes, their NICs and network ports.
//
// Shape of the result: one CPU node per NUMA domain (pairwise inter-socket links); PCI bridges
// on the way to a GPU or NIC as PCI nodes (root ports are left out, as in NCCL's dumps); GPUs
// (class 0x03, vendor NVIDIA or AMD) as GPU nodes numbered in bus order; NICs (class 0x02, or
// any function with a network port) as NIC nodes with one NET node per port; bonds, which have
// no PCI function, as a NIC without bus id under the CPU of their first member's NUMA domain,
// marked with the attribute virtual="1" on <nic>. Ports of unknown speed get 10 Gb/s.
#pragma once

#include <string>

#include "topology/system.h"

namespace loom::topology {

// This host. Never throws for a missing GPU driver; throws loom::Error only for an internal
// inconsistency.
System discoverHost();

// Where discovery reads from. Internal (tests point it at a fake sysfs tree); not a user-facing
// setting: there is deliberately no environment variable for it.
struct DiscoveryOptions {
  std::string sysfsRoot = "/sys";
  std::string procRoot = "/proc";
  // hwloc reads the real /sys: it is used only when sysfsRoot is "/sys" and Loom has hwloc.
  bool useHwloc = true;
  bool useNvml = true;
};
System discoverHost(const DiscoveryOptions& options);

}  // namespace loom::topology
