// SPDX-License-Identifier: Apache-2.0
// Channel search shared by rings and trees; see search_engine.h for the model.
//
// Algorithm: for each speed of the ladder (fastest first) and each path-type limit (best
// first), a depth-first search builds channels one after another, charging each to the links
// it uses, and backtracks across channels (a dead end in channel k may be fixed by another
// choice in channel k-1). It keeps the largest set of channels found. The search stops at the
// bound (no GPU can send more than its links carry), at maxChannels, or when its iteration
// budget is spent: budgets count iterations, not time, so results do not depend on machine
// load; a wall-clock guard only backs that up.
#include "topology/search_engine.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include "base/error.h"
#include "base/log.h"

namespace loom::topology::search_detail {
namespace {

// One channel should be something one GPU engine can drive: NCCL's speed ladders stop near
// 40 GB/s per channel, and faster fabrics get more channels rather than faster ones.
constexpr double kMaxChannelSpeed = 40.0;
constexpr double kMinChannelSpeed = 0.01;
// NCCL doubles the channels of NVLink-class graphs (>= 25 GB/s each) so that more SMs drive
// the same links; the aggregate does not change.
constexpr double kDuplicateSpeed = 25.0;
constexpr long kAttemptBudget = 20000;  // DFS steps per (speed, type limit) attempt
constexpr long kTotalBudget = 400000;   // DFS steps for the whole search
constexpr double kEps = 1e-9;

bool nearlyEqual(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::max(a, b));
}

struct NodeChannel {
  std::vector<int> gpus;        // node indices
  int netIn = -1, netOut = -1;  // node indices
};

struct Route {
  const Path* path;
  double bandwidth;
};

// The routes one step charges: at most four (both ways between two GPUs, both ways to the
// NIC). Kept inline: a search takes up to hundreds of thousands of steps, and a heap
// allocation each was most of its time.
struct Routes {
  std::array<Route, 4> items{};
  size_t count = 0;
  void add(const Path& path, double bandwidth) { items[count++] = {&path, bandwidth}; }
  const Route* begin() const { return items.data(); }
  const Route* end() const { return items.data() + count; }
};

// A GPU that may come next in a channel, with what ranks it (extend()).
struct Candidate {
  int gpu;
  PathType type;
  double room;
};
// Better path types first (keeps a ring inside a socket or switch as long as it can), then the
// emptiest route (spreads channels over parallel links); equal ones stay in device order.
bool rankedBefore(const Candidate& a, const Candidate& b) {
  if (a.type != b.type) return a.type < b.type;
  return !nearlyEqual(a.room, b.room) && a.room > b.room;
}
// A stable insertion sort: a handful of candidates a step, and no scratch buffer to allocate
// (std::stable_sort takes one from the heap on every call).
void sortCandidates(Candidate* first, Candidate* last) {
  for (Candidate* next = first + (first != last); next < last; ++next) {
    const Candidate moving = *next;
    Candidate* hole = next;
    for (; hole > first && rankedBefore(moving, hole[-1]); --hole) *hole = hole[-1];
    *hole = moving;
  }
}

class Searcher {
 public:
  Searcher(const System& system, const PathTable& paths, const SearchOptions& options,
           const ChannelShape& shape)
      : system_(system), paths_(paths), options_(options), shape_(shape) {
    for (int gpu : system.nodesOfType(NodeType::Gpu))
      if (system.node(gpu).host == 0) gpus_.push_back(gpu);
    std::stable_sort(gpus_.begin(), gpus_.end(), [&](int a, int b) { return devOf(a) < devOf(b); });
    if (options.nodes > 1) {
      for (int net : system.nodesOfType(NodeType::Net))
        if (system.node(net).host == 0) nets_.push_back(net);
      std::stable_sort(nets_.begin(), nets_.end(), [&](int a, int b) {
        return system.node(a).net.dev < system.node(b).net.dev;
      });
    }
    multiNode_ = options.nodes > 1 && !nets_.empty();
    if (options.nodes > 1 && nets_.empty())
      LOOM_WARN(GRAPH,
                "search: %d nodes requested but the model has no network port; searching one node",
                options.nodes);
    for (const Node& node : system.nodes()) {
      residual_.emplace_back();
      for (const Link& link : node.links) residual_.back().push_back(link.bandwidth);
    }
    nearest_.resize(static_cast<size_t>(system.size()));
    for (int gpu : gpus_) nearest_[static_cast<size_t>(gpu)] = paths.nearestNets(gpu);
    maxChannels_ = std::max(1, options.maxChannels);
    computeBound();
  }

