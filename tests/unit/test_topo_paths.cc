// SPDX-License-Identifier: Apache-2.0
// Path types, bandwidths and policies on machines built in code, where the right answer can be
// read off the drawing in each test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "topology/paths.h"
#include "topology/system.h"

namespace loom::topology {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, hadOld_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { hadOld_ ? (void)setenv(name_, old_.c_str(), 1) : (void)unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool hadOld_ = false;
};

struct Builder {
  System system;
  int cpu(int numa, const std::string& vendor = "GenuineIntel") {
    Node node;
    node.type = NodeType::Cpu;
    node.cpu.numaId = numa;
    node.cpu.arch = "x86_64";
    node.cpu.vendor = vendor;
    return system.addNode(node);
  }
  int pci(int parent, double bw = 24) {
    Node node;
    node.type = NodeType::Pci;
    const int index = system.addNode(node);
    system.connect(parent, index, LinkType::Pci, bw);
    return index;
  }
  int gpu(int parent, int dev, bool gdr = true, double bw = 24) {
    Node node;
    node.type = NodeType::Gpu;
    node.gpu.dev = dev;
    node.gpu.rank = dev;
    node.gpu.sm = 80;
    node.gpu.gdr = gdr;
    const int index = system.addNode(node);
    system.connect(parent, index, LinkType::Pci, bw);
    return index;
  }
  int nic(int parent, int dev, bool gdr = true, double bw = 12) {
    Node card;
    card.type = NodeType::Nic;
    const int nicIndex = system.addNode(card);
    system.connect(parent, nicIndex, LinkType::Pci, 24);
    Node port;
    port.type = NodeType::Net;
    port.net.dev = dev;
    port.net.gdr = gdr;
    port.net.name = "mlx5_" + std::to_string(dev);
    const int net = system.addNode(port);
    system.connect(nicIndex, net, LinkType::Network, bw);
    return net;
  }
};

// cpu0 ==SYS== cpu1
// cpu0 -- sw0 -- {gpu0, gpu1, nic0/net0}
// cpu0 -- sw1 -- {sw1a -- gpu2, sw1b -- gpu5}
// cpu0 -- sw3 -- gpu3
// cpu1 -- sw4 -- gpu4
struct PcieBox {
  Builder b;
  int cpu0, cpu1, gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, net0;
  explicit PcieBox(bool gpu0Gdr = true, bool netGdr = true) {
    cpu0 = b.cpu(0);
    cpu1 = b.cpu(1);
    b.system.connect(cpu0, cpu1, LinkType::InterSocket, 20);
    const int sw0 = b.pci(cpu0);
    gpu0 = b.gpu(sw0, 0, gpu0Gdr);
    gpu1 = b.gpu(sw0, 1);
    net0 = b.nic(sw0, 0, netGdr);
    const int sw1 = b.pci(cpu0);
    gpu2 = b.gpu(b.pci(sw1), 2);
    gpu5 = b.gpu(b.pci(sw1), 5);
    gpu3 = b.gpu(b.pci(cpu0), 3);
    gpu4 = b.gpu(b.pci(cpu1), 4);
  }
};

PathPolicy allowAll() {
  PathPolicy policy;
  policy.p2pLevel = PathType::Sys;
  policy.netGdrLevel = PathType::Sys;
  return policy;
}

TEST(TopoPaths, NamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(PathType::Dis); ++i) {
    const auto type = static_cast<PathType>(i);
    EXPECT_EQ(parsePathType(pathTypeName(type)), type);
  }
  EXPECT_EQ(parsePathType("pxb"), PathType::Pxb);
  EXPECT_EQ(parsePathType("8"), PathType::Sys);
  EXPECT_FALSE(parsePathType("FAR").has_value());
}

