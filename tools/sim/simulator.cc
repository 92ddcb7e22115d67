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
  RankSets memory;  // by element: its send, recv and scratch buffers (layout)
  std::vector<bool> done;
  size_t remaining = 0;
  std::map<int, std::deque<int>> sendLanes, recvLanes;
  std::vector<int> local;
};

[[noreturn]] void fail(int rank, int step, const Step& s, const std::string& what) {
  throwInternal("simulator: rank " + std::to_string(rank) + " step " + std::to_string(step) + " (" +
                describe(s) + "): " + what);
}

// The index in state.memory of the element where `range` starts, after checking it.
size_t at(const RankState& state, const Range& range, int rank, int stepIndex, const Step& step) {
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
  return base + range.offset / kElement;
}

// Deterministic mode's ReduceRanks: dst = the union of `blocks` ranges src + j * stride, none
// divided, no rank in two of them; avg is part of that reduction (divided once, as the
// Divide step would; one rank's average is its input, as verifySymbolic expects).
void reduceRanks(RankState& state, int rank, int index, const Step& step, bool average) {
  if (step.stride % kElement != 0 || step.blocks < 1 || step.src.bytes != step.dst.bytes) {
    fail(rank, index, step, "malformed ReduceRanks");
  }
  Range span = step.src;  // every block it reads, checked against its buffer as one range
  span.bytes = step.stride * static_cast<size_t>(step.blocks - 1) + step.src.bytes;
  const size_t src = at(state, span, rank, index, step);
  const size_t dst = at(state, step.dst, rank, index, step);
  const size_t count = step.dst.bytes / kElement, stride = step.stride / kElement;
  RankSets result = state.memory.slice(src, count);  // block 0; dst may overlap the blocks
  for (size_t i = 0; i < count; ++i) {
    if (result.divided(i)) fail(rank, index, step, "reduces a divided value");
    for (int j = 1; j < step.blocks; ++j) {
      const size_t operand = src + i + static_cast<size_t>(j) * stride;
      if (state.memory.divided(operand)) fail(rank, index, step, "reduces a divided value");
      if (result.intersects(i, state.memory, operand)) fail(rank, index, step, "counts a contribution twice");
      result.unite(i, state.memory, operand);
    }
    result.setDivided(i, average && step.blocks > 1);
  }
  state.memory.copy(dst, result, 0, count);
}

}  // namespace

