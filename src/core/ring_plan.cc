// SPDX-License-Identifier: Apache-2.0
#include "core/ring_plan.h"

#include "base/error.h"
#include "base/hash.h"
#include "base/log.h"

namespace loom {

std::unique_ptr<topology::TopologyResult> loadTopology(int rank, const std::string& commName) {
  topology::TopologyRequest request = topology::TopologyRequest::fromEnvironment();
  const bool given = !request.topoFile.empty() || !request.graphFile.empty();
  const bool dumpWanted = !request.topoDumpFile.empty() || !request.graphDumpFile.empty();
  if (!given && !(dumpWanted && rank == 0)) return nullptr;
  if (rank != 0) {
    // Every rank reads the same files; only rank 0 writes the dumps.
    request.topoDumpFile.clear();
    request.graphDumpFile.clear();
  }
  std::unique_ptr<topology::TopologyResult> topology;
  try {
    topology = topology::analyzeTopology(request);
  } catch (const Error& error) {
    // Name the variables: the user set them, and the reader's message names only the file.
    std::string given;
    if (!request.topoFile.empty()) given += "LOOM_TOPO_FILE=" + request.topoFile;
    if (!request.graphFile.empty()) given += (given.empty() ? "" : ", ") + std::string("LOOM_GRAPH_FILE=") + request.graphFile;
    throw Error(error.code(), "rank " + std::to_string(rank) + ": topology" + (given.empty() ? "" : " (" + given + ")") +
                                  ": " + error.what());
  }
  const topology::System& system = topology->system;
  LOOM_INFO(GRAPH, "comm %s: topology %s: %zu CPU, %zu GPU, %zu NIC, %zu NET", commName.c_str(),
            system.source.c_str(), system.nodesOfType(topology::NodeType::Cpu).size(),
            system.nodesOfType(topology::NodeType::Gpu).size(), system.nodesOfType(topology::NodeType::Nic).size(),
            system.nodesOfType(topology::NodeType::Net).size());
  LOOM_INFO(GRAPH, "comm %s: %s", commName.c_str(), topology::describeGraph(topology->ring, 64).c_str());
  LOOM_INFO(GRAPH, "comm %s: %s", commName.c_str(), topology::describeGraph(topology->tree, 64).c_str());
  if (!given) return nullptr;  // discovered only to be dumped; the ring is CPU order
  return topology;
}

uint64_t topologyDigest(const topology::TopologyResult* topology) {
  if (topology == nullptr) return 0;
  // What the ring order depends on: channel 0's GPU order and the GPU count.
  std::vector<int> words{static_cast<int>(topology->system.nodesOfType(topology::NodeType::Gpu).size())};
  if (!topology->ring.channels.empty()) {
    const std::vector<int>& gpus = topology->ring.channels[0].gpus;
    words.insert(words.end(), gpus.begin(), gpus.end());
  }
  return fnv1a(words.data(), words.size() * sizeof(int)) | 1;  // never 0
}

std::vector<int> planRing(const std::vector<topology::RankPlace>& places, const topology::TopologyResult* topology,
                          const std::string& commName) {
  const topology::Graph* ring = topology != nullptr ? &topology->ring : nullptr;
  const int gpus = topology != nullptr ? static_cast<int>(topology->system.nodesOfType(topology::NodeType::Gpu).size()) : 0;
  topology::RingOrder order = topology::chooseRingOrder(places, ring, gpus);
  const int channels = ring != nullptr && ring->nChannels > 0 ? ring->nChannels : 1;
  std::string text;
  for (int r : order.ranks) text += (text.empty() ? "" : " ") + std::to_string(r);
  LOOM_INFO(GRAPH, "comm %s: ring order %s (%s; %d channel%s found, the host path runs one)", commName.c_str(),
            text.c_str(), order.reason.c_str(), channels, channels == 1 ? "" : "s");
  return std::move(order.ranks);
}

std::unique_ptr<algo::HostLayout> planHierarchy(const std::vector<uint64_t>& hostIds,
                                                const std::vector<algo::AlgorithmSetting>& settings, bool deterministic,
                                                const std::string& commName) {
  // Every rank sees every rank's setting, so all agree: `ring` anywhere wins, then
  // `hierarchical` (whose only difference from `auto` is the reason logged).
  algo::AlgorithmSetting setting = algo::AlgorithmSetting::Auto;
  for (algo::AlgorithmSetting wanted : settings) {
    if (wanted == algo::AlgorithmSetting::Ring || setting == algo::AlgorithmSetting::Auto) setting = wanted;
    if (setting == algo::AlgorithmSetting::Ring) break;
  }
  auto layout = std::make_unique<algo::HostLayout>(algo::HostLayout::fromHostIds(hostIds));
  const algo::HierarchyChoice choice = algo::chooseHierarchy(*layout, setting, deterministic);
  LOOM_INFO(INIT, "comm %s: %s", commName.c_str(), choice.reason.c_str());
  if (!choice.hierarchical) return nullptr;
  return layout;
}

}  // namespace loom
