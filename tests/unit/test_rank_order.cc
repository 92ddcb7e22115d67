// SPDX-License-Identifier: Apache-2.0
// Ring order from placement: hosts stay together, CPU ranks group by package then NUMA node,
// and with a topology the ranks follow the searched ring's first channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "topology/rank_order.h"

namespace loom::topology {
namespace {

// Ring crossings between different values of `key`: each boundary a ring crosses costs 2.
template <typename Key>
int crossings(const std::vector<int>& order, Key key) {
  int count = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (key(order[i]) != key(order[(i + 1) % order.size()])) ++count;
  }
  return count;
}

TEST(RankOrder, CpuRanksCrossEachSocketBoundaryTwice) {
  std::vector<RankPlace> places;
  for (int r = 0; r < 8; ++r) places.push_back(RankPlace{1, r % 2, r % 2});  // sockets interleaved
  const RingOrder order = chooseRingOrder(places, nullptr, 0);
  ASSERT_EQ(order.ranks.size(), 8u);
  EXPECT_EQ(order.ranks, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(crossings(order.ranks, [&](int r) { return places[r].package; }), 2);
  // Interleaved rank order would cross 8 times.
  EXPECT_EQ(crossings(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, [&](int r) { return places[r].package; }), 8);
}

TEST(RankOrder, NumaNodesWithinASocketAreGroupedToo) {
  std::vector<RankPlace> places;
  const int numa[] = {3, 0, 2, 1, 3, 0, 2, 1};
  for (int r = 0; r < 8; ++r) places.push_back(RankPlace{1, numa[r] / 2, numa[r]});
  const RingOrder order = chooseRingOrder(places, nullptr, 0);
  EXPECT_EQ(order.ranks, (std::vector<int>{1, 5, 3, 7, 2, 6, 0, 4}));
  EXPECT_EQ(crossings(order.ranks, [&](int r) { return places[r].numaNode; }), 4);
}

TEST(RankOrder, HostsStayTogetherInOrderOfTheirFirstRank) {
  std::vector<RankPlace> places;
  const uint64_t host[] = {7, 9, 7, 9, 5, 5};
  for (uint64_t h : host) places.push_back(RankPlace{h, 0, 0});
  const RingOrder order = chooseRingOrder(places, nullptr, 0);
  EXPECT_EQ(order.ranks, (std::vector<int>{0, 2, 1, 3, 4, 5}));
}

TEST(RankOrder, RanksFollowTheTopologyRing) {
  Graph ring;
  ring.nChannels = 2;
  ring.channels = {Channel{{0, 3, 2, 1, 5, 6, 7, 4}, -1, -1}, Channel{{0, 4, 7, 6, 5, 1, 2, 3}, -1, -1}};
  std::vector<RankPlace> places(8, RankPlace{1, 0, 0});
  RingOrder order = chooseRingOrder(places, &ring, 8);
  EXPECT_EQ(order.ranks, ring.channels[0].gpus);
  EXPECT_NE(order.reason.find("topology"), std::string::npos);

  // Two hosts of 4 ranks on a 4-GPU model: each host follows the ring over its devs.
  ring.channels = {Channel{{0, 2, 3, 1}, -1, -1}};
  places = std::vector<RankPlace>(8, RankPlace{1, 0, 0});
  for (int r = 4; r < 8; ++r) places[r].hostHash = 2;
  order = chooseRingOrder(places, &ring, 4);
  EXPECT_EQ(order.ranks, (std::vector<int>{0, 2, 3, 1, 4, 6, 7, 5}));
}

TEST(RankOrder, MoreRanksThanGpusFallsBackToCpuOrder) {
  Graph ring;
  ring.nChannels = 1;
  ring.channels = {Channel{{1, 0}, -1, -1}};
  std::vector<RankPlace> places(4, RankPlace{1, 0, 0});
  const RingOrder order = chooseRingOrder(places, &ring, 2);
  EXPECT_EQ(order.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(order.reason.find("CPU"), std::string::npos);
}

TEST(RankOrder, PlacementReadsNumaAndPackageFromSysfs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("loom-sysfs-" + std::to_string(getpid()));
  fs::remove_all(root);
  // Every CPU this process may run on sits in node 1, package 3.
  fs::create_directories(root / "devices/system/node/node1");
  std::ofstream(root / "devices/system/node/node1/cpulist") << "0-1023\n";
  for (int cpu = 0; cpu < 64; ++cpu) {
    const fs::path topo = root / ("devices/system/cpu/cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(topo);
    std::ofstream(topo / "physical_package_id") << "3\n";
  }
  const RankPlace place = placeThisProcess(42, root.string());
  EXPECT_EQ(place.hostHash, 42u);
  EXPECT_EQ(place.numaNode, 1);
  EXPECT_EQ(place.package, 3);
  fs::remove_all(root);

  // No sysfs at all: unknown, not an error.
  const RankPlace unknown = placeThisProcess(1, "/nonexistent-sysfs");
  EXPECT_EQ(unknown.numaNode, -1);
  EXPECT_EQ(unknown.package, -1);
}

}  // namespace
}  // namespace loom::topology