TEST(TopoPaths, PciTypesAndBandwidth) {
  PcieBox box;
  const PathTable paths(box.b.system, allowAll());
  EXPECT_EQ(paths.path(box.gpu0, box.gpu0).type, PathType::Loc);
  EXPECT_EQ(paths.path(box.gpu0, box.gpu1).type, PathType::Pix);
  EXPECT_EQ(paths.path(box.gpu0, box.gpu1).hops.size(), 2u);
  EXPECT_EQ(paths.path(box.gpu2, box.gpu5).type, PathType::Pxb);
  EXPECT_EQ(paths.path(box.gpu0, box.gpu3).type, PathType::Phb);
  EXPECT_EQ(paths.path(box.gpu0, box.gpu4).type, PathType::Sys);
  EXPECT_DOUBLE_EQ(paths.path(box.gpu0, box.gpu4).bandwidth, 20);  // the inter-socket link
  EXPECT_EQ(paths.path(box.gpu0, box.net0).type, PathType::Pix);
  EXPECT_DOUBLE_EQ(paths.path(box.gpu0, box.net0).bandwidth, 12);  // the port
  EXPECT_EQ(paths.path(box.gpu4, box.net0).type, PathType::Sys);
  EXPECT_EQ(paths.path(box.gpu0, box.cpu0).type, PathType::Phb);
  EXPECT_THROW(paths.path(-1, 0), Error);
}

TEST(TopoPaths, DefaultP2pLevelStopsAtPciSwitchesOnIntel) {
  PcieBox box;
  const PathTable paths(box.b.system, PathPolicy{});
  EXPECT_TRUE(paths.p2pAllowed(box.gpu0, box.gpu1));   // PIX
  EXPECT_TRUE(paths.p2pAllowed(box.gpu2, box.gpu5));   // PXB
  EXPECT_FALSE(paths.p2pAllowed(box.gpu0, box.gpu3));  // PHB
  EXPECT_FALSE(paths.p2pAllowed(box.gpu0, box.gpu4));  // SYS
  // Not allowed: through host memory on the sender's CPU.
  EXPECT_EQ(paths.path(box.gpu0, box.gpu4).type, PathType::Sys);
  EXPECT_EQ(paths.path(box.gpu0, box.gpu3).type, PathType::Phb);
}

TEST(TopoPaths, DefaultP2pLevelOnAmdAllowsSys) {
  Builder b;
  const int cpu0 = b.cpu(0, "AuthenticAMD");
  const int cpu1 = b.cpu(1, "AuthenticAMD");
  b.system.connect(cpu0, cpu1, LinkType::InterSocket, 40);
  const int g0 = b.gpu(b.pci(cpu0), 0);
  const int g1 = b.gpu(b.pci(cpu1), 1);
  const PathTable paths(b.system, PathPolicy{});
  EXPECT_TRUE(paths.p2pAllowed(g0, g1));
}

TEST(TopoPaths, P2pLevelFromEnvironment) {
  PcieBox box;
  {
    ScopedEnv env("LOOM_P2P_LEVEL", "PIX");
    const PathTable paths(box.b.system, PathPolicy::fromEnvironment());
    EXPECT_TRUE(paths.p2pAllowed(box.gpu0, box.gpu1));
    EXPECT_FALSE(paths.p2pAllowed(box.gpu2, box.gpu5));
    // Rerouted through the CPU: the PXB pair now crosses the root complex.
    EXPECT_EQ(paths.path(box.gpu2, box.gpu5).type, PathType::Phb);
  }
  {
    ScopedEnv env("LOOM_P2P_LEVEL", "4");  // NCCL's legacy integer for SYS
    const PathTable paths(box.b.system, PathPolicy::fromEnvironment());
    EXPECT_TRUE(paths.p2pAllowed(box.gpu0, box.gpu4));
  }
  {
    ScopedEnv env("LOOM_P2P_LEVEL", "1");  // legacy PIX
    EXPECT_EQ(PathPolicy::fromEnvironment().p2pLevel, PathType::Pix);
  }
  {
    ScopedEnv env("LOOM_P2P_LEVEL", "LOC");
    const PathTable paths(box.b.system, PathPolicy::fromEnvironment());
    EXPECT_FALSE(paths.p2pAllowed(box.gpu0, box.gpu1));
    EXPECT_EQ(paths.path(box.gpu0, box.gpu1).type, PathType::Phb);
  }
  {
    // An unknown level is the registry's warning (printed whatever LOOM_DEBUG says), and the
    // default applies; it used to be an error.
    ScopedEnv env("LOOM_P2P_LEVEL", "sideways");
    testing::internal::CaptureStderr();
    EXPECT_FALSE(PathPolicy::fromEnvironment().p2pLevel.has_value());
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_NE(printed.find("LOOM_P2P_LEVEL=\"sideways\": not one of"), std::string::npos) << printed;
  }
}

