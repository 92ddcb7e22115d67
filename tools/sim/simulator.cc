// SPDX-License-Identifier: Apache-2.0
#include "simulator.h"

#include <deque>
#include <map>

#include "base/error.h"

namespace loom::algo {

namespace {

constexpr size_t kElement = 8;

// Where each buffer of one rank lives in that rank's simulated memory, following NCCL's
// in-place conventions (all-gather: send is recv's block r; reduce-scatter: recv is send's).
struct Layout {
  size_t sendAt = 0, sendCount = 0, recvAt = 0, recvCount = 0, scratchAt = 0, total = 0;
};

Layout layoutFor(const CollectiveShape& shape, int rank, bool inPlace, size_t scratchElements) {
  const size_t n = shape.nranks;
  Layout layout;
  switch (shape.collective) {
    case Collective::AllGather: layout.sendCount = shape.count; layout.recvCount = n * shape.count; break;
    case Collective::ReduceScatter: layout.sendCount = n * shape.count; layout.recvCount = shape.count; break;
    default: layout.sendCount = layout.recvCount = shape.count; break;
  }
  if (!inPlace) {
    layout.sendAt = 0;
    layout.recvAt = layout.sendCount;
    layout.scratchAt = layout.sendCount + layout.recvCount;
  } else if (shape.collective == Collective::AllGather) {
    layout.recvAt = 0;
    layout.sendAt = rank * shape.count;
    layout.scratchAt = layout.recvCount;
  } else {
    layout.sendAt = 0;
    layout.recvAt = shape.collective == Collective::ReduceScatter ? rank * shape.count : 0;
    layout.scratchAt = layout.sendCount;
  }
  layout.total = layout.scratchAt + scratchElements;
  return layout;
}

struct RankState {
  Schedule schedule;
  Layout layout;
  std::vector<uint64_t> memory;
  std::vector<bool> done;
  size_t remaining = 0;
  std::map<int, std::deque<int>> sendLanes, recvLanes;
  std::vector<int> local;
};

[[noreturn]] void fail(int rank, int step, const Step& s, const std::string& what) {
  throwInternal("simulator: rank " + std::to_string(rank) + " step " + std::to_string(step) + " (" +
                describe(s) + "): " + what);
}

uint64_t* at(RankState& state, const Range& range, int rank, int stepIndex, const Step& step) {
  if (range.offset % kElement != 0 || range.bytes % kElement != 0) {
    fail(rank, stepIndex, step, "range not element-aligned");
  }
  size_t base = 0, limit = 0;
  switch (range.buffer) {
    case Buffer::Send: base = state.layout.sendAt; limit = state.layout.sendCount; break;
    case Buffer::Recv: base = state.layout.recvAt; limit = state.layout.recvCount; break;
    case Buffer::Scratch:
      base = state.layout.scratchAt;
      limit = state.schedule.scratchBytes / kElement;
      break;
  }
  if ((range.offset + range.bytes) / kElement > limit) fail(rank, stepIndex, step, "range out of bounds");
  return state.memory.data() + base + range.offset / kElement;
}

}  // namespace

SimulationOutput simulate(CollectiveShape shape, bool inPlace) {
  shape.elementBytes = kElement;
  const int n = shape.nranks;
  if (n > 62) throwInternal("simulator: at most 62 ranks");
  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    CollectiveShape mine = shape;
    mine.rank = r;
    RankState& state = ranks[r];
    state.schedule = buildSchedule(mine);
    state.layout = layoutFor(shape, r, inPlace, state.schedule.scratchBytes / kElement);
    state.memory.assign(state.layout.total, 0);
    for (size_t i = 0; i < state.layout.sendCount; ++i) state.memory[state.layout.sendAt + i] = 1ull << r;
    state.done.assign(state.schedule.steps.size(), false);
    state.remaining = state.schedule.steps.size();
    for (size_t i = 0; i < state.schedule.steps.size(); ++i) {
      const Step& step = state.schedule.steps[i];
      if (step.dependsOn >= static_cast<int>(i)) fail(r, i, step, "depends on a later step");
      if (step.kind == StepKind::Send) state.sendLanes[step.peer].push_back(i);
      else if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) state.recvLanes[step.peer].push_back(i);
      else state.local.push_back(i);
    }
  }

  SimulationOutput output;
  std::map<std::pair<int, int>, std::deque<std::vector<uint64_t>>> channels;
  auto ready = [](const RankState& state, int index) {
    int dependency = state.schedule.steps[index].dependsOn;
    return dependency < 0 || state.done[dependency];
  };
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < n; ++r) {
      RankState& state = ranks[r];
      for (auto it = state.local.begin(); it != state.local.end();) {
        if (!ready(state, *it)) { ++it; continue; }
        const Step& step = state.schedule.steps[*it];
        uint64_t* dst = at(state, step.dst, r, *it, step);
        const size_t count = step.dst.bytes / kElement;
        if (step.kind == StepKind::Copy) {
          const uint64_t* src = at(state, step.src, r, *it, step);
          std::vector<uint64_t> copy(src, src + count);
          std::copy(copy.begin(), copy.end(), dst);
        } else {
          for (size_t i = 0; i < count; ++i) {
            if (dst[i] & kDividedMark) fail(r, *it, step, "divided twice");
            dst[i] |= kDividedMark;
          }
        }
        state.done[*it] = true;
        --state.remaining;
        it = state.local.erase(it);
        moved = true;
      }
      for (auto& [peer, lane] : state.sendLanes) {
        while (!lane.empty() && ready(state, lane.front())) {
          const Step& step = state.schedule.steps[lane.front()];
          if (peer < 0 || peer >= n || peer == r) fail(r, lane.front(), step, "bad peer");
          const uint64_t* src = at(state, step.src, r, lane.front(), step);
          channels[{r, peer}].emplace_back(src, src + step.src.bytes / kElement);
          output.messages++;
          output.bytes += step.src.bytes;
          state.done[lane.front()] = true;
          --state.remaining;
          lane.pop_front();
          moved = true;
        }
      }
      for (auto& [peer, lane] : state.recvLanes) {
        auto& channel = channels[{peer, r}];
        while (!lane.empty() && ready(state, lane.front()) && !channel.empty()) {
          const int index = lane.front();
          const Step& step = state.schedule.steps[index];
          std::vector<uint64_t> message = std::move(channel.front());
          channel.pop_front();
          if (message.size() * kElement != step.dst.bytes) {
            fail(r, index, step, "message of " + std::to_string(message.size() * kElement) +
                                     " bytes from rank " + std::to_string(peer) + " does not match");
          }
          uint64_t* dst = at(state, step.dst, r, index, step);
          if (step.kind == StepKind::Recv) {
            std::copy(message.begin(), message.end(), dst);
          } else {
            const uint64_t* local = at(state, step.src, r, index, step);
            for (size_t i = 0; i < message.size(); ++i) {
              if ((local[i] | message[i]) & kDividedMark) fail(r, index, step, "reduces a divided value");
              if (local[i] & message[i]) fail(r, index, step, "counts a contribution twice");
              dst[i] = local[i] | message[i];
            }
          }
          state.done[index] = true;
          --state.remaining;
          lane.pop_front();
          moved = true;
        }
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (ranks[r].remaining != 0) {
      throwInternal("simulator: deadlock: rank " + std::to_string(r) + " has " +
                    std::to_string(ranks[r].remaining) + " steps that can never run");
    }
  }
  for (const auto& [pair, channel] : channels) {
    if (!channel.empty()) {
      throwInternal("simulator: " + std::to_string(channel.size()) + " message(s) from rank " +
                    std::to_string(pair.first) + " to rank " + std::to_string(pair.second) +
                    " never received");
    }
  }
  output.recv.resize(n);
  for (int r = 0; r < n; ++r) {
    const Layout& layout = ranks[r].layout;
    output.recv[r].assign(ranks[r].memory.begin() + layout.recvAt,
                          ranks[r].memory.begin() + layout.recvAt + layout.recvCount);
  }
  return output;
}

