#include "schedule.h"

#include <algorithm>

#include "src/error.h"

namespace loom::algo {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "allreduce";
    case Collective::AllGather: return "allgather";
    case Collective::ReduceScatter: return "reducescatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
  }
  return "?";
}

Schedule buildSchedule(const CollectiveShape& shape) {
  if (shape.nranks < 1 || shape.rank < 0 || shape.rank >= shape.nranks) {
    throwInternal("buildSchedule: bad rank " + std::to_string(shape.rank) + " of " +
                  std::to_string(shape.nranks));
  }
  switch (shape.collective) {
    case Collective::AllReduce: return ringAllReduce(shape);
    case Collective::AllGather: return ringAllGather(shape);
    case Collective::ReduceScatter: return ringReduceScatter(shape);
    case Collective::Broadcast: return chainBroadcast(shape);
    case Collective::Reduce: return chainReduce(shape);
  }
  throwInternal("buildSchedule: unknown collective");
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
  return std::move(schedule_);
}

std::string describe(const Step& step) {
  auto range = [](const Range& r) {
    const char* name = r.buffer == Buffer::Send ? "send" : r.buffer == Buffer::Recv ? "recv" : "scratch";
    return std::string(name) + "[" + std::to_string(r.offset) + "+" + std::to_string(r.bytes) + "]";
  };
  switch (step.kind) {
    case StepKind::Send: return "send " + range(step.src) + " to " + std::to_string(step.peer);
    case StepKind::Recv: return "recv " + range(step.dst) + " from " + std::to_string(step.peer);
    case StepKind::RecvReduce:
      return "recv-reduce " + range(step.dst) + " = " + range(step.src) + " op from " +
             std::to_string(step.peer);
    case StepKind::Copy: return "copy " + range(step.dst) + " = " + range(step.src);
    case StepKind::Divide: return "divide " + range(step.dst);
  }
  return "?";
}

}  // namespace loom::algo
