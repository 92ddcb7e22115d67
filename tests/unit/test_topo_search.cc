// SPDX-License-Identifier: Apache-2.0
// Ring and tree search, checked against what the machine's wiring allows (first principles),
// on machines built in code and on the synthetic and real topology files.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "base/error.h"
#include "topology/search.h"
#include "topology/topo_xml.h"

namespace loom::topology {
namespace {

// The acceptance bound is 1 s per search on an optimised build; sanitizer and debug builds run
// the same iterations several times slower.
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
constexpr double kSearchSeconds = 30.0;
#else
constexpr double kSearchSeconds = 1.0;
#endif

std::string dataDir() {
  const char* dir = std::getenv("LOOM_TEST_DATA");
  return dir ? std::string(dir) : std::string("tests/data");
}

System load(const std::string& relative) {
  return readTopologyFile(dataDir() + "/topo/" + relative);
}

int gpuNode(const System& system, int dev) { return system.findGpuByDev(dev, 0); }

int netNode(const System& system, int dev) {
  for (int net : system.nodesOfType(NodeType::Net))
    if (system.node(net).host == 0 && system.node(net).net.dev == dev) return net;
  return -1;
}

// Every directed link's load: bwIntra for each GPU hop of each channel (and bwInter for the
// net hops), both ways for trees.
std::map<std::pair<int, int>, double> linkLoads(const System& system, const PathTable& paths,
                                                const Graph& graph, bool multiNode) {
  std::map<std::pair<int, int>, double> load;
  auto charge = [&](int from, int to, double bw) {
    for (const LinkRef& hop : paths.path(from, to).hops) load[{hop.node, hop.link}] += bw;
  };
  const bool ring = graph.pattern == Pattern::Ring;
  for (const Channel& channel : graph.channels) {
    const size_t n = channel.gpus.size();
    for (size_t i = 0; i + 1 < n; ++i) {
      charge(gpuNode(system, channel.gpus[i]), gpuNode(system, channel.gpus[i + 1]), graph.bwIntra);
      if (!ring)
        charge(gpuNode(system, channel.gpus[i + 1]), gpuNode(system, channel.gpus[i]),
               graph.bwIntra);
    }
    if (ring && !multiNode && n > 1)
      charge(gpuNode(system, channel.gpus[n - 1]), gpuNode(system, channel.gpus[0]), graph.bwIntra);
  }
  return load;
}

void expectNoOversubscription(const System& system, const PathTable& paths, const Graph& graph,
                              bool multiNode = false) {
  for (const auto& [link, used] : linkLoads(system, paths, graph, multiNode)) {
    const double capacity =
        system.node(link.first).links[static_cast<size_t>(link.second)].bandwidth;
    EXPECT_LE(used, capacity * (1 + 1e-9))
        << system.node(link.first).label() << " link " << link.second;
  }
}

void expectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.nChannels, b.nChannels);
  EXPECT_EQ(a.bwIntra, b.bwIntra);
  EXPECT_EQ(a.bwInter, b.bwInter);
  EXPECT_EQ(a.typeIntra, b.typeIntra);
  EXPECT_EQ(a.typeInter, b.typeInter);
  ASSERT_EQ(a.channels.size(), b.channels.size());
  for (size_t c = 0; c < a.channels.size(); ++c) {
    EXPECT_EQ(a.channels[c].gpus, b.channels[c].gpus);
    EXPECT_EQ(a.channels[c].netIn, b.channels[c].netIn);
    EXPECT_EQ(a.channels[c].netOut, b.channels[c].netOut);
  }
}

void expectEveryGpuOnce(const Graph& graph, int gpus) {
  for (const Channel& channel : graph.channels) {
    std::vector<int> sorted = channel.gpus;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> expected(static_cast<size_t>(gpus));
    for (int i = 0; i < gpus; ++i) expected[static_cast<size_t>(i)] = i;
    EXPECT_EQ(sorted, expected);
  }
}

// The bandwidth a GPU can push into its NVLinks (all links of type NvLink leaving it).
double nvlinkBandwidth(const System& system, int gpu) {
  double total = 0;
  for (const Link& link : system.node(gpu).links)
    if (link.type == LinkType::NvLink) total += link.bandwidth;
  return total;
}

