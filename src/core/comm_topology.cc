// The communicator's use of the topology engine: load the machine model when the user asks
// for one (LOOM_TOPO_FILE or LOOM_GRAPH_FILE; the dump variables make rank 0 write what it
// found), search rings, and agree on the ring order every ring and chain schedule follows.
// Without any of those variables no discovery runs (it costs init time on every rank);
// CPU-only ranks are still ordered by socket and NUMA node from sysfs.
#include <cstdlib>

#include "core/comm.h"
#include "base/error.h"
#include "base/log.h"
#include "base/host_identity.h"
#include "topology/rank_order.h"
#include "topology/topology_engine.h"

namespace loom {

void Communicator::loadTopology() {
  topology::TopologyRequest request = topology::TopologyRequest::fromEnvironment();
  const bool given = !request.topoFile.empty() || !request.graphFile.empty();
  const bool dumpWanted = !request.topoDumpFile.empty() || !request.graphDumpFile.empty();
  if (!given && !(dumpWanted && rank_ == 0)) return;
  if (rank_ != 0) {
    // Every rank reads the same files; only rank 0 writes the dumps.
    request.topoDumpFile.clear();
    request.graphDumpFile.clear();
  }
  try {
    topology_ = topology::analyzeTopology(request);
  } catch (const Error& error) {
    throw Error(error.code(), "rank " + std::to_string(rank_) + ": topology: " + error.what());
  }
  const topology::System& system = topology_->system;
  LOOM_INFO(GRAPH, "comm %s: topology %s: %zu CPU, %zu GPU, %zu NIC, %zu NET", name_.c_str(),
            system.source.c_str(), system.nodesOfType(topology::NodeType::Cpu).size(),
            system.nodesOfType(topology::NodeType::Gpu).size(), system.nodesOfType(topology::NodeType::Nic).size(),
            system.nodesOfType(topology::NodeType::Net).size());
  LOOM_INFO(GRAPH, "comm %s: %s", name_.c_str(), topology::describeGraph(topology_->ring, 64).c_str());
  LOOM_INFO(GRAPH, "comm %s: %s", name_.c_str(), topology::describeGraph(topology_->tree, 64).c_str());
  if (!given) topology_.reset();  // discovered only to be dumped; the ring below is CPU order
}

uint64_t Communicator::topologyDigest() const {
  if (!topology_) return 0;
  // What the ring order depends on: channel 0's GPU order and the GPU count.
  std::vector<int> words{static_cast<int>(topology_->system.nodesOfType(topology::NodeType::Gpu).size())};
  if (!topology_->ring.channels.empty()) {
    const std::vector<int>& gpus = topology_->ring.channels[0].gpus;
    words.insert(words.end(), gpus.begin(), gpus.end());
  }
  return topology::fnv1a(words.data(), words.size() * sizeof(int)) | 1;  // never 0
}

void Communicator::planRing(const std::vector<topology::RankPlace>& places) {
  const topology::Graph* ring = topology_ ? &topology_->ring : nullptr;
  const int gpus = topology_ ? static_cast<int>(topology_->system.nodesOfType(topology::NodeType::Gpu).size()) : 0;
  topology::RingOrder order = topology::chooseRingOrder(places, ring, gpus);
  ringOrder_ = std::move(order.ranks);
  ringChannels_ = ring != nullptr && ring->nChannels > 0 ? ring->nChannels : 1;
  std::string text;
  for (int r : ringOrder_) text += (text.empty() ? "" : " ") + std::to_string(r);
  LOOM_INFO(GRAPH, "comm %s: ring order %s (%s; %d channel%s found, the host path runs one)", name_.c_str(),
            text.c_str(), order.reason.c_str(), ringChannels_, ringChannels_ == 1 ? "" : "s");
}

}  // namespace loom
