// SPDX-License-Identifier: Apache-2.0
// Routes between nodes of a System: for every ordered pair, the path with the best bottleneck
// bandwidth (ties: fewest hops), its bandwidth, and its NCCL-style type — the worst thing it
// crosses. P2P and GPUDirect-RDMA policies decide which GPU<->GPU and GPU<->NIC routes may be
// used directly; the rest go through host memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology/system.h"

namespace loom::topology {

// Ordered from closest to farthest, so "a <= b" means "a is at least as close as b".
enum class PathType : uint8_t {
  Loc,  // same node
  Nvl,  // one NVLink hop (or through NVSwitch)
  Nvb,  // NVLink through an intermediate GPU
  C2c,  // chip-to-chip
  Pix,  // through at most one PCI switch
  Pxb,  // through several PCI switches, not the CPU root complex
  Pxn,  // GPU -> NVLink -> peer GPU -> PCI -> NIC (proxy through a GPU that is near the NIC)
  Phb,  // through a CPU root complex (one socket)
  Sys,  // across the inter-socket link
  Net,  // across the network
  Dis,  // not connected
};
const char* pathTypeName(PathType type);  // "LOC", "NVL", ..., "DIS"
std::optional<PathType> parsePathType(const std::string& text);  // names, case-insensitive, or 0..10

struct LinkRef {
  int node = -1;  // the link is nodes[node].links[link]
  int link = -1;
};

struct Path {
  PathType type = PathType::Dis;
  double bandwidth = 0;       // GB/s bottleneck
  std::vector<LinkRef> hops;  // in order from source to destination; empty for Loc/Dis
};

// Where direct GPU peer access and GPUDirect RDMA stop being allowed (inclusive). Unset means
// Loom's defaults (documented in docs/topology.md); LOOM_P2P_LEVEL and LOOM_NET_GDR_LEVEL set them.
struct PathPolicy {
  std::optional<PathType> p2pLevel;
  std::optional<PathType> netGdrLevel;
  static PathPolicy fromEnvironment();
};

class PathTable {
 public:
  PathTable() = default;
  PathTable(const System& system, const PathPolicy& policy);

  const Path& path(int from, int to) const;
  int size() const { return count_; }
  // Whether two GPUs may talk directly (NVLink or PCI P2P) under the policy.
  bool p2pAllowed(int gpuA, int gpuB) const;
  // Whether a GPU may use GPUDirect RDMA with this NIC/Net node under the policy.
  bool gdrAllowed(int gpu, int net) const;
  // The Net node(s) with the best path from this GPU (rail choice), best first, deterministic.
  std::vector<int> nearestNets(int gpu) const;

 private:
  int count_ = 0;
  std::vector<Path> paths_;  // count_ * count_, row = source
  std::vector<char> p2p_, gdr_;
  // per node (GPUs only), computed once. The table keeps no pointer to its System: it copies
  // what it needs so that it stays valid when the System moves (TopologyResult holds both).
  std::vector<std::vector<int>> nearestNets_;
  PathPolicy policy_;
};

}  // namespace loom::topology