System nvswitchMachine(int gpus, double nvlink) {
  System system;
  Node cpu;
  cpu.type = NodeType::Cpu;
  cpu.cpu.vendor = "GenuineIntel";
  cpu.cpu.arch = "x86_64";
  const int c = system.addNode(cpu);
  Node fabric;
  fabric.type = NodeType::NvSwitch;
  const int nvs = system.addNode(fabric);
  for (int i = 0; i < gpus; ++i) {
    Node sw;
    sw.type = NodeType::Pci;
    const int s = system.addNode(sw);
    system.connect(c, s, LinkType::Pci, 24);
    Node gpu;
    gpu.type = NodeType::Gpu;
    gpu.gpu.dev = i;
    gpu.gpu.sm = 80;
    const int g = system.addNode(gpu);
    system.connect(s, g, LinkType::Pci, 24);
    system.connect(g, nvs, LinkType::NvLink, nvlink);
  }
  return system;
}

TEST(TopoSearch, CpuOnlySystemHasNoChannels) {
  System system;
  Node cpu;
  cpu.type = NodeType::Cpu;
  system.addNode(cpu);
  const PathTable paths(system, PathPolicy{});
  EXPECT_EQ(searchRings(system, paths, SearchOptions{}).nChannels, 0);
  EXPECT_EQ(searchTrees(system, paths, SearchOptions{}).nChannels, 0);
}

TEST(TopoSearch, HandBuiltNvSwitchRingsFillNvlink) {
  const System system = nvswitchMachine(8, 300);
  const PathTable paths(system, PathPolicy{});
  const Graph ring = searchRings(system, paths, SearchOptions{});
  EXPECT_EQ(ring.typeIntra, PathType::Nvl);
  EXPECT_NEAR(ring.nChannels * ring.bwIntra, 300, 1e-6);
  expectEveryGpuOnce(ring, 8);
  expectNoOversubscription(system, paths, ring);
  const Graph tree = searchTrees(system, paths, SearchOptions{});
  EXPECT_GE(tree.nChannels, 1);
  EXPECT_EQ(tree.pattern, Pattern::Tree);
  expectEveryGpuOnce(tree, 8);
  expectNoOversubscription(system, paths, tree);
}

TEST(TopoSearch, SingleGpu) {
  const System system = nvswitchMachine(1, 300);
  const PathTable paths(system, PathPolicy{});
  const Graph ring = searchRings(system, paths, SearchOptions{});
  ASSERT_GE(ring.nChannels, 1);
  EXPECT_EQ(ring.channels[0].gpus, std::vector<int>{0});
  EXPECT_GT(ring.bwIntra, 0);
}