TEST(TopoPaths, GdrPolicy) {
  {
    PcieBox box;
    const PathTable paths(box.b.system, PathPolicy{});
    EXPECT_TRUE(paths.gdrAllowed(box.gpu0, box.net0));   // PIX <= PXB
    EXPECT_FALSE(paths.gdrAllowed(box.gpu3, box.net0));  // PHB > PXB
    ScopedEnv env("LOOM_NET_GDR_LEVEL", "PHB");
    const PathTable wide(box.b.system, PathPolicy::fromEnvironment());
    EXPECT_TRUE(wide.gdrAllowed(box.gpu3, box.net0));
    EXPECT_FALSE(wide.gdrAllowed(box.gpu4, box.net0));  // SYS
  }
  {
    PcieBox box(/*gpu0Gdr=*/false);
    const PathTable paths(box.b.system, PathPolicy{});
    EXPECT_FALSE(paths.gdrAllowed(box.gpu0, box.net0));
    EXPECT_TRUE(paths.gdrAllowed(box.gpu1, box.net0));
    // Without GDR the NIC reads GPU data from host memory: the route turns at the CPU.
    EXPECT_EQ(paths.path(box.gpu0, box.net0).type, PathType::Phb);
    EXPECT_EQ(paths.path(box.net0, box.gpu0).type, PathType::Phb);
  }
  {
    PcieBox box(true, /*netGdr=*/false);
    const PathTable paths(box.b.system, PathPolicy{});
    EXPECT_FALSE(paths.gdrAllowed(box.gpu0, box.net0));
  }
  {
    PcieBox box;
    ScopedEnv env("LOOM_NET_GDR_LEVEL", "0");  // legacy LOC: never
    const PathTable paths(box.b.system, PathPolicy::fromEnvironment());
    EXPECT_FALSE(paths.gdrAllowed(box.gpu0, box.net0));
  }
}

// Four GPUs on their own root ports, NVLink chain 0-1-2-3 (one link each, 20 GB/s).
TEST(TopoPaths, NvlinkAndNvb) {
  Builder b;
  const int cpu = b.cpu(0);
  int g[4];
  for (int i = 0; i < 4; ++i) g[i] = b.gpu(b.pci(cpu), i);
  for (int i = 0; i + 1 < 4; ++i) b.system.connect(g[i], g[i + 1], LinkType::NvLink, 20);
  const PathTable paths(b.system, allowAll());
  EXPECT_EQ(paths.path(g[0], g[1]).type, PathType::Nvl);
  EXPECT_DOUBLE_EQ(paths.path(g[0], g[1]).bandwidth, 20);
  EXPECT_EQ(paths.path(g[0], g[2]).type, PathType::Nvb);
  EXPECT_EQ(paths.path(g[0], g[2]).hops.size(), 2u);
  // Two GPUs in between: not NVB, the PCI route through the CPU.
  EXPECT_EQ(paths.path(g[0], g[3]).type, PathType::Phb);
  EXPECT_DOUBLE_EQ(paths.path(g[0], g[3]).bandwidth, 24);
}