  Graph run();

 private:
  int devOf(int gpu) const { return system_.node(gpu).gpu.dev; }
  bool isNearest(int gpu, int net) const {
    const auto& list = nearest_[static_cast<size_t>(gpu)];
    return std::find(list.begin(), list.end(), net) != list.end();
  }

  void computeBound();
  std::vector<double> speedLadder() const;
  std::vector<PathType> typeLevels() const;
  std::vector<NodeChannel> attempt(double speed, PathType typeLimit, bool allowCross);

  bool spend();
  bool take(const Routes& routes);
  void release(const Routes& routes);
  double room(const Path& path) const;

  void searchChannel(int done);
  bool tryStart(int done, int net, int gpu);
  void extend(int done);
  void finish(int done);

  Graph toGraph(const std::vector<NodeChannel>& channels, double speed) const;

  const System& system_;
  const PathTable& paths_;
  const SearchOptions& options_;
  const ChannelShape& shape_;
  std::vector<int> gpus_, nets_;
  std::vector<std::vector<int>> nearest_;
  bool multiNode_ = false;
  int maxChannels_ = 1;
  double bound_ = 0;
  std::vector<std::vector<double>> residual_;

  // Per attempt.
  double speed_ = 0;
  PathType typeLimit_ = PathType::Loc;
  bool allowCross_ = false;
  long attemptBudget_ = 0, totalBudget_ = kTotalBudget;
  bool stop_ = false;
  bool timedOut_ = false;
  std::vector<char> used_;
  std::vector<NodeChannel> current_, best_;
  // Scratch reused across steps, so that the depth-first search allocates nothing as it goes:
  // candidates and exits as stacks (each call appends its own and drops them on return), a
  // channel's GPU list kept for the next channel, each channel's visit marks.
  std::vector<Candidate> candidates_;
  std::vector<int> exits_;
  std::vector<std::vector<int>> spareGpuLists_;
  std::vector<std::vector<char>> usedByChannel_;
  std::chrono::steady_clock::time_point deadline_;
};

void Searcher::computeBound() {
  bound_ = 0;
  bool first = true;
  for (int gpu : gpus_) {
    double out = 0;
    for (const Link& link : system_.node(gpu).links)
      if (link.to != gpu) out += link.bandwidth;
    bound_ = first ? out : std::min(bound_, out);
    first = false;
  }
  // A tree's inner GPUs send both ways along the chain: two routes per channel.
  if (shape_.bothWays && gpus_.size() >= 3) bound_ /= 2;
  if (multiNode_) {
    double netTotal = 0;
    for (int net : nets_)
      for (const Link& link : system_.node(net).links)
        if (link.type == LinkType::Network && system_.node(link.to).type == NodeType::Nic)
          netTotal += link.bandwidth;
    bound_ = std::min(bound_, netTotal);
  }
}

std::vector<double> Searcher::speedLadder() const {
  // Per-channel speeds that divide the capacities that matter (routes between GPUs, the GPU
  // bound, NIC ports) exactly, so that k channels can fill a link of any width.
  std::vector<double> capacities{bound_};
  for (int a : gpus_)
    for (int b : gpus_)
      if (a != b && paths_.path(a, b).type != PathType::Dis)
        capacities.push_back(paths_.path(a, b).bandwidth);
  if (multiNode_)
    for (int net : nets_)
      for (int gpu : gpus_) capacities.push_back(paths_.path(gpu, net).bandwidth);
  std::vector<double> ladder;
  for (double capacity : capacities) {
    for (int k = 1; k <= maxChannels_; ++k) {
      const double speed = capacity / k;
      if (speed <= kMaxChannelSpeed * (1 + kEps) && speed >= kMinChannelSpeed)
        ladder.push_back(speed);
    }
  }
  std::sort(ladder.begin(), ladder.end(), std::greater<>());
  ladder.erase(std::unique(ladder.begin(), ladder.end(), nearlyEqual), ladder.end());
  return ladder;
}

std::vector<PathType> Searcher::typeLevels() const {
  std::vector<PathType> levels;
  for (int a : gpus_)
    for (int b : gpus_)
      if (a != b && paths_.path(a, b).type != PathType::Dis)
        levels.push_back(paths_.path(a, b).type);
  if (levels.empty()) levels.push_back(PathType::Loc);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

bool Searcher::spend() {
  if (stop_) return false;
  if (--attemptBudget_ < 0 || --totalBudget_ < 0) {
    stop_ = true;
    return false;
  }
  if ((totalBudget_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_) {
    timedOut_ = true;
    stop_ = true;
    totalBudget_ = 0;
    return false;
  }
  return true;
}

bool Searcher::take(const Routes& routes) {
  for (const Route& route : routes)
    if (route.path->type == PathType::Dis) return false;
  for (const Route& route : routes)
    for (const LinkRef& hop : route.path->hops)
      residual_[static_cast<size_t>(hop.node)][static_cast<size_t>(hop.link)] -= route.bandwidth;
  // Checked after charging everything, so routes that share a link are counted together.
  for (const Route& route : routes) {
    for (const LinkRef& hop : route.path->hops) {
      if (residual_[static_cast<size_t>(hop.node)][static_cast<size_t>(hop.link)] <
          -kEps * std::max(1.0, speed_)) {
        release(routes);
        return false;
      }
    }
  }
  return true;
}

void Searcher::release(const Routes& routes) {
  for (const Route& route : routes)
    for (const LinkRef& hop : route.path->hops)
      residual_[static_cast<size_t>(hop.node)][static_cast<size_t>(hop.link)] += route.bandwidth;
}

double Searcher::room(const Path& path) const {
  double least = 1e30;
  for (const LinkRef& hop : path.hops)
    least =
        std::min(least, residual_[static_cast<size_t>(hop.node)][static_cast<size_t>(hop.link)]);
  return least;
}

// Starts channel number `done` (that many are already placed), after recording the set so far.
void Searcher::searchChannel(int done) {
  if (done > static_cast<int>(best_.size())) best_ = current_;
  if (done >= maxChannels_ || done * speed_ >= bound_ * (1 - 1e-9)) {
    stop_ = true;
    return;
  }
  const size_t count = gpus_.size();
  // Candidate (netIn, first GPU) pairs, rotated by channel so that channels spread over NICs
  // (and, for trees, over roots).
  if (multiNode_) {
    for (size_t i = 0; i < nets_.size(); ++i) {
      const int net = nets_[(static_cast<size_t>(done) + i) % nets_.size()];
      for (int gpu : gpus_)
        if (isNearest(gpu, net) && !tryStart(done, net, gpu)) return;
    }
  } else if (shape_.rotateStart) {
    for (size_t i = 0; i < count; ++i)
      if (!tryStart(done, -1, gpus_[(static_cast<size_t>(done) + i) % count])) return;
  } else {
    tryStart(done, -1, gpus_.front());
  }
}

// Channel `done` starts at `gpu` (entering by `net`, or -1); false once the search stops.
bool Searcher::tryStart(int done, int net, int gpu) {
  if (!spend()) return false;
  Routes routes;
  if (net >= 0) {
    // Rings enter by the net; trees (and the first of a balanced pair) both send and receive.
    const double share = shape_.netGpus == 2 ? speed_ / 2 : speed_;
    routes.add(paths_.path(net, gpu), share);
    if (!shape_.closeRing) routes.add(paths_.path(gpu, net), share);
  }
  if (!take(routes)) return true;
  NodeChannel channel;
  if (!spareGpuLists_.empty()) {
    channel.gpus = std::move(spareGpuLists_.back());
    spareGpuLists_.pop_back();
    channel.gpus.clear();
  }
  channel.gpus.push_back(gpu);
  channel.netIn = net;
  channel.netOut = shape_.closeRing ? -1 : net;
  current_.push_back(std::move(channel));
  used_[static_cast<size_t>(gpu)] = 1;
  extend(done);
  used_[static_cast<size_t>(gpu)] = 0;
  spareGpuLists_.push_back(std::move(current_.back().gpus));
  current_.pop_back();
  release(routes);
  return !stop_;
}

void Searcher::extend(int done) {
  NodeChannel& channel = current_.back();
  if (channel.gpus.size() == gpus_.size()) {
    finish(done);
    return;
  }
  const int last = channel.gpus.back();
  const int netIn = channel.netIn;
  const bool placingNetPartner = multiNode_ && shape_.netGpus == 2 && channel.gpus.size() == 1;
  // This step's candidates go on top of the shared stack; deeper steps stack theirs above and
  // drop them before returning, so indices (not pointers: the stack may grow) stay valid.
  const size_t first = candidates_.size();
  for (int gpu : gpus_) {
    if (used_[static_cast<size_t>(gpu)]) continue;
    const Path& path = paths_.path(last, gpu);
    if (path.type == PathType::Dis || path.type > typeLimit_) continue;
    if (shape_.bothWays && paths_.path(gpu, last).type > typeLimit_) continue;
    if (placingNetPartner && !isNearest(gpu, netIn)) continue;
    const double free = room(path);
    if (free < speed_ * (1 - 1e-9)) continue;
    candidates_.push_back({gpu, path.type, free});
  }
  const size_t end = candidates_.size();
  sortCandidates(candidates_.data() + first, candidates_.data() + end);
  for (size_t i = first; i < end && spend(); ++i) {
    const int gpu = candidates_[i].gpu;
    Routes routes;
    routes.add(paths_.path(last, gpu), speed_);
    if (shape_.bothWays) routes.add(paths_.path(gpu, last), speed_);
    if (placingNetPartner) {
      routes.add(paths_.path(netIn, gpu), speed_ / 2);
      routes.add(paths_.path(gpu, netIn), speed_ / 2);
    }
    if (!take(routes)) continue;
    current_.back().gpus.push_back(gpu);
    used_[static_cast<size_t>(gpu)] = 1;
    extend(done);
    used_[static_cast<size_t>(gpu)] = 0;
    current_.back().gpus.pop_back();
    release(routes);
    if (stop_) break;
  }
  candidates_.resize(first);
}

// All GPUs placed: close the ring (one node) or leave through a Net (multi-node ring).
void Searcher::finish(int done) {
  // Values, not a reference: searching further channels grows current_.
  const int first = current_.back().gpus.front();
  const int last = current_.back().gpus.back();
  const int netIn = current_.back().netIn;
  // The nets this channel may leave by (-1: none), on top of the shared exits stack.
  const size_t mark = exits_.size();
  if (!shape_.closeRing) {
    exits_.push_back(current_.back().netOut);
  } else if (!multiNode_) {
    if (paths_.path(last, first).type > typeLimit_ && gpus_.size() > 1) return;
    exits_.push_back(-1);
  } else {
    // Leave by the NIC we came in by when the last GPU is near it; else, when cross-NIC is
    // allowed, by the last GPU's own NIC. With cross-NIC forbidden and a NIC that only one GPU
    // is near (1:1 rails), the last GPU reaches the entry NIC however it can.
    int nearCount = 0;
    for (int gpu : gpus_) nearCount += isNearest(gpu, netIn) ? 1 : 0;
    const bool mustReuseNic = options_.crossNic == 0 && (nearCount < 2 || gpus_.size() == 1);
    if (isNearest(last, netIn) || mustReuseNic) exits_.push_back(netIn);
    if (allowCross_)
      for (int net : nearest_[static_cast<size_t>(last)])
        if (net != netIn) exits_.push_back(net);
  }
  const size_t end = exits_.size();
  for (size_t i = mark; i < end && spend(); ++i) {
    const int net = exits_[i];
    // A ring closes back to its first GPU (one node) or leaves through its Net; a tree's
    // channel has nothing left to charge.
    Routes routes;
    if (shape_.closeRing)
      routes.add(multiNode_ ? paths_.path(last, net) : paths_.path(last, first), speed_);
    if (!take(routes)) continue;
    if (shape_.closeRing) current_.back().netOut = net;  // a tree's channel keeps its entry NIC
    // The next channel visits every GPU again: it gets its own visit marks.
    std::vector<char>& marks = usedByChannel_[static_cast<size_t>(done) + 1];
    marks.assign(used_.size(), 0);
    used_.swap(marks);
    searchChannel(done + 1);
    used_.swap(usedByChannel_[static_cast<size_t>(done) + 1]);
    release(routes);
    if (stop_) break;
  }
  exits_.resize(mark);
}

std::vector<NodeChannel> Searcher::attempt(double speed, PathType typeLimit, bool allowCross) {
  speed_ = speed;
  typeLimit_ = typeLimit;
  allowCross_ = allowCross;
  attemptBudget_ = kAttemptBudget;
  stop_ = totalBudget_ <= 0;
  used_.assign(static_cast<size_t>(system_.size()), 0);
  current_.clear();
  current_.reserve(static_cast<size_t>(maxChannels_) + 1);
  usedByChannel_.resize(static_cast<size_t>(maxChannels_) + 2);
  best_.clear();
  if (!stop_) searchChannel(0);
  return best_;
}

Graph Searcher::toGraph(const std::vector<NodeChannel>& channels, double speed) const {
  Graph graph;
  graph.nChannels = static_cast<int>(channels.size());
  graph.bwIntra = graph.bwInter = speed;
  graph.typeIntra = PathType::Loc;
  graph.typeInter = PathType::Loc;
  for (const NodeChannel& channel : channels) {
    Channel out;
    for (size_t i = 0; i < channel.gpus.size(); ++i) {
      out.gpus.push_back(devOf(channel.gpus[i]));
      if (i + 1 < channel.gpus.size())
        graph.typeIntra =
            std::max(graph.typeIntra, paths_.path(channel.gpus[i], channel.gpus[i + 1]).type);
    }
    if (shape_.closeRing && !multiNode_ && channel.gpus.size() > 1)
      graph.typeIntra =
          std::max(graph.typeIntra, paths_.path(channel.gpus.back(), channel.gpus.front()).type);
    if (multiNode_) {
      out.netIn = system_.node(channel.netIn).net.dev;
      out.netOut = system_.node(channel.netOut).net.dev;
      graph.crossNic = graph.crossNic || channel.netIn != channel.netOut;
      graph.typeInter =
          std::max(graph.typeInter, paths_.path(channel.netIn, channel.gpus.front()).type);
      const int sender = shape_.closeRing ? channel.gpus.back() : channel.gpus.front();
      graph.typeInter = std::max(graph.typeInter, paths_.path(sender, channel.netOut).type);
      if (shape_.netGpus == 2 && channel.gpus.size() > 1)
        graph.typeInter =
            std::max(graph.typeInter, paths_.path(channel.gpus[1], channel.netIn).type);
    }
    graph.channels.push_back(std::move(out));
  }
  return graph;
}

Graph Searcher::run() {
  deadline_ =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(
          options_.timeLimitSeconds > 0 ? options_.timeLimitSeconds : 1.0));
  if (gpus_.empty()) {  // CPU-only: the communicator orders CPU ranks itself
    Graph empty;
    empty.pattern = shape_.pattern;
    empty.id = shape_.pattern == Pattern::Ring ? 0 : 1;
    return empty;
  }
  std::vector<NodeChannel> best;
  double bestSpeed = 0;
  PathType bestType = PathType::Dis;
  const std::vector<PathType> levels = typeLevels();
  for (double speed : speedLadder()) {
    if (!best.empty()) {
      const double bestAggregate = bestSpeed * static_cast<double>(best.size());
      // Halving the speed rarely pays (NCCL stops there too), and a ladder step that cannot
      // beat the best even with every channel is not worth trying.
      if (speed < bestSpeed / 2 * (1 - 1e-9)) break;
      if (speed * maxChannels_ <= bestAggregate * (1 + 1e-9)) break;
      if (bestAggregate >= bound_ * (1 - 1e-9)) break;
    }
    if (totalBudget_ <= 0) break;
    for (PathType level : levels) {
      if (!best.empty() && level > bestType) break;  // never trade a worse type for bandwidth
      const bool crossFirst = options_.crossNic == 1;
      std::vector<NodeChannel> found = attempt(speed, level, crossFirst);
      if (multiNode_ && options_.crossNic == 2 && static_cast<int>(found.size()) < maxChannels_) {
        std::vector<NodeChannel> crossed = attempt(speed, level, true);
        if (crossed.size() > found.size()) found = std::move(crossed);
      }
      if (found.empty()) continue;
      const double aggregate = speed * static_cast<double>(found.size());
      const double bestAggregate = bestSpeed * static_cast<double>(best.size());
      Graph probe = toGraph(found, speed);
      if (best.empty() || aggregate > bestAggregate * (1 + 1e-9) ||
          (probe.typeIntra < bestType && aggregate >= bestAggregate * (1 - 1e-9))) {
        best = std::move(found);
        bestSpeed = speed;
        bestType = probe.typeIntra;
      }
      break;
    }
  }
  if (timedOut_)
    LOOM_WARN(GRAPH, "search: time guard (%.2f s) hit before the iteration budget; result may vary",
              options_.timeLimitSeconds);
  Graph graph;
  if (best.empty()) {
    // Nothing fits (disconnected GPUs): one channel in device order, so callers still get an
    // order; its bandwidth is what the slowest route gives.
    NodeChannel fallback;
    fallback.gpus = gpus_;
    if (multiNode_) fallback.netIn = fallback.netOut = nets_.front();
    double slowest = 1e30;
    for (size_t i = 0; i + 1 < gpus_.size(); ++i)
      slowest = std::min(slowest, paths_.path(gpus_[i], gpus_[i + 1]).bandwidth);
    if (slowest > kMaxChannelSpeed) slowest = kMaxChannelSpeed;
    LOOM_WARN(GRAPH, "search: no %s channel fits; falling back to device order",
              patternName(shape_.pattern));
    graph = toGraph({fallback}, gpus_.size() > 1 ? slowest : std::min(bound_, kMaxChannelSpeed));
  } else {
    graph = toGraph(best, bestSpeed);
  }
  graph.pattern = shape_.pattern;
  graph.id = shape_.pattern == Pattern::Ring ? 0 : 1;
  // Duplicate channels: once for NVLink-class speeds (as NCCL does), then as needed to reach
  // minChannels. Each copy takes the same links at half the speed: the aggregate is unchanged.
  auto duplicate = [&graph]() {
    const auto original = graph.channels;
    graph.channels.insert(graph.channels.end(), original.begin(), original.end());
    graph.nChannels *= 2;
    graph.bwIntra /= 2;
    graph.bwInter /= 2;
  };
  if (graph.nChannels > 0 && graph.bwIntra >= kDuplicateSpeed &&
      graph.nChannels * 2 <= maxChannels_)
    duplicate();
  while (graph.nChannels > 0 && graph.nChannels < options_.minChannels &&
         graph.nChannels * 2 <= maxChannels_)
    duplicate();
  graph.sameChannels =
      std::all_of(graph.channels.begin(), graph.channels.end(),
                  [&](const Channel& c) { return c.gpus == graph.channels.front().gpus; });
  if (!multiNode_) graph.bwInter = graph.bwIntra;
  return graph;
}

}  // namespace

Graph searchGraph(const System& system, const PathTable& paths, const SearchOptions& options,
                  const ChannelShape& shape) {
  if (paths.size() != system.size())
    throwArgument("search: the path table was built for another system");
  Searcher searcher(system, paths, options, shape);
  return searcher.run();
}

double aggregateBandwidth(const Graph& graph) {
  return graph.nChannels * std::min(graph.bwIntra, graph.bwInter);
}

}  // namespace loom::topology::search_detail