TEST(TopoSearch, ChannelRanks) {
  Graph graph;
  graph.channels.push_back(Channel{{0, 2, 1, 3}, -1, -1});
  graph.nChannels = 1;
  EXPECT_EQ(channelRanks(graph, 0, 4, 2), (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_THROW(channelRanks(graph, 1, 4, 2), Error);
  EXPECT_THROW(channelRanks(graph, 0, 2, 1), Error);
}

class SyntheticFiles : public ::testing::Test {
 protected:
  static bool haveFile(const std::string& relative) {
    return std::filesystem::exists(dataDir() + "/topo/" + relative);
  }
};

TEST_F(SyntheticFiles, NvSwitchAggregateEqualsNvlinkBandwidth) {
  for (const char* file :
       {"synthetic/a100x8-nvswitch6-nic8.xml", "synthetic/h100x8-nvswitch4-nic8.xml"}) {
    SCOPED_TRACE(file);
    if (!haveFile(file)) GTEST_SKIP() << "missing " << file;
    const System system = load(file);
    const PathTable paths(system, PathPolicy{});
    const Graph ring = searchRings(system, paths, SearchOptions{});
    const double nvlink = nvlinkBandwidth(system, gpuNode(system, 0));
    ASSERT_GT(nvlink, 0);
    EXPECT_NEAR(ring.nChannels * ring.bwIntra, nvlink, 1e-6 * nvlink);
    EXPECT_EQ(ring.typeIntra, PathType::Nvl);
    expectEveryGpuOnce(ring, 8);
    expectNoOversubscription(system, paths, ring);
  }
}

TEST_F(SyntheticFiles, HybridCubeMeshRingsUseNvlinkOnly) {
  const char* file = "synthetic/dgx1-v100x8-hybrid-cube-mesh.xml";
  if (!haveFile(file)) GTEST_SKIP() << "missing " << file;
  const System system = load(file);
  const PathTable paths(system, PathPolicy{});
  const Graph ring = searchRings(system, paths, SearchOptions{});
  ASSERT_GE(ring.nChannels, 1);
  EXPECT_EQ(ring.typeIntra, PathType::Nvl);
  expectEveryGpuOnce(ring, 8);
  for (const Channel& channel : ring.channels)
    for (size_t i = 0; i < channel.gpus.size(); ++i) {
      const int from = gpuNode(system, channel.gpus[i]);
      const int to = gpuNode(system, channel.gpus[(i + 1) % channel.gpus.size()]);
      for (const LinkRef& hop : paths.path(from, to).hops)
        EXPECT_EQ(system.node(hop.node).links[static_cast<size_t>(hop.link)].type,
                  LinkType::NvLink);
    }
  expectNoOversubscription(system, paths, ring);
  // Six NVLinks per GPU: the rings should use them all.
  EXPECT_NEAR(ring.nChannels * ring.bwIntra, nvlinkBandwidth(system, gpuNode(system, 0)), 1e-6);
}

TEST_F(SyntheticFiles, TwoSocketRingsCrossTheSocketLinkOnceEachWay) {
  const char* file = "synthetic/pcie-2socket-gpu8-nic2.xml";
  if (!haveFile(file)) GTEST_SKIP() << "missing " << file;
  const System system = load(file);
  const PathTable paths(system, PathPolicy{});
  const Graph ring = searchRings(system, paths, SearchOptions{});
  ASSERT_GE(ring.nChannels, 1);
  expectEveryGpuOnce(ring, 8);
  for (const Channel& channel : ring.channels) {
    std::map<int, int> crossingsFrom;  // CPU the crossing leaves -> count
    int crossings = 0;
    for (size_t i = 0; i < channel.gpus.size(); ++i) {
      const int from = gpuNode(system, channel.gpus[i]);
      const int to = gpuNode(system, channel.gpus[(i + 1) % channel.gpus.size()]);
      for (const LinkRef& hop : paths.path(from, to).hops)
        if (system.node(hop.node).links[static_cast<size_t>(hop.link)].type ==
            LinkType::InterSocket) {
          ++crossings;
          ++crossingsFrom[hop.node];
        }
    }
    EXPECT_EQ(crossings, 2);
    EXPECT_EQ(crossingsFrom.size(), 2u);  // one each way
  }
  expectNoOversubscription(system, paths, ring);
}

TEST_F(SyntheticFiles, MultiNodeChannelsUseTheNearestNics) {
  for (const char* file :
       {"synthetic/a100x8-nvswitch6-nic8.xml", "synthetic/h100x8-nvswitch4-nic8.xml",
        "synthetic/dgx1-v100x8-hybrid-cube-mesh.xml", "synthetic/pcie-2socket-gpu8-nic2.xml"}) {
    SCOPED_TRACE(file);
    if (!haveFile(file)) continue;
    const System system = load(file);
    const PathTable paths(system, PathPolicy{});
    SearchOptions options;
    options.nodes = 2;
    for (const Graph& graph :
         {searchRings(system, paths, options), searchTrees(system, paths, options)}) {
      SCOPED_TRACE(patternName(graph.pattern));
      ASSERT_GE(graph.nChannels, 1);
      EXPECT_LE(graph.bwInter, graph.bwIntra + 1e-9);
      for (const Channel& channel : graph.channels) {
        ASSERT_GE(channel.netIn, 0);
        ASSERT_GE(channel.netOut, 0);
        const auto firstNearest = paths.nearestNets(gpuNode(system, channel.gpus.front()));
        EXPECT_NE(
            std::find(firstNearest.begin(), firstNearest.end(), netNode(system, channel.netIn)),
            firstNearest.end());
        const int sender =
            graph.pattern == Pattern::Ring ? channel.gpus.back() : channel.gpus.front();
        const auto lastNearest = paths.nearestNets(gpuNode(system, sender));
        EXPECT_NE(
            std::find(lastNearest.begin(), lastNearest.end(), netNode(system, channel.netOut)),
            lastNearest.end());
      }
    }
  }
}

TEST(TopoSearch, DeterministicAndFastOn16Gpus) {
  // 16 GPUs on 2 sockets, 2 GPUs per PCI switch: a hard case (no NVLink, many equal choices).
  System system;
  int cpus[2];
  for (int s = 0; s < 2; ++s) {
    Node cpu;
    cpu.type = NodeType::Cpu;
    cpu.cpu.numaId = s;
    cpu.cpu.vendor = "GenuineIntel";
    cpu.cpu.arch = "x86_64";
    cpus[s] = system.addNode(cpu);
  }
  system.connect(cpus[0], cpus[1], LinkType::InterSocket, 40);
  for (int i = 0; i < 16; ++i) {
    const int socket = i / 8;
    int sw = -1;
    if (i % 2 == 0) {
      Node pci;
      pci.type = NodeType::Pci;
      sw = system.addNode(pci);
      system.connect(cpus[socket], sw, LinkType::Pci, 24);
    } else {
      sw = system.size() - 2;  // the switch added for the previous GPU
    }
    Node gpu;
    gpu.type = NodeType::Gpu;
    gpu.gpu.dev = i;
    const int g = system.addNode(gpu);
    system.connect(sw, g, LinkType::Pci, 24);
  }
  const PathTable paths(system, PathPolicy{});
  for (const System* machine : {&system}) {
    const auto start = std::chrono::steady_clock::now();
    const Graph first = searchRings(*machine, paths, SearchOptions{});
    const Graph firstTree = searchTrees(*machine, paths, SearchOptions{});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, kSearchSeconds);
    ASSERT_GE(first.nChannels, 1);
    expectEveryGpuOnce(first, 16);
    expectSameGraph(first, searchRings(*machine, paths, SearchOptions{}));
    expectSameGraph(firstTree, searchTrees(*machine, paths, SearchOptions{}));
    expectNoOversubscription(*machine, paths, first);
  }
  const System fabric = nvswitchMachine(16, 450);
  const PathTable fabricPaths(fabric, PathPolicy{});
  const auto start = std::chrono::steady_clock::now();
  const Graph ring = searchRings(fabric, fabricPaths, SearchOptions{});
  searchTrees(fabric, fabricPaths, SearchOptions{});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            kSearchSeconds);
  EXPECT_NEAR(ring.nChannels * ring.bwIntra, 450, 1e-6);
}

