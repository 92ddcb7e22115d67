// SPDX-License-Identifier: Apache-2.0
#include "topology/rank_order.h"

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

namespace loom::topology {
namespace {

int readInt(const std::string& path, int fallback) {
  std::ifstream in(path);
  int value = fallback;
  if (!(in >> value)) return fallback;
  return value;
}

// cpu -> NUMA node, from /sys/devices/system/node/node*/cpulist ("0-3,8-11"), read once.
std::map<int, int> numaOfCpus(const std::string& sysfsRoot) {
  std::map<int, int> nodeOf;
  std::error_code error;
  const std::filesystem::path base = std::filesystem::path(sysfsRoot) / "devices/system/node";
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4) continue;
    int node = -1;
    try {
      node = std::stoi(name.substr(4));
    } catch (const std::exception&) {
      continue;
    }
    std::ifstream list(entry.path() / "cpulist");
    std::string text;
    std::getline(list, text);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(',', start);
      if (end == std::string::npos) end = text.size();
      const std::string part = text.substr(start, end - start);
      const size_t dash = part.find('-');
      try {
        const int low = std::stoi(part.substr(0, dash));
        const int high = dash == std::string::npos ? low : std::stoi(part.substr(dash + 1));
        for (int cpu = low; cpu <= high && cpu < CPU_SETSIZE; ++cpu) nodeOf[cpu] = node;
      } catch (const std::exception&) {
        break;
      }
      start = end + 1;
    }
  }
  return nodeOf;
}

}  // namespace

RankPlace placeThisProcess(uint64_t hostHash, const std::string& sysfsRoot) {
  RankPlace place;
  place.hostHash = hostHash;
  // Bound to CPUs of one node: that node. Otherwise the CPU we run on now — a hint only, but
  // the best there is for an unbound process.
  const std::map<int, int> nodeOf = numaOfCpus(sysfsRoot);
  const auto numaOfCpu = [&](int c) {
    const auto found = nodeOf.find(c);
    return found == nodeOf.end() ? -1 : found->second;
  };
  int cpu = -1;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    int node = -2;
    for (int c = 0; c < CPU_SETSIZE && node != -1; ++c) {
      if (!CPU_ISSET(c, &mask)) continue;
      const int cNode = numaOfCpu(c);
      if (node == -2) {
        node = cNode;
        cpu = c;
      } else if (cNode != node) {
        node = -1;
      }
    }
    if (node == -1) cpu = sched_getcpu();
  }
  if (cpu < 0) cpu = sched_getcpu();
  if (cpu < 0) return place;
  place.numaNode = numaOfCpu(cpu);
  place.package = readInt(sysfsRoot + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                              "/topology/physical_package_id", -1);
  return place;
}

RingOrder chooseRingOrder(const std::vector<RankPlace>& places, const Graph* ring, int topologyGpus) {
  RingOrder order;
  const int nranks = static_cast<int>(places.size());
  // Hosts in order of their lowest rank.
  std::vector<uint64_t> hosts;
  std::map<uint64_t, std::vector<int>> ranksOfHost;
  for (int r = 0; r < nranks; ++r) {
    const uint64_t host = places[static_cast<size_t>(r)].hostHash;
    if (ranksOfHost.find(host) == ranksOfHost.end()) hosts.push_back(host);
    ranksOfHost[host].push_back(r);
  }
  const bool useGpus = ring != nullptr && !ring->channels.empty() && !ring->channels[0].gpus.empty();
  bool allGpu = true;
  for (uint64_t host : hosts) {
    std::vector<int> local = ranksOfHost[host];  // by rank: local index i = i-th rank of the host
    const bool gpuMapped = useGpus && static_cast<int>(local.size()) <= topologyGpus;
    if (gpuMapped) {
      // Local index i is GPU dev i; follow channel 0's order over the devs this host uses.
      for (int dev : ring->channels[0].gpus) {
        if (dev >= 0 && dev < static_cast<int>(local.size())) order.ranks.push_back(local[static_cast<size_t>(dev)]);
      }
    } else {
      allGpu = false;
      std::stable_sort(local.begin(), local.end(), [&](int a, int b) {
        const RankPlace& pa = places[static_cast<size_t>(a)];
        const RankPlace& pb = places[static_cast<size_t>(b)];
        return std::tie(pa.package, pa.numaNode) < std::tie(pb.package, pb.numaNode);
      });
      order.ranks.insert(order.ranks.end(), local.begin(), local.end());
    }
  }
  if (static_cast<int>(order.ranks.size()) != nranks) {
    // A channel that does not cover every local index (a graph file for another machine):
    // fall back to CPU order rather than leave a rank out.
    RingOrder fallback = chooseRingOrder(places, nullptr, 0);
    fallback.reason = "topology ring does not cover this host's ranks; " + fallback.reason;
    return fallback;
  }
  order.reason = allGpu ? "ranks follow the topology's ring (local rank i = GPU dev i)"
                        : (useGpus ? "more ranks than topology GPUs on a host: CPU package/NUMA order"
                                   : "CPU ranks by host, package, NUMA node");
  return order;
}

}  // namespace loom::topology
