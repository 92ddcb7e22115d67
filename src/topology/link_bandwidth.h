// SPDX-License-Identifier: Apache-2.0
// Every bandwidth figure the topology engine uses, in one table, with where it comes from.
// All figures are GB/s in ONE direction of a link (the model charges each direction
// separately). Where a vendor publishes a bidirectional peak, the table holds half of it.
//
// Many figures are NCCL's published constants (src/graph/topo.h and the PCI generation table
// in src/graph/xml.h of NVIDIA/nccl): Loom uses the same numbers on purpose, so that its paths
// and ring bandwidths can be set beside what NCCL prints for the same machine. Those figures
// are "effective" bandwidths (what a collective sees), a little below the raw signalling rate.
#pragma once

#include <string>

#include "topology/system.h"

namespace loom::topology {

namespace bandwidth {

// A node to itself. NCCL LOC_BW: a symbolic "infinite" value that never limits a path.
constexpr double kLoc = 5000.0;

// NVLink, per link per direction, by CUDA compute capability (NCCL SM*_NVLINK_BW).
constexpr double kNvlinkSm60 = 18.0;   // Pascal P100, NVLink 1
constexpr double kNvlinkSm70 = 20.0;   // Volta V100, NVLink 2
constexpr double kNvlinkSm80 = 20.0;   // Ampere A100, NVLink 3
constexpr double kNvlinkSm86 = 12.0;   // Ampere A40/A10-class NVLink bridge
constexpr double kNvlinkSm90 = 20.6;   // Hopper H100, NVLink 4
constexpr double kNvlinkSm100 = 40.1;  // Blackwell B200, NVLink 5

// AMD Infinity Fabric (xGMI) links, per link per direction: half of AMD's published peak
// bidirectional "Infinity Fabric Link bandwidth" per link in the Instinct data sheets.
constexpr double kXgmiGfx906 = 46.0;  // MI50/MI60: 92 GB/s per link
constexpr double kXgmiGfx908 = 46.0;  // MI100: 92 GB/s per link
constexpr double kXgmiGfx90a = 50.0;  // MI210/MI250(X): 100 GB/s per link (800 GB/s over 8)
constexpr double kXgmiGfx94x = 64.0;  // MI300X/MI300A: 128 GB/s per link (896 GB/s over 7)
constexpr double kXgmiGfx950 = 76.8;  // MI350/MI355X: 153.6 GB/s per link (1075 GB/s over 7)
constexpr double kXgmiDefault = kXgmiGfx908;  // unknown gfx name: the oldest generation

// PCIe per lane, by link speed. NCCL's PCI generation table gives 15/30/60/120/240/480 per
// lane and computes a link as width x value / 80 GB/s, i.e. the per-lane figures below.
// PCI-SIG raw rates are 0.25/0.5/0.985/1.97/3.94/7.56 GB/s per lane; NCCL's figures are about
// 75% of those (TLP headers and flow control).
constexpr double kPciLaneGen1 = 0.1875;  // 2.5 GT/s
constexpr double kPciLaneGen2 = 0.375;   // 5 GT/s
constexpr double kPciLaneGen3 = 0.75;    // 8 GT/s
constexpr double kPciLaneGen4 = 1.5;     // 16 GT/s
constexpr double kPciLaneGen5 = 3.0;     // 32 GT/s
constexpr double kPciLaneGen6 = 6.0;     // 64 GT/s
// Missing, empty or "Unknown" speed: NCCL maps "Unknown" to Gen3.
constexpr double kPciLaneUnknown = kPciLaneGen3;
// link_width missing or "0" (virtual machines often report 0): NCCL assumes x16. The parent
// bridge's width is not used because virtual bridges report fictional widths (x1 on IBM's
// gx3d VSI for a bridge that carries an H100 and a 200G NIC).
constexpr int kDefaultPciWidth = 16;

// CPU socket to CPU socket, per direction (NCCL *_QPI_BW, AMD_*_BW, P9_BW, ARM_BW, ZPI_BW).
constexpr double kInterSocketIntelBdw = 6.0;   // Broadwell and older (QPI)
constexpr double kInterSocketIntelSkl = 10.0;  // Skylake, Cascade Lake, Ice Lake (UPI)
constexpr double kInterSocketIntelSpr = 22.0;  // Sapphire Rapids (UPI 2.0)
constexpr double kInterSocketIntelEmr = 40.0;  // Emerald Rapids and newer
constexpr double kInterSocketAmdZen12 = 16.0;  // Naples, Rome (Infinity Fabric)
constexpr double kInterSocketAmdZen34 = 24.0;  // Milan, Genoa
constexpr double kInterSocketAmdZen5 = 32.0;   // Turin
constexpr double kInterSocketPower = 32.0;     // POWER9 (X-Bus)
constexpr double kInterSocketArm = 6.0;        // ARM servers
constexpr double kInterSocketZhaoxin = 6.0;    // Zhaoxin (ZPI)
constexpr double kInterSocketDefault = kInterSocketIntelBdw;  // unknown: the slowest

// Network: NIC speed in Mb/s / 8000 = GB/s (so 100000 Mb/s = 12.5 GB/s; NCCL does the same).
constexpr double kNetMbpsPerGBps = 8000.0;
// A speed of 0 or missing: NCCL's NET_BW (100 Gb/s class).
constexpr double kNetDefault = 12.0;
// Above this a "Mb/s" speed is implausible (10 Tb/s per port): RCCL files for HPE Slingshot
// (cxi) give 200000000 for a 200 Gb/s port, i.e. kb/s. Such values are read as kb/s.
constexpr double kNetMaxPlausibleMbps = 10.0e6;

// Grace Hopper NVLink-C2C: <c2c count="N" bw="B"/> gives B in MB/s per link (NCCL reads
// count * bw / 1000 as GB/s); NVIDIA publishes 900 GB/s bidirectional = 450 per direction.
constexpr double kC2cMBpsPerGBps = 1000.0;
constexpr double kC2cGraceHopper = 450.0;

}  // namespace bandwidth

// Per NVLink link, one direction, for a CUDA compute capability x10 (unknown: A100's figure).
// amd: the GPU is AMD and `sm` is a CU count, not a capability: gives kXgmiDefault.
double nvlinkBandwidth(int sm, bool amd);
// Per xGMI link for an AMD gfx name ("gfx942", "gfx90a", RCCL's bare "940"); "" -> default.
double xgmiBandwidth(const std::string& gcn);
// Per NVLink/xGMI link of this GPU: xgmiBandwidth(gcn) for AMD, nvlinkBandwidth(sm) otherwise.
double gpuLinkBandwidth(const GpuAttributes& gpu);

// Per lane for a sysfs/NCCL link_speed string: "16 GT/s", "16.0 GT/s PCIe", "32 GT/s PCIe/s",
// "2.5 GT/s", "Unknown", "" (the number before "GT/s" decides; unparsable -> Gen3).
double pciLaneBandwidth(const std::string& linkSpeed);
// A whole link: lane bandwidth x width (width <= 0 -> kDefaultPciWidth).
double pciBandwidth(const std::string& linkSpeed, int width);

// Socket-to-socket bandwidth leaving a CPU of this vendor/family/model (NCCL's familyid
// encoding, base + extended<<4 such as 175 for AMD family 0x19, is understood too).
double interSocketBandwidth(const CpuAttributes& cpu);

// A network port of this speed (Mb/s; implausibly large values are read as kb/s; <= 0 ->
// kNetDefault).
double netBandwidth(double speedMbps);

// NVLink-C2C from the XML's count and per-link bw (MB/s).
double c2cBandwidth(int count, double bwMBps);

}  // namespace loom::topology
