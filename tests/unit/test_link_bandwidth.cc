// SPDX-License-Identifier: Apache-2.0
// The bandwidth table (link_bandwidth.h): PCIe speed strings, NVLink and xGMI by generation,
// socket-to-socket links by CPU, network ports (including speeds given in kb/s) and C2C.
#include <gtest/gtest.h>

#include <utility>

#include "topology/link_bandwidth.h"

namespace loom::topology {
namespace {

TEST(LinkBandwidth, PciSpeedStrings) {
  const std::pair<const char*, double> speeds[] = {
      {"2.5 GT/s", 0.1875},    {"2.5 GT/s PCIe", 0.1875},
      {"5 GT/s", 0.375},       {"8 GT/s", 0.75},
      {"16 GT/s", 1.5},        {"16.0 GT/s PCIe", 1.5},
      {"32 GT/s PCIe/s", 3.0}, {"64.0 GT/s PCIe", 6.0},
      {"Unknown", 0.75},       {"", 0.75},
      {"garbage", 0.75}};
  for (const auto& [speed, perLane] : speeds) EXPECT_DOUBLE_EQ(pciLaneBandwidth(speed), perLane);
  EXPECT_DOUBLE_EQ(pciBandwidth("16 GT/s", 16), 24.0);        // NCCL's Gen4 x16
  EXPECT_DOUBLE_EQ(pciBandwidth("32.0 GT/s PCIe", 0), 48.0);  // width 0 -> x16
  EXPECT_DOUBLE_EQ(pciBandwidth("2.5 GT/s PCIe", 1), 0.1875);
}

TEST(LinkBandwidth, GpuLinksSocketsAndNetworks) {
  const std::pair<int, double> nvlink[] = {{60, 18.0}, {70, 20.0}, {80, 20.0},
                                           {86, 12.0}, {90, 20.6}, {100, 40.1}};
  for (const auto& [sm, perLink] : nvlink) EXPECT_DOUBLE_EQ(nvlinkBandwidth(sm, false), perLink);
  EXPECT_DOUBLE_EQ(nvlinkBandwidth(304, true), bandwidth::kXgmiDefault);
  const std::pair<const char*, double> xgmi[] = {
      {"gfx942", 64.0}, {"940", 64.0}, {"gfx950", 76.8}, {"gfx90a", 50.0}, {"gfx908", 46.0}};
  for (const auto& [gcn, perLink] : xgmi) EXPECT_DOUBLE_EQ(xgmiBandwidth(gcn), perLink);
  struct Socket {
    const char *arch, *vendor;
    int family, model;
    double expected;
  };
  const Socket sockets[] = {
      {"x86_64", "GenuineIntel", 6, 85, 10.0},
      {"x86_64", "GenuineIntel", 6, 106, 10.0},
      {"x86_64", "GenuineIntel", 6, 143, 22.0},
      {"x86_64", "GenuineIntel", 6, 79, 6.0},
      {"x86_64", "AuthenticAMD", 143, 49, 16.0},  // NCCL's encoding of family 0x17 (Rome)
      {"x86_64", "AuthenticAMD", 175, 1, 24.0},   // 0x19 (Milan/Genoa)
      {"x86_64", "AuthenticAMD", 0x1a, 2, 32.0},  // Turin, architectural encoding
      {"arm64", "", -1, -1, 6.0},
      {"ppc64", "", -1, -1, 32.0},
  };
  for (const Socket& socket : sockets) {
    CpuAttributes cpu;
    cpu.arch = socket.arch;
    cpu.vendor = socket.vendor;
    cpu.familyId = socket.family;
    cpu.modelId = socket.model;
    EXPECT_DOUBLE_EQ(interSocketBandwidth(cpu), socket.expected) << socket.vendor << socket.model;
  }
  EXPECT_DOUBLE_EQ(netBandwidth(100000), 12.5);
  EXPECT_DOUBLE_EQ(netBandwidth(400000), 50.0);
  EXPECT_DOUBLE_EQ(netBandwidth(200000000), 25.0);  // Slingshot cxi in kb/s
  EXPECT_DOUBLE_EQ(netBandwidth(0), bandwidth::kNetDefault);
  EXPECT_DOUBLE_EQ(c2cBandwidth(10, 45000), 450.0);
}

}  // namespace
}  // namespace loom::topology
