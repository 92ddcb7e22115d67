// SPDX-License-Identifier: Apache-2.0
#include "algorithms/schedule.h"

#include <algorithm>

#include "base/error.h"

namespace loom::algo {

namespace {

Schedule buildInRankOrder(const CollectiveShape& shape) {
  switch (shape.collective) {
    case Collective::AllReduce: return ringAllReduce(shape);
    case Collective::AllGather: return ringAllGather(shape);
    case Collective::ReduceScatter: return ringReduceScatter(shape);
    case Collective::Broadcast: return chainBroadcast(shape);
    case Collective::Reduce: return chainReduce(shape);
    case Collective::AllToAll:
    case Collective::AllToAllv: return meshAllToAll(shape);
    case Collective::Gather: return meshGather(shape);
    case Collective::Scatter: return meshScatter(shape);
    case Collective::Barrier: return disseminationBarrier(shape);
    case Collective::Send:
    case Collective::Recv: break;  // batches: pointToPointBatch
  }
  throwInternal("buildSchedule: no collective schedule for " + std::string(collectiveName(shape.collective)));
}

// The generators think in ring positions; this maps a positional schedule back to ranks.
// Peers become order[peer]. Buffers laid out as one block per rank (all-gather's output,
// reduce-scatter's input) move block j to block order[j]; a piece never spans two blocks, so
// each range moves whole. Everything else (all-reduce's chunks, scratch) is private to the
// schedule and any consistent labelling works.
Schedule inRingOrder(const CollectiveShape& shape, const std::vector<int>& order) {
  CollectiveShape positional = shape;
  positional.ringOrder = nullptr;
  const auto position = [&](int rank) {
    return static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
  };
  positional.rank = position(shape.rank);
  positional.root = position(shape.root);
  Schedule schedule = buildInRankOrder(positional);

  const size_t blockBytes = shape.count * shape.elementBytes;
  const Buffer blocked = shape.collective == Collective::AllGather       ? Buffer::Recv
                         : shape.collective == Collective::ReduceScatter ? Buffer::Send
                                                                         : Buffer::Scratch;
  const bool relabelBlocks = shape.collective == Collective::AllGather || shape.collective == Collective::ReduceScatter;
  const auto relabel = [&](Range& range) {
    if (!relabelBlocks || range.buffer != blocked || range.bytes == 0 || blockBytes == 0) return;
    const size_t block = range.offset / blockBytes;
    range.offset = static_cast<size_t>(order[block]) * blockBytes + range.offset % blockBytes;
  };
  for (Step& step : schedule.steps) {
    if (step.peer >= 0) step.peer = order[static_cast<size_t>(step.peer)];
    relabel(step.dst);
    relabel(step.src);
  }
  schedule.measure();  // relabelled blocks may reach elsewhere
  return schedule;
}

bool isIdentity(const std::vector<int>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int>(i)) return false;
  }
  return true;
}

}  // namespace

Schedule buildSchedule(const CollectiveShape& shape) {
  if (shape.nranks < 1 || shape.rank < 0 || shape.rank >= shape.nranks) {
    throwInternal("buildSchedule: bad rank " + std::to_string(shape.rank) + " of " +
                  std::to_string(shape.nranks));
  }
  // Deterministic mode keeps its promise under every host layout: the same rank-order
  // reduction whatever the hosts (the hierarchical forms below would round per host).
  if (shape.deterministic && hasOp(shape.collective)) return deterministicReduce(shape);
  if (usesHierarchy(shape)) {
    switch (shape.collective) {
      case Collective::AllReduce: return hierarchicalAllReduce(shape);
      case Collective::AllGather: return hierarchicalAllGather(shape);
      case Collective::ReduceScatter: return hierarchicalReduceScatter(shape);
      case Collective::Broadcast: return hierarchicalBroadcast(shape);
      case Collective::Reduce: return hierarchicalReduce(shape);
      default: break;
    }
  }
  const bool ring = hasOp(shape.collective) || shape.collective == Collective::AllGather ||
                    shape.collective == Collective::Broadcast;  // the mesh schedules are in rank order
  if (ring && shape.ringOrder != nullptr && !isIdentity(*shape.ringOrder)) {
    if (static_cast<int>(shape.ringOrder->size()) != shape.nranks) {
      throwInternal("buildSchedule: ring order of " + std::to_string(shape.ringOrder->size()) + " ranks for " +
                    std::to_string(shape.nranks));
    }
    return inRingOrder(shape, *shape.ringOrder);
  }
  return buildInRankOrder(shape);
}