std::string verifySymbolic(const CollectiveShape& shape, bool inPlace, const SimulationOutput& output) {
  const int n = shape.nranks;
  const uint64_t everyone = (n >= 63 ? ~0ull : (1ull << n) - 1);
  const uint64_t reduced = everyone | (shape.average && n > 1 ? kDividedMark : 0);
  for (int r = 0; r < n; ++r) {
    const auto& recv = output.recv[r];
    for (size_t i = 0; i < recv.size(); ++i) {
      uint64_t expected = 0;
      switch (shape.collective) {
        case Collective::AllReduce:
        case Collective::ReduceScatter: expected = reduced; break;
        case Collective::AllGather: expected = 1ull << (i / shape.count); break;
        case Collective::Broadcast: expected = 1ull << shape.root; break;
        case Collective::Reduce:
          // Non-roots leave recv alone: untouched (0) out of place, their own input in place.
          expected = r == shape.root ? reduced : (inPlace ? 1ull << r : 0);
          break;
        default: return std::string("simulator: no symbolic check for ") + collectiveName(shape.collective);
      }
      if (recv[i] != expected) {
        char text[200];
        std::snprintf(text, sizeof(text), "%s n=%d count=%zu root=%d %s: rank %d element %zu is %#llx, expected %#llx",
                      collectiveName(shape.collective), n, shape.count, shape.root,
                      inPlace ? "in-place" : "out-of-place", r, i, (unsigned long long)recv[i],
                      (unsigned long long)expected);
        return text;
      }
    }
  }
  return "";
}

}  // namespace loom::algo