SimulationOutput simulate(CollectiveShape shape, bool inPlace) {
  shape.elementBytes = kElement;
  const int n = shape.nranks;
  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    CollectiveShape mine = shape;
    mine.rank = r;
    RankState& state = ranks[r];
    state.schedule = buildSchedule(mine);
    state.layout = layoutFor(shape, r, inPlace, state.schedule.scratchBytes / kElement);
    state.memory = RankSets(n, state.layout.total);
    for (size_t i = 0; i < state.layout.sendCount; ++i) state.memory.set(state.layout.sendAt + i, r);
    state.done.assign(state.schedule.steps.size(), false);
    state.remaining = state.schedule.steps.size();
    for (size_t i = 0; i < state.schedule.steps.size(); ++i) {
      const Step& step = state.schedule.steps[i];
      if (step.dependsOn >= static_cast<int>(i) || step.alsoDependsOn >= static_cast<int>(i)) {
        fail(r, i, step, "depends on a later step");
      }
      if (step.kind == StepKind::Send) state.sendLanes[step.peer].push_back(i);
      else if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) state.recvLanes[step.peer].push_back(i);
      else state.local.push_back(i);
    }
  }

  SimulationOutput output;
  std::map<std::pair<int, int>, std::deque<RankSets>> channels;
  auto ready = [](const RankState& state, int index) {
    const Step& step = state.schedule.steps[index];
    return (step.dependsOn < 0 || state.done[step.dependsOn]) &&
           (step.alsoDependsOn < 0 || state.done[step.alsoDependsOn]);
  };
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < n; ++r) {
      RankState& state = ranks[r];
      for (auto it = state.local.begin(); it != state.local.end();) {
        if (!ready(state, *it)) { ++it; continue; }
        const Step& step = state.schedule.steps[*it];
        const size_t dst = at(state, step.dst, r, *it, step);
        const size_t count = step.dst.bytes / kElement;
        if (step.kind == StepKind::Copy) {
          state.memory.copy(dst, state.memory, at(state, step.src, r, *it, step), count);
        } else if (step.kind == StepKind::ReduceRanks) {
          reduceRanks(state, r, *it, step, shape.average);
        } else if (step.kind == StepKind::Divide) {
          for (size_t i = dst; i < dst + count; ++i) {
            if (state.memory.divided(i)) fail(r, *it, step, "divided twice");
            state.memory.setDivided(i);
          }
        } else {
          fail(r, *it, step, "unknown step kind");
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
          const size_t src = at(state, step.src, r, lane.front(), step);
          channels[{r, peer}].push_back(state.memory.slice(src, step.src.bytes / kElement));
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
          RankSets message = std::move(channel.front());
          channel.pop_front();
          if (message.size() * kElement != step.dst.bytes) {
            fail(r, index, step, "message of " + std::to_string(message.size() * kElement) +
                                     " bytes from rank " + std::to_string(peer) + " does not match");
          }
          const size_t dst = at(state, step.dst, r, index, step);
          if (step.kind == StepKind::Recv) {
            state.memory.copy(dst, message, 0, message.size());
          } else {
            const size_t local = at(state, step.src, r, index, step);
            for (size_t i = 0; i < message.size(); ++i) {
              if (state.memory.divided(local + i) || message.divided(i)) {
                fail(r, index, step, "reduces a divided value");
              }
              if (message.intersects(i, state.memory, local + i)) fail(r, index, step, "counts a contribution twice");
              message.unite(i, state.memory, local + i);  // local op incoming
            }
            state.memory.copy(dst, message, 0, message.size());
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
    output.recv[r] = ranks[r].memory.slice(layout.recvAt, layout.recvCount);
  }
  return output;
}

std::string verifySymbolic(const CollectiveShape& shape, bool inPlace, const SimulationOutput& output) {
  const int n = shape.nranks;
  RankSet reduced = RankSet::all(n);
  reduced.setDivided(shape.average && n > 1);
  std::vector<RankSet> single;  // by rank: {rank}
  for (int r = 0; r < n; ++r) single.push_back(RankSet::of(n, r));
  const RankSet nothing(n);
  if (output.recv.size() != static_cast<size_t>(n)) return "simulator: the output is not one buffer per rank";
  for (int r = 0; r < n; ++r) {
    const auto& recv = output.recv[r];
    for (size_t i = 0; i < recv.size(); ++i) {
      const RankSet* expected = nullptr;
      switch (shape.collective) {
        case Collective::AllReduce:
        case Collective::ReduceScatter: expected = &reduced; break;
        case Collective::AllGather: expected = &single[i / shape.count]; break;
        case Collective::Broadcast: expected = &single[shape.root]; break;
        case Collective::Reduce:
          // Non-roots leave recv alone: untouched (empty) out of place, their own input in place.
          expected = r == shape.root ? &reduced : (inPlace ? &single[r] : &nothing);
          break;
        default: return std::string("simulator: no symbolic check for ") + collectiveName(shape.collective);
      }
      if (!recv.equals(i, *expected)) {
        return std::string(collectiveName(shape.collective)) + " n=" + std::to_string(n) +
               " count=" + std::to_string(shape.count) + " root=" + std::to_string(shape.root) + " " +
               (inPlace ? "in-place" : "out-of-place") + ": rank " + std::to_string(r) + " element " +
               std::to_string(i) + " is " + recv.get(i).describe() + ", expected " + expected->describe();
      }
    }
  }
  return "";
}

}  // namespace loom::algo
