// SPDX-License-Identifier: Apache-2.0
// The communicator and the topology engine: with LOOM_TOPO_FILE naming an 8-GPU machine, 8
// CPU ranks take the ring the search chose, log it, and still compute exact results in that
// order; ranks that disagree on the file fail init; a bad file is named in the error; the
// dump variables write files that load again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <loom.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/multiprocess.h"
#include "topology/topo_xml.h"
#include "topology/topology_engine.h"

namespace loom::test {
namespace {

namespace fs = std::filesystem;

std::string dataFile(const std::string& name) {
  const char* root = std::getenv("LOOM_TEST_DATA");
  return std::string(root != nullptr ? root : "tests/data") + "/topo/synthetic/" + name;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path scratchDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("loom-topo-comm-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ringOrderLine(const std::string& log) {
  const size_t at = log.find("ring order ");
  if (at == std::string::npos) return "";
  return log.substr(at, log.find(" (", at) - at);
}

TEST(TopologyComm, RanksFollowTheSearchedRingAndStayExact) {
  const std::string file = dataFile("dgx1-v100x8-hybrid-cube-mesh.xml");
  ASSERT_TRUE(fs::exists(file)) << file;
  constexpr int kRanks = 8;
  const auto outcomes = runRanksWithUniqueId(kRanks, [&](int rank, const loomUniqueId& id) {
    setenv("LOOM_TOPO_FILE", file.c_str(), 1);
    setenv("LOOM_ALGO", "ring", 1);  // large and small calls all take the ring schedules
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, kRanks, id, rank) == loomSuccess, loomGetLastError(nullptr));
    // All-reduce: every element sums to a known integer.
    const size_t count = 1001;
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i % 7));
    LOOM_REQUIRE(loomAllReduce(data.data(), data.data(), count, loomFloat32, loomSum, comm, nullptr) == loomSuccess,
                 loomGetLastError(comm));
    for (size_t i = 0; i < count; ++i) {
      LOOM_REQUIRE(data[i] == static_cast<float>(36 * (i % 7)), "all-reduce element " + std::to_string(i));
    }
    // All-gather: block r comes from rank r whatever the ring order.
    std::vector<int32_t> mine(5, rank), all(5 * kRanks, -1);
    LOOM_REQUIRE(loomAllGather(mine.data(), all.data(), 5, loomInt32, comm, nullptr) == loomSuccess,
                 loomGetLastError(comm));
    for (int r = 0; r < kRanks; ++r) LOOM_REQUIRE(all[static_cast<size_t>(r) * 5] == r, "all-gather block");
    // Reduce-scatter: rank r gets block r summed.
    std::vector<int32_t> input(3 * kRanks), output(3, -1);
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int32_t>(i / 3);
    LOOM_REQUIRE(loomReduceScatter(input.data(), output.data(), 3, loomInt32, loomSum, comm, nullptr) == loomSuccess,
                 loomGetLastError(comm));
    LOOM_REQUIRE(output[0] == kRanks * rank, "reduce-scatter block");
    // Broadcast from a root in the middle of the ring.
    std::vector<int32_t> value(4, rank == 5 ? 77 : 0);
    LOOM_REQUIRE(loomBroadcast(value.data(), value.data(), 4, loomInt32, 5, comm, nullptr) == loomSuccess,
                 loomGetLastError(comm));
    LOOM_REQUIRE(value[3] == 77, "broadcast");
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
  }, 240);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// As a user runs it: loomrun, 8 ranks, INFO logs of the GRAPH subsystem. Every rank logs the
// searched rings and trees and the ring order it took — the order the engine finds.
TEST(TopologyComm, LoomrunLogsTheChosenRings) {
  const std::string file = dataFile("dgx1-v100x8-hybrid-cube-mesh.xml");
  const char* loomrun = std::getenv("LOOMRUN");
  const char* hello = std::getenv("LOOM_HELLO_EXE");
  if (loomrun == nullptr || hello == nullptr) GTEST_SKIP() << "LOOMRUN / LOOM_HELLO_EXE not set (run under meson test)";
  const std::string command = "LOOM_TOPO_FILE='" + file + "' LOOM_DEBUG=INFO LOOM_DEBUG_SUBSYS=GRAPH LOOM_ALGO=ring '" +
                              loomrun + "' -n 8 --timeout 120 '" + hello + "' 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t got; (got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, got);
  ASSERT_EQ(::pclose(pipe), 0) << output;

  topology::TopologyRequest request;
  request.topoFile = file;
  const auto expected = topology::analyzeTopology(request);
  ASSERT_FALSE(expected->ring.channels.empty());
  std::string expectedOrder = "ring order";
  // append, not += " " + ...: GCC 12 at -O3 misreads that (a false -Wstringop-overflow).
  for (int dev : expected->ring.channels[0].gpus) expectedOrder.append(" ").append(std::to_string(dev));
  // Rank 0's order is not the identity on this machine, or the test would prove nothing.
  EXPECT_NE(expectedOrder, "ring order 0 1 2 3 4 5 6 7");

  std::istringstream lines(output);
  int orders = 0, rings = 0, trees = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("ring order ") != std::string::npos) {
      ++orders;
      EXPECT_EQ(ringOrderLine(line), expectedOrder) << line;
    }
    if (line.find("RING: " + std::to_string(expected->ring.nChannels) + " channel") != std::string::npos) ++rings;
    if (line.find("TREE: ") != std::string::npos) ++trees;
  }
  EXPECT_EQ(orders, 8) << output;
  EXPECT_EQ(rings, 8) << output;
  EXPECT_EQ(trees, 8) << output;
}

TEST(TopologyComm, RanksWithDifferentTopologiesFailInit) {
  const std::string first = dataFile("dgx1-v100x8-hybrid-cube-mesh.xml");
  const std::string second = dataFile("pcie-2socket-gpu8-nic2.xml");
  const auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    setenv("LOOM_TOPO_FILE", (rank == 0 ? first : second).c_str(), 1);
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRank(&comm, 2, id, rank);
    const std::string error = loomGetLastError(nullptr);
    LOOM_REQUIRE(result == loomInvalidUsage, "init returned " + std::to_string(result) + ": " + error);
    LOOM_REQUIRE(error.find("LOOM_TOPO_FILE") != std::string::npos, error);
  }, 120);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(TopologyComm, AnUnreadableTopologyFileIsNamed) {
  const auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    setenv("LOOM_TOPO_FILE", "/nonexistent/machine.xml", 1);
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRank(&comm, 2, id, rank);
    const std::string error = loomGetLastError(nullptr);
    LOOM_REQUIRE(result != loomSuccess, "init succeeded");
    LOOM_REQUIRE(error.find("/nonexistent/machine.xml") != std::string::npos, error);
  }, 120);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(TopologyComm, DumpVariablesWriteFilesThatLoadAgain) {
  const fs::path dir = scratchDir("dump");
  const std::string topo = (dir / "host.xml").string();
  const std::string graph = (dir / "graph.xml").string();
  const auto outcomes = runRanksWithUniqueId(2, [&](int rank, const loomUniqueId& id) {
    setenv("LOOM_TOPO_DUMP_FILE", topo.c_str(), 1);
    setenv("LOOM_GRAPH_DUMP_FILE", graph.c_str(), 1);
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
  }, 120);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
  ASSERT_TRUE(fs::exists(topo));
  ASSERT_TRUE(fs::exists(graph));
  const topology::System system = topology::readTopologyFile(topo);
  EXPECT_FALSE(system.nodesOfType(topology::NodeType::Cpu).empty());
  EXPECT_NE(readFile(graph).find("<graphs"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::test
