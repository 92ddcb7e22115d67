// SPDX-License-Identifier: Apache-2.0
// Picks a figure of the table in link_bandwidth.h for a link; see there for the sources.
#include "topology/link_bandwidth.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "topology/ascii_text.h"

namespace loom::topology {

namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

// NCCL stores CPUID family as base + (extended << 4) (AMD Milan: 0xF + 0xA0 = 175); the
// architectural family is base + extended. Small values are already architectural.
int architecturalFamily(int familyId) {
  if (familyId <= 0x1f) return familyId;
  return (familyId & 0xf) + (familyId >> 4);
}

}  // namespace

double nvlinkBandwidth(int sm, bool amd) {
  if (amd) return bandwidth::kXgmiDefault;
  if (sm >= 100) return bandwidth::kNvlinkSm100;
  if (sm >= 90) return bandwidth::kNvlinkSm90;
  if (sm == 86) return bandwidth::kNvlinkSm86;
  if (sm >= 80) return bandwidth::kNvlinkSm80;
  if (sm >= 70) return bandwidth::kNvlinkSm70;
  if (sm >= 60) return bandwidth::kNvlinkSm60;
  return bandwidth::kNvlinkSm80;  // unknown capability (files without <gpu sm=...>)
}

double xgmiBandwidth(const std::string& gcn) {
  const std::string name = lowerCase(gcn);
  // RCCL writes either the full gfx name ("gfx942") or a bare number ("940").
  if (contains(name, "95")) return bandwidth::kXgmiGfx950;
  if (contains(name, "94")) return bandwidth::kXgmiGfx94x;
  if (contains(name, "90a")) return bandwidth::kXgmiGfx90a;
  if (contains(name, "908")) return bandwidth::kXgmiGfx908;
  if (contains(name, "906")) return bandwidth::kXgmiGfx906;
  return bandwidth::kXgmiDefault;
}

double gpuLinkBandwidth(const GpuAttributes& gpu) {
  return gpu.amd ? xgmiBandwidth(gpu.gcn) : nvlinkBandwidth(gpu.sm, false);
}

double pciLaneBandwidth(const std::string& linkSpeed) {
  // The number in front decides: "32 GT/s PCIe/s" and "32.0 GT/s PCIe" are both Gen5.
  const char* begin = linkSpeed.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  const double gts = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(gts) || gts <= 0) return bandwidth::kPciLaneUnknown;
  struct Generation {
    double gts;
    double perLane;
  };
  static constexpr Generation kGenerations[] = {
      {2.5, bandwidth::kPciLaneGen1},  {5.0, bandwidth::kPciLaneGen2},
      {8.0, bandwidth::kPciLaneGen3},  {16.0, bandwidth::kPciLaneGen4},
      {32.0, bandwidth::kPciLaneGen5}, {64.0, bandwidth::kPciLaneGen6},
  };
  for (const Generation& generation : kGenerations) {
    if (std::fabs(gts - generation.gts) < 0.05) return generation.perLane;
  }
  // A rate outside the known generations: scale Gen3+'s per-GT/s figure (128b/130b coding).
  return gts * (bandwidth::kPciLaneGen3 / 8.0);
}

double pciBandwidth(const std::string& linkSpeed, int width) {
  const int lanes = width > 0 ? width : bandwidth::kDefaultPciWidth;
  return pciLaneBandwidth(linkSpeed) * lanes;
}

double interSocketBandwidth(const CpuAttributes& cpu) {
  const std::string arch = lowerCase(cpu.arch);
  const std::string vendor = lowerCase(cpu.vendor);
  if (contains(arch, "ppc") || contains(arch, "power")) return bandwidth::kInterSocketPower;
  if (contains(arch, "arm") || contains(arch, "aarch64")) return bandwidth::kInterSocketArm;
  if (contains(vendor, "intel")) {
    // Models: 0x55 Skylake/Cascade Lake, 0x6a/0x6c Ice Lake, 0x8f Sapphire Rapids, 0xcf
    // Emerald Rapids (CPUID display model, as NCCL writes it).
    if (cpu.modelId >= 0xcf) return bandwidth::kInterSocketIntelEmr;
    if (cpu.modelId >= 0x8f) return bandwidth::kInterSocketIntelSpr;
    if (cpu.modelId >= 0x55) return bandwidth::kInterSocketIntelSkl;
    return bandwidth::kInterSocketIntelBdw;
  }
  if (contains(vendor, "amd")) {
    const int family = architecturalFamily(cpu.familyId);
    if (family >= 0x1a) return bandwidth::kInterSocketAmdZen5;
    if (family == 0x19) return bandwidth::kInterSocketAmdZen34;
    return bandwidth::kInterSocketAmdZen12;
  }
  if (contains(vendor, "centaur") || contains(vendor, "shanghai")) {
    return bandwidth::kInterSocketZhaoxin;
  }
  return bandwidth::kInterSocketDefault;
}

double netBandwidth(double speedMbps) {
  if (!(speedMbps > 0) || !std::isfinite(speedMbps)) return bandwidth::kNetDefault;
  double mbps = speedMbps;
  if (mbps > bandwidth::kNetMaxPlausibleMbps) mbps /= 1000.0;  // given in kb/s
  return mbps / bandwidth::kNetMbpsPerGBps;
}

double c2cBandwidth(int count, double bwMBps) {
  return std::max(count, 0) * std::max(bwMBps, 0.0) / bandwidth::kC2cMBpsPerGBps;
}

}  // namespace loom::topology