TEST(TopoPaths, NvSwitchIsNvl) {
  Builder b;
  const int cpu = b.cpu(0);
  Node fabric;
  fabric.type = NodeType::NvSwitch;
  const int nvs = b.system.addNode(fabric);
  int g[4];
  for (int i = 0; i < 4; ++i) {
    g[i] = b.gpu(b.pci(cpu), i);
    b.system.connect(g[i], nvs, LinkType::NvLink, 300);
  }
  const PathTable paths(b.system, PathPolicy{});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) {
        EXPECT_EQ(paths.path(g[i], g[j]).type, PathType::Nvl);
        EXPECT_DOUBLE_EQ(paths.path(g[i], g[j]).bandwidth, 300);
        EXPECT_TRUE(paths.p2pAllowed(g[i], g[j]));
      }
}

// gpu0 shares a switch with the NIC, gpu1 hangs elsewhere but has NVLink to gpu0: gpu1 should
// reach the NIC through gpu0 (PXN) instead of through the CPU.
TEST(TopoPaths, PxnThroughNvlinkPeer) {
  Builder b;
  const int cpu = b.cpu(0);
  const int sw0 = b.pci(cpu);
  const int g0 = b.gpu(sw0, 0);
  const int net = b.nic(sw0, 0);
  const int g1 = b.gpu(b.pci(cpu), 1);
  b.system.connect(g0, g1, LinkType::NvLink, 40);
  const PathTable paths(b.system, PathPolicy{});
  EXPECT_EQ(paths.path(g0, net).type, PathType::Pix);
  EXPECT_EQ(paths.path(g1, net).type, PathType::Pxn);
  EXPECT_DOUBLE_EQ(paths.path(g1, net).bandwidth, 12);
  EXPECT_TRUE(paths.gdrAllowed(g1, net));  // judged by the proxy GPU's PIX distance
  EXPECT_EQ(paths.nearestNets(g1), std::vector<int>{net});
}

TEST(TopoPaths, C2cLink) {
  Builder b;
  const int cpu = b.cpu(0, "ARM");
  b.system.node(cpu).cpu.arch = "arm64";
  Node gpuNode;
  gpuNode.type = NodeType::Gpu;
  gpuNode.gpu.dev = 0;
  const int g = b.system.addNode(gpuNode);
  b.system.connect(g, cpu, LinkType::C2c, 450);
  const PathTable paths(b.system, PathPolicy{});
  EXPECT_EQ(paths.path(g, cpu).type, PathType::C2c);
  EXPECT_DOUBLE_EQ(paths.path(g, cpu).bandwidth, 450);
}

TEST(TopoPaths, NearestNetsRankByTypeThenBandwidthThenDev) {
  Builder b;
  const int cpu = b.cpu(0);
  const int sw = b.pci(cpu);
  const int g0 = b.gpu(sw, 0);
  const int netA = b.nic(sw, 1, true, 12);
  const int netB = b.nic(sw, 0, true, 12);
  const int netFast = b.nic(b.pci(cpu), 2, true, 24);  // faster but behind the CPU
  const PathTable paths(b.system, PathPolicy{});
  EXPECT_EQ(paths.nearestNets(g0), (std::vector<int>{netB, netA}));  // tie: dev order
  (void)netFast;
  // Same type, wider port wins.
  Builder c;
  const int cpu2 = c.cpu(0);
  const int sw2 = c.pci(cpu2);
  const int h0 = c.gpu(sw2, 0);
  c.nic(sw2, 0, true, 12);
  const int wide = c.nic(sw2, 1, true, 24);
  const PathTable paths2(c.system, PathPolicy{});
  EXPECT_EQ(paths2.nearestNets(h0), std::vector<int>{wide});
}

TEST(TopoPaths, RoutesDoNotCrossGpusOrNets) {
  // Two CPUs joined only through a GPU's PCI links would be a route through the GPU: it must
  // not be used.
  Builder b;
  const int cpu0 = b.cpu(0);
  const int cpu1 = b.cpu(1);
  const int g = b.gpu(cpu0, 0);
  b.system.connect(g, cpu1, LinkType::Pci, 24);
  const PathTable paths(b.system, allowAll());
  EXPECT_EQ(paths.path(cpu0, cpu1).type, PathType::Dis);
  EXPECT_EQ(paths.path(g, cpu1).type, PathType::Phb);
}

}  // namespace
}  // namespace loom::topology