bool usesHierarchy(const CollectiveShape& shape) {
  const HostLayout* hosts = shape.hosts;
  if (hosts == nullptr || (shape.deterministic && hasOp(shape.collective))) return false;
  if (hosts->nranks() != shape.nranks) {
    throwInternal("buildSchedule: host layout of " + std::to_string(hosts->nranks()) + " ranks for " +
                  std::to_string(shape.nranks));
  }
  switch (shape.collective) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::Broadcast:
    case Collective::Reduce: break;
    default: return false;
  }
  // One host, one rank a host: the hierarchical form is the flat ring. A non-uniform layout
  // falls back to the flat ring.
  return hosts->hosts() >= 2 && hosts->ranksPerHost() >= 2;
}

RingBlocks ringBlocks(const CollectiveShape& shape) {
  const int n = shape.nranks;
  return RingBlocks{n, (shape.rank - 1 + n) % n, (shape.rank + 1) % n, shape.count * shape.elementBytes};
}

ChainPlace chainPlace(const CollectiveShape& shape) {
  const int n = shape.nranks;
  const int r = shape.rank;
  return ChainPlace{(r - shape.root + n) % n, (r + 1) % n, (r - 1 + n) % n, shape.count * shape.elementBytes};
}

Block splitBlock(size_t count, int parts, int index) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  const size_t i = static_cast<size_t>(index);
  return Block{i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

ScheduleBuilder::ScheduleBuilder(const CollectiveShape& shape) {
  // Whole elements per piece, and at least one element.
  size_t elements = std::max<size_t>(1, shape.pieceBytes / shape.elementBytes);
  pieceBytes_ = elements * shape.elementBytes;
}

size_t ScheduleBuilder::pieceCount(size_t bytes) const {
  return bytes == 0 ? 0 : (bytes + pieceBytes_ - 1) / pieceBytes_;
}

Range ScheduleBuilder::piece(Buffer buffer, size_t offset, size_t bytes, size_t index) const {
  const size_t start = index * pieceBytes_;
  return Range{buffer, offset + start, std::min(pieceBytes_, bytes - start)};
}

int ScheduleBuilder::add(Step step) {
  const size_t bytes = step.kind == StepKind::Send ? step.src.bytes : step.dst.bytes;
  if (bytes == 0) return -1;
  schedule_.steps.push_back(step);
  return static_cast<int>(schedule_.steps.size()) - 1;
}

Schedule ScheduleBuilder::finish(size_t scratchBytes) {
  schedule_.scratchBytes = scratchBytes;
  schedule_.measure();
  return std::move(schedule_);
}

void Schedule::measure() {
  for (size_t& bytes : reach) bytes = 0;
  auto extend = [&](const Range& range) {
    if (isUserBuffer(range.buffer)) return;  // a batch's own buffers: each one's size is known
    size_t& bytes = reach[static_cast<int>(range.buffer)];
    bytes = std::max(bytes, range.offset + range.bytes);
  };
  for (const Step& step : steps) {
    if (step.kind == StepKind::Send || step.kind == StepKind::RecvReduce || step.kind == StepKind::Copy) extend(step.src);
    if (step.kind == StepKind::ReduceRanks && step.blocks > 0) {
      extend(Range{step.src.buffer, step.src.offset + step.stride * static_cast<size_t>(step.blocks - 1), step.src.bytes});
    }
    if (step.kind != StepKind::Send) extend(step.dst);
  }
}

std::string describe(const Step& step) {
  auto range = [](const Range& r) {
    const std::string name = r.buffer == Buffer::Send      ? "send"
                             : r.buffer == Buffer::Recv    ? "recv"
                             : r.buffer == Buffer::Scratch ? "scratch"
                                                           : "op" + std::to_string(userBufferIndex(r.buffer));
    return name + "[" + std::to_string(r.offset) + "+" + std::to_string(r.bytes) + "]";
  };
  switch (step.kind) {
    case StepKind::Send: return "send " + range(step.src) + " to " + std::to_string(step.peer);
    case StepKind::Recv: return "recv " + range(step.dst) + " from " + std::to_string(step.peer);
    case StepKind::RecvReduce:
      return "recv-reduce " + range(step.dst) + " = " + range(step.src) + " op from " +
             std::to_string(step.peer);
    case StepKind::Copy: return "copy " + range(step.dst) + " = " + range(step.src);
    case StepKind::Divide: return "divide " + range(step.dst);
    case StepKind::ReduceRanks:
      return "reduce-ranks " + range(step.dst) + " = " + std::to_string(step.blocks) + " x " + range(step.src) +
             " stride " + std::to_string(step.stride);
  }
  return "?";
}

}  // namespace loom::algo
