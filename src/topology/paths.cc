// SPDX-License-Identifier: Apache-2.0
// Routes between all node pairs, built in four passes that mirror how NCCL reasons about a
// machine:
//   1. physical routes: for each source, the widest route (best bottleneck bandwidth), and
//      among the widest the one with the fewest hops; GPUs and Net ports are never crossed;
//   2. NVLink first: GPUs joined by NVLink (directly or through NVSwitches) use it unless the
//      route they have is wider without crossing a CPU; NVB: GPUs without such a route may use
//      NVLink through a third GPU on the same terms;
//   3. P2P policy: GPU pairs farther apart than the P2P level go through host memory (the CPU
//      of the sending GPU); PXN: a GPU may reach a NIC through an NVLink peer that sits on the
//      NIC's PCI switch when that beats its own route;
//   4. GDR policy: GPU<->Net routes farther than the GDR level, or with GDR unsupported by
//      either end, also go through the GPU's CPU.
// Route choice is deterministic: ties fall to the lower node index and link order.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "base/config.h"
#include "base/error.h"
#include "topology/paths.h"

namespace loom::topology {
namespace {

// Bandwidth of a node to itself: "infinite" for all practical purposes (NCCL uses 5000 GB/s).
constexpr double kLocBandwidth = 5000.0;
constexpr double kBandwidthEpsilon = 1e-9;

bool sameBandwidth(double a, double b) {
  return std::fabs(a - b) <= kBandwidthEpsilon * std::max(1.0, std::max(a, b));
}

PathType worse(PathType a, PathType b) { return a > b ? a : b; }

// The path type one link contributes, NCCL's way: a PCI link that touches a CPU means the route
// goes through a root complex (PHB); one between two PCI switches means several switches (PXB).
PathType hopType(const System& system, int from, const Link& link) {
  const NodeType a = system.node(from).type;
  const NodeType b = system.node(link.to).type;
  switch (link.type) {
    case LinkType::Loc:
      return PathType::Loc;
    case LinkType::NvLink:
      return PathType::Nvl;
    case LinkType::C2c:
      return PathType::C2c;
    case LinkType::Pci:
      if (a == NodeType::Cpu || b == NodeType::Cpu) return PathType::Phb;
      if (a == NodeType::Pci && b == NodeType::Pci) return PathType::Pxb;
      return PathType::Pix;
    case LinkType::InterSocket:
      return PathType::Sys;
    case LinkType::Network:
      // NIC -> its port is local; only a port-to-port link crosses the network.
      return (a == NodeType::Net && b == NodeType::Net) ? PathType::Net : PathType::Loc;
  }
  return PathType::Dis;
}

// GPUs are crossed only through the NVB pass; Net ports are end points (a route never uses a
// port to bounce between NICs or hosts).
bool mayTransit(const System& system, int node) {
  const NodeType type = system.node(node).type;
  return type != NodeType::Gpu && type != NodeType::Net;
}

const Link& linkOf(const System& system, LinkRef ref) {
  return system.node(ref.node).links.at(static_cast<size_t>(ref.link));
}

// Widest route bottleneck from `source` to every node (0 where unreachable).
// `nvlinkOnly`: consider NVLink links alone (the GPU fabric), else every link.
std::vector<double> widestBottlenecks(const System& system, int source, bool nvlinkOnly) {
  const int count = system.size();
  std::vector<double> best(static_cast<size_t>(count), 0.0);
  std::vector<char> done(static_cast<size_t>(count), 0);
  best[static_cast<size_t>(source)] = kLocBandwidth;
  for (;;) {
    int pick = -1;
    for (int i = 0; i < count; ++i) {
      if (done[static_cast<size_t>(i)] || best[static_cast<size_t>(i)] <= 0) continue;
      if (pick < 0 || best[static_cast<size_t>(i)] > best[static_cast<size_t>(pick)]) pick = i;
    }
    if (pick < 0) break;
    done[static_cast<size_t>(pick)] = 1;
    if (pick != source && !mayTransit(system, pick)) continue;
    for (const Link& link : system.node(pick).links) {
      if (link.to == pick || link.bandwidth <= 0) continue;
      if (nvlinkOnly && link.type != LinkType::NvLink) continue;
      const double through = std::min(best[static_cast<size_t>(pick)], link.bandwidth);
      if (through > best[static_cast<size_t>(link.to)])
        best[static_cast<size_t>(link.to)] = through;
    }
  }
  return best;
}

// Fewest-hop routes from `source` over links at least `floor` wide; predecessor links out.
std::vector<LinkRef> shortestOverFloor(const System& system, int source, double floor,
                                       bool nvlinkOnly) {
  const int count = system.size();
  std::vector<LinkRef> via(static_cast<size_t>(count));
  std::vector<char> seen(static_cast<size_t>(count), 0);
  std::vector<int> queue{source};
  seen[static_cast<size_t>(source)] = 1;
  for (size_t head = 0; head < queue.size(); ++head) {
    const int node = queue[head];
    if (node != source && !mayTransit(system, node)) continue;
    const auto& links = system.node(node).links;
    for (size_t l = 0; l < links.size(); ++l) {
      const Link& link = links[l];
      if (link.to == node || seen[static_cast<size_t>(link.to)]) continue;
      if (nvlinkOnly && link.type != LinkType::NvLink) continue;
      if (link.bandwidth < floor && !sameBandwidth(link.bandwidth, floor)) continue;
      seen[static_cast<size_t>(link.to)] = 1;
      via[static_cast<size_t>(link.to)] = LinkRef{node, static_cast<int>(l)};
      queue.push_back(link.to);
    }
  }
  return via;
}

Path describe(const System& system, std::vector<LinkRef> hops) {
  Path path;
  path.type = PathType::Loc;
  path.bandwidth = kLocBandwidth;
  for (const LinkRef& hop : hops) {
    const Link& link = linkOf(system, hop);
    path.type = worse(path.type, hopType(system, hop.node, link));
    path.bandwidth = std::min(path.bandwidth, link.bandwidth);
  }
  path.hops = std::move(hops);
  return path;
}

// The widest-then-shortest route from `source` to every node it reaches.
std::vector<std::pair<int, Path>> widestRoutes(const System& system, int source, bool nvlinkOnly) {
  const int count = system.size();
  const std::vector<double> bottleneck = widestBottlenecks(system, source, nvlinkOnly);
  std::vector<double> floors;
  for (int to = 0; to < count; ++to)
    if (to != source && bottleneck[static_cast<size_t>(to)] > 0)
      floors.push_back(bottleneck[static_cast<size_t>(to)]);
  std::sort(floors.begin(), floors.end());
  floors.erase(std::unique(floors.begin(), floors.end(), sameBandwidth), floors.end());
  std::vector<std::pair<int, Path>> routes;
  for (double floor : floors) {
    const std::vector<LinkRef> via = shortestOverFloor(system, source, floor, nvlinkOnly);
    for (int to = 0; to < count; ++to) {
      if (to == source || !sameBandwidth(bottleneck[static_cast<size_t>(to)], floor)) continue;
      std::vector<LinkRef> hops;
      for (int node = to; node != source; node = via[static_cast<size_t>(node)].node)
        hops.push_back(via[static_cast<size_t>(node)]);
      std::reverse(hops.begin(), hops.end());
      routes.emplace_back(to, describe(system, std::move(hops)));
    }
  }
  return routes;
}

// a -> via -> b as one path: the worse type (at least `atLeast`), the narrower bandwidth.
Path join(const Path& first, const Path& second, PathType atLeast) {
  Path path;
  path.type = worse(atLeast, worse(first.type, second.type));
  path.bandwidth = std::min(first.bandwidth, second.bandwidth);
  path.hops = first.hops;
  path.hops.insert(path.hops.end(), second.hops.begin(), second.hops.end());
  return path;
}

bool wider(const Path& candidate, const Path& current) {
  if (current.type == PathType::Dis) return true;
  if (!sameBandwidth(candidate.bandwidth, current.bandwidth))
    return candidate.bandwidth > current.bandwidth;
  return candidate.hops.size() < current.hops.size();
}

// NCCL's legacy integers for P2P/GDR levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS.
std::optional<PathType> parseLevel(const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    const long value = std::strtol(text.c_str(), nullptr, 10);
    static constexpr PathType kLegacy[] = {PathType::Loc, PathType::Pix, PathType::Pxb,
                                           PathType::Phb, PathType::Sys};
    return value >= 4 ? PathType::Sys : kLegacy[value];
  }
  return parsePathType(text);
}

// The registry lets only the path type names and 0..4 through; an unknown value is warned
// about there and reads as unset, that is Loom's default.
std::optional<PathType> levelFromEnv(config::Knob knob) {
  const std::string value = config::choice(knob);
  if (value.empty()) return std::nullopt;
  return parseLevel(value);
}

// NCCL's default P2P level: P2P through the CPU is slow or broken on Intel, Zhaoxin and ARM
// root complexes, so there it stops at PCI switches (PXB); elsewhere (AMD, POWER) anything goes.
PathType defaultP2pLevel(const System& system) {
  for (int cpu : system.nodesOfType(NodeType::Cpu)) {
    const CpuAttributes& attrs = system.node(cpu).cpu;
    const bool arm = attrs.arch == "arm64" || attrs.arch == "aarch64";
    const bool x86 = attrs.arch.empty() || attrs.arch == "x86_64";
    const bool intelLike = attrs.vendor == "GenuineIntel" || attrs.vendor == "CentaurHauls" ||
                           attrs.vendor.find("Shanghai") != std::string::npos;
    if (arm || (x86 && intelLike)) return PathType::Pxb;
    return PathType::Sys;  // the first CPU decides, as in NCCL
  }
  return PathType::Sys;
}

}  // namespace

