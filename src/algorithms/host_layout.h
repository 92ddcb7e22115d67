// SPDX-License-Identifier: Apache-2.0
// Which ranks share a host, as the hierarchical schedules see it, and the choice between them
// and the flat ring (LOOM_ALGO). The core groups the ranks by the host identity every rank
// published at init (core/connector.cc), once per communicator; schedules only read the layout
// (CollectiveShape::hosts).
//
// Hosts are numbered by their lowest rank; a host's ranks are in rank order, their local
// indices 0, 1, ... A layout is uniform when every host holds the same number of ranks R, and
// host-major when host h holds ranks h*R .. h*R+R-1 (srun's block distribution); a cyclic
// distribution (ranks 0, 2 on one host, 1, 3 on the other) is uniform but interleaved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::algo {

struct HostLayout {
  std::vector<std::vector<int>> ranks;  // by host: its ranks, in local-index order
  std::vector<int> hostOf;              // by rank
  std::vector<int> localOf;             // by rank: its index among its host's ranks

  // Groups ranks 0..n-1 by `ids[rank]` (any values: equal means one host).
  static HostLayout fromHostIds(const std::vector<uint64_t>& ids);

  int nranks() const { return static_cast<int>(hostOf.size()); }
  int hosts() const { return static_cast<int>(ranks.size()); }
  // Every host holds the same number of ranks (true for an empty layout).
  bool uniform() const;
  // R when uniform, else 0.
  int ranksPerHost() const { return uniform() && !ranks.empty() ? static_cast<int>(ranks[0].size()) : 0; }
  // Uniform, and host h holds ranks h*R .. h*R+R-1.
  bool hostMajor() const;
  // The rank at (host, local), both taken mod the host count and that host's rank count.
  int rankAt(int host, int local) const {
    const std::vector<int>& on = ranks[static_cast<size_t>(wrap(host, hosts()))];
    return on[static_cast<size_t>(wrap(local, static_cast<int>(on.size())))];
  }
  // "2 hosts x 2 ranks (interleaved)", "hosts hold 2, 1 ranks (non-uniform)".
  std::string describe() const;

 private:
  static int wrap(int value, int n) { return ((value % n) + n) % n; }
};

// LOOM_ALGO. The values are what ranks publish to each other at init (one byte).
enum class AlgorithmSetting : uint8_t { Auto = 0, Ring = 1, Hierarchical = 2 };
// "auto", "ring", "hierarchical" (as the configuration registry returns them); Auto otherwise.
AlgorithmSetting algorithmSetting(const std::string& value);

// Which form the ring and chain collectives take over `layout`, and why (the INFO line of init):
//   ring:          always the flat ring;
//   auto:          hierarchical when the layout is uniform with at least 2 hosts and 2 ranks a
//                  host, else the flat ring;
//   hierarchical:  the same: where a host holds one rank, or there is one host, the
//                  hierarchical form is the flat ring; a non-uniform layout falls back to it.
// `deterministic`: the reason adds that reductions keep deterministicReduce (rank order, one
// rounding) under every layout; all-gather and broadcast, which do not reduce, still follow it.
struct HierarchyChoice {
  bool hierarchical = false;
  std::string reason;
};
HierarchyChoice chooseHierarchy(const HostLayout& layout, AlgorithmSetting setting, bool deterministic = false);

}  // namespace loom::algo
