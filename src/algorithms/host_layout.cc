// SPDX-License-Identifier: Apache-2.0
#include "algorithms/host_layout.h"

#include <map>

namespace loom::algo {

HostLayout HostLayout::fromHostIds(const std::vector<uint64_t>& ids) {
  HostLayout layout;
  std::map<uint64_t, int> hostOfId;  // hosts numbered by their lowest rank: first seen
  for (size_t rank = 0; rank < ids.size(); ++rank) {
    auto [it, added] = hostOfId.emplace(ids[rank], layout.hosts());
    if (added) layout.ranks.emplace_back();
    std::vector<int>& on = layout.ranks[static_cast<size_t>(it->second)];
    layout.hostOf.push_back(it->second);
    layout.localOf.push_back(static_cast<int>(on.size()));
    on.push_back(static_cast<int>(rank));
  }
  return layout;
}

bool HostLayout::uniform() const {
  for (const std::vector<int>& on : ranks) {
    if (on.size() != ranks[0].size()) return false;
  }
  return true;
}

bool HostLayout::hostMajor() const {
  const int r = ranksPerHost();
  if (r == 0) return false;
  for (int rank = 0; rank < nranks(); ++rank) {
    if (hostOf[static_cast<size_t>(rank)] != rank / r) return false;
  }
  return true;
}

std::string HostLayout::describe() const {
  const auto plural = [](size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); };
  if (uniform()) {
    const size_t r = ranks.empty() ? 0 : ranks[0].size();
    return plural(ranks.size(), "host") + " x " + plural(r, "rank") +
           (hosts() > 1 && r > 1 ? (hostMajor() ? " (host-major)" : " (interleaved)") : "");
  }
  std::string counts;
  for (const std::vector<int>& on : ranks) counts += (counts.empty() ? "" : ", ") + std::to_string(on.size());
  return "hosts hold " + counts + " ranks (non-uniform)";
}

AlgorithmSetting algorithmSetting(const std::string& value) {
  if (value == "ring") return AlgorithmSetting::Ring;
  if (value == "hierarchical") return AlgorithmSetting::Hierarchical;
  return AlgorithmSetting::Auto;
}

HierarchyChoice chooseHierarchy(const HostLayout& layout, AlgorithmSetting setting, bool deterministic) {
  HierarchyChoice choice;
  const int k = layout.hosts();
  const int r = layout.ranksPerHost();
  if (setting == AlgorithmSetting::Ring) {
    choice.reason = "flat ring: LOOM_ALGO=ring (" + layout.describe() + ")";
  } else if (k <= 1) {
    const bool asked = setting == AlgorithmSetting::Hierarchical;
    choice.reason = "flat ring: " + layout.describe() + (asked ? " (one host: the hierarchical form is the ring)" : "");
  } else if (!layout.uniform()) {
    const bool asked = setting == AlgorithmSetting::Hierarchical;
    choice.reason = "flat ring across hosts: " + layout.describe() +
                    (asked ? "; LOOM_ALGO=hierarchical needs as many ranks on every host" : "");
  } else if (r == 1) {
    choice.reason =
        "flat ring across hosts: " + layout.describe() + " (one rank a host: the hierarchical form is the ring)";
  } else {
    choice.hierarchical = true;
    choice.reason = "hierarchical collectives: " + layout.describe() +
                    (setting == AlgorithmSetting::Hierarchical ? " (LOOM_ALGO=hierarchical)" : " (LOOM_ALGO=auto)");
  }
  if (deterministic) {
    choice.reason += "; deterministic mode: all-reduce, reduce-scatter and reduce keep the rank-order "
                     "deterministic reduction under every layout";
  }
  return choice;
}

}  // namespace loom::algo