const char* pathTypeName(PathType type) {
  static constexpr const char* kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                           "PXN", "PHB", "SYS", "NET", "DIS"};
  const auto index = static_cast<size_t>(type);
  return index < std::size(kNames) ? kNames[index] : "DIS";
}

std::optional<PathType> parsePathType(const std::string& text) {
  std::string upper;
  for (char c : text)
    upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (int i = 0; i <= static_cast<int>(PathType::Dis); ++i) {
    const auto type = static_cast<PathType>(i);
    if (upper == pathTypeName(type)) return type;
  }
  if (!upper.empty() && upper.size() <= 2 && std::all_of(upper.begin(), upper.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    const int value = std::atoi(upper.c_str());
    if (value <= static_cast<int>(PathType::Dis)) return static_cast<PathType>(value);
  }
  return std::nullopt;
}

PathPolicy PathPolicy::fromEnvironment() {
  PathPolicy policy;
  policy.p2pLevel = levelFromEnv(config::Knob::P2pLevel);
  policy.netGdrLevel = levelFromEnv(config::Knob::NetGdrLevel);
  return policy;
}

PathTable::PathTable(const System& system, const PathPolicy& policy)
    : count_(system.size()), policy_(policy) {
  const auto n = static_cast<size_t>(count_);
  paths_.assign(n * n, Path{});
  p2p_.assign(n * n, 0);
  gdr_.assign(n * n, 0);
  nearestNets_.assign(n, {});
  auto at = [&](int a, int b) -> Path& {
    return paths_[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
  };
  auto sameHost = [&](int a, int b) { return system.node(a).host == system.node(b).host; };

  // 1. Widest, then shortest, physical routes.
  for (int source = 0; source < count_; ++source) {
    for (auto& [to, path] : widestRoutes(system, source, false)) at(source, to) = std::move(path);
    at(source, source) = Path{PathType::Loc, kLocBandwidth, {}};
  }

  // 2a. GPUs joined by NVLink (directly or through NVSwitches) use it, even where a route
  // through a CPU root complex is nominally wider: GPU peer traffic crosses root complexes
  // badly, and NCCL never prefers that route either.
  const std::vector<int> gpus = system.nodesOfType(NodeType::Gpu);
  for (int a : gpus) {
    for (auto& [b, path] : widestRoutes(system, a, true)) {
      if (system.node(b).type != NodeType::Gpu) continue;
      if (at(a, b).type > PathType::Pxb || wider(path, at(a, b))) at(a, b) = std::move(path);
    }
  }

  // 2b. NVLink through one intermediate GPU.
  std::vector<Path> direct = paths_;
  auto directAt = [&](int a, int b) -> const Path& {
    return direct[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
  };
  for (int a : gpus) {
    for (int b : gpus) {
      if (a == b || directAt(a, b).type <= PathType::Nvl) continue;
      for (int via : gpus) {
        if (via == a || via == b || directAt(a, via).type != PathType::Nvl ||
            directAt(via, b).type != PathType::Nvl)
          continue;
        Path candidate = join(directAt(a, via), directAt(via, b), PathType::Nvb);
        // NVLink through a peer also beats a nominally wider route through a CPU root
        // complex, which GPU peer traffic crosses badly (and NCCL would not pick).
        const bool replace = at(a, b).type > PathType::Pxb || wider(candidate, at(a, b));
        if (replace) at(a, b) = std::move(candidate);
      }
    }
  }

  // 3a. P2P policy: pairs beyond the level go through the sender's CPU (host memory).
  const PathType p2pLevel = policy.p2pLevel.value_or(defaultP2pLevel(system));
  for (int a : gpus) {
    const int cpu = system.parentCpu(a);
    for (int b : gpus) {
      if (a == b) continue;
      const bool allowed = sameHost(a, b) && at(a, b).type <= p2pLevel;
      p2p_[static_cast<size_t>(a) * n + static_cast<size_t>(b)] = allowed;
      if (allowed || cpu < 0 || at(a, cpu).type == PathType::Dis ||
          at(cpu, b).type == PathType::Dis)
        continue;
      at(a, b) = join(at(a, cpu), at(cpu, b), PathType::Phb);
    }
  }

  // 3b. PXN: reach a NIC through an NVLink peer on the NIC's switch when that is better.
  const std::vector<int> nets = system.nodesOfType(NodeType::Net);
  const std::vector<Path> beforePxn = paths_;
  auto beforeAt = [&](int a, int b) -> const Path& {
    return beforePxn[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
  };
  std::vector<int> proxy(n * n, -1);
  for (int g : gpus) {
    for (int net : nets) {
      if (!sameHost(g, net)) continue;
      const Path& own = beforeAt(g, net);
      int bestPeer = -1;
      for (int peer : gpus) {
        if (peer == g || !sameHost(peer, g) || beforeAt(g, peer).type > PathType::Nvl ||
            !p2p_[static_cast<size_t>(g) * n + static_cast<size_t>(peer)])
          continue;
        const Path& peerNet = beforeAt(peer, net);
        if (peerNet.type > PathType::Pxb) continue;
        if (!(own.type > PathType::Pxb ||
              peerNet.bandwidth > own.bandwidth * (1 + kBandwidthEpsilon)))
          continue;
        if (bestPeer < 0 || peerNet.type < beforeAt(bestPeer, net).type ||
            (peerNet.type == beforeAt(bestPeer, net).type &&
             peerNet.bandwidth > beforeAt(bestPeer, net).bandwidth * (1 + kBandwidthEpsilon)))
          bestPeer = peer;
      }
      if (bestPeer < 0) continue;
      at(g, net) = join(beforeAt(g, bestPeer), beforeAt(bestPeer, net), PathType::Pxn);
      at(net, g) = join(beforeAt(net, bestPeer), beforeAt(bestPeer, g), PathType::Pxn);
      proxy[static_cast<size_t>(g) * n + static_cast<size_t>(net)] = bestPeer;
    }
  }

  // Rail choice looks at proximity, before the GDR policy sends traffic through host memory.
  for (int g : gpus) {
    std::vector<int> ranked;
    for (int net : nets)
      if (sameHost(g, net) && at(g, net).type != PathType::Dis) ranked.push_back(net);
    auto closer = [&](int x, int y) {  // strictly closer: type, then bandwidth
      const Path& px = at(g, x);
      const Path& py = at(g, y);
      if (px.type != py.type) return px.type < py.type;
      return !sameBandwidth(px.bandwidth, py.bandwidth) && px.bandwidth > py.bandwidth;
    };
    std::sort(ranked.begin(), ranked.end(), [&](int x, int y) {
      if (closer(x, y) || closer(y, x)) return closer(x, y);
      if (system.node(x).net.dev != system.node(y).net.dev)
        return system.node(x).net.dev < system.node(y).net.dev;
      return x < y;
    });
    auto& nearest = nearestNets_[static_cast<size_t>(g)];
    for (int net : ranked) {
      if (!nearest.empty() && closer(nearest.front(), net)) break;
      nearest.push_back(net);
    }
  }

  // 4. GDR policy.
  const PathType gdrLevel = policy.netGdrLevel.value_or(PathType::Pxb);
  for (int g : gpus) {
    const int cpu = system.parentCpu(g);
    for (int net : nets) {
      if (!sameHost(g, net)) continue;
      const size_t index = static_cast<size_t>(g) * n + static_cast<size_t>(net);
      PathType distance = at(g, net).type;
      if (distance == PathType::Pxn) distance = at(proxy[index], net).type;
      const bool allowed = system.node(g).gpu.gdr && system.node(net).net.gdr &&
                           distance != PathType::Dis && distance <= gdrLevel;
      gdr_[index] = allowed;
      if (allowed || cpu < 0 || at(cpu, net).type == PathType::Dis) continue;
      at(g, net) = join(at(g, cpu), at(cpu, net), PathType::Phb);
      at(net, g) = join(at(net, cpu), at(cpu, g), PathType::Phb);
    }
  }
}

const Path& PathTable::path(int from, int to) const {
  if (from < 0 || to < 0 || from >= count_ || to >= count_)
    throwArgument("PathTable::path: node index out of range (" + std::to_string(from) + ", " +
                  std::to_string(to) + " of " + std::to_string(count_) + ")");
  return paths_[static_cast<size_t>(from) * static_cast<size_t>(count_) + static_cast<size_t>(to)];
}

bool PathTable::p2pAllowed(int gpuA, int gpuB) const {
  if (gpuA < 0 || gpuB < 0 || gpuA >= count_ || gpuB >= count_) return false;
  if (gpuA == gpuB) return true;
  return p2p_[static_cast<size_t>(gpuA) * static_cast<size_t>(count_) +
              static_cast<size_t>(gpuB)] != 0;
}

bool PathTable::gdrAllowed(int gpu, int net) const {
  if (gpu < 0 || net < 0 || gpu >= count_ || net >= count_) return false;
  return gdr_[static_cast<size_t>(gpu) * static_cast<size_t>(count_) + static_cast<size_t>(net)] !=
         0;
}

std::vector<int> PathTable::nearestNets(int gpu) const {
  if (gpu < 0 || gpu >= count_) return {};
  return nearestNets_[static_cast<size_t>(gpu)];
}

}  // namespace loom::topology