TEST(TopoSearch, RealFilesYieldRingsAndTrees) {
  const std::string dir = dataDir() + "/topo/real";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".xml" || name.find(".graph.") != std::string::npos) continue;
    SCOPED_TRACE(name);
    const System system = readTopologyFile(entry.path().string());
    if (system.nodesOfType(NodeType::Gpu).empty()) continue;
    ++files;
    const PathTable paths(system, PathPolicy{});
    for (int nodes : {1, 2}) {
      SearchOptions options;
      options.nodes = nodes;
      const auto start = std::chrono::steady_clock::now();
      const Graph ring = searchRings(system, paths, options);
      const Graph tree = searchTrees(system, paths, options);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(seconds, kSearchSeconds) << "nodes " << nodes;
      std::printf("%-50s nodes %d: ring %2d x %6.2f GB/s %s/%s, tree %2d x %6.2f GB/s %s, %.3f s\n",
                  name.c_str(), nodes, ring.nChannels, ring.bwIntra, pathTypeName(ring.typeIntra),
                  pathTypeName(ring.typeInter), tree.nChannels, tree.bwIntra,
                  patternName(tree.pattern), seconds);
      EXPECT_GE(ring.nChannels, 1);
      EXPECT_GE(tree.nChannels, 1);
      EXPECT_GT(ring.bwIntra, 0);
      expectSameGraph(ring, searchRings(system, paths, options));
    }
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace loom::topology
