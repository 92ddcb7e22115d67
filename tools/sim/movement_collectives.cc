// SPDX-License-Identifier: Apache-2.0
#include "movement_collectives.h"

#include <algorithm>

#include "base/error.h"

namespace loom::algo {

namespace {

constexpr size_t kSend = static_cast<size_t>(Buffer::Send);
constexpr size_t kRecv = static_cast<size_t>(Buffer::Recv);
constexpr size_t kScratch = static_cast<size_t>(Buffer::Scratch);

// Elements from a buffer's start to the end of its last non-empty block.
size_t extentOf(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t end = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (counts[j] > 0) end = std::max(end, displs[j] + counts[j]);
  }
  return end;
}

// Appends a buffer of `bytes` to the end of a rank's arena.
Region place(RankProgram& program, size_t bytes) {
  Region region{true, program.arenaBytes, bytes};
  program.arenaBytes += bytes;
  return region;
}

void checkLayouts(const MovementCase& movement) {
  const size_t n = static_cast<size_t>(movement.shape.nranks);
  if (movement.layouts == nullptr || movement.layouts->size() != n) {
    throwArgument("all-to-all-v needs one layout per rank");
  }
  const std::vector<VectorLayout>& layouts = *movement.layouts;
  for (size_t i = 0; i < n; ++i) {
    const VectorLayout& layout = layouts[i];
    for (const std::vector<size_t>* part : {&layout.sendCounts, &layout.sendDispls, &layout.recvCounts, &layout.recvDispls}) {
      if (part->size() != n) throwArgument("rank " + std::to_string(i) + "'s layout is not one entry per rank");
    }
    for (size_t j = 0; j < n; ++j) {
      if (layout.sendCounts[j] != layouts[j].recvCounts[i]) {
        throwArgument("rank " + std::to_string(i) + " sends " + std::to_string(layout.sendCounts[j]) +
                      " elements to rank " + std::to_string(j) + ", which expects " +
                      std::to_string(layouts[j].recvCounts[i]));
      }
    }
  }
}

void checkCase(const MovementCase& movement) {
  const CollectiveShape& shape = movement.shape;
  if (shape.nranks < 1 || shape.elementBytes == 0) throwArgument("bad rank count or element size");
  const Collective collective = shape.collective;
  const bool rooted = collective == Collective::Gather || collective == Collective::Scatter;
  if (!rooted && collective != Collective::AllToAll && collective != Collective::AllToAllv &&
      collective != Collective::Barrier) {
    throwArgument(std::string("no data-movement promise for ") + collectiveName(collective));
  }
  if (rooted && (shape.root < 0 || shape.root >= shape.nranks)) throwArgument("root out of range");
  if (movement.inPlace && !rooted) throwArgument(std::string("nccl.h defines no in-place ") + collectiveName(collective));
  if (collective == Collective::AllToAllv) checkLayouts(movement);
}

// The buffers of rank `r` as an application passes them.
void layOut(const MovementCase& movement, int r, RankProgram& program) {
  const CollectiveShape& shape = movement.shape;
  const size_t n = static_cast<size_t>(shape.nranks);
  const size_t unit = shape.elementBytes;
  const size_t block = shape.count * unit;
  const bool root = r == shape.root;
  program.buffers.assign(3, Region{});
  Region& send = program.buffers[kSend];
  Region& recv = program.buffers[kRecv];
  switch (shape.collective) {
    case Collective::AllToAll:
      send = place(program, n * block);
      recv = place(program, n * block);
      break;
    case Collective::AllToAllv: {
      const VectorLayout& layout = (*movement.layouts)[static_cast<size_t>(r)];
      send = place(program, extentOf(layout.sendCounts, layout.sendDispls) * unit);
      recv = place(program, extentOf(layout.recvCounts, layout.recvDispls) * unit);
      break;
    }
    case Collective::Gather:  // recvbuff is used on the root only
      if (!root) {
        send = place(program, block);
        break;
      }
      recv = place(program, n * block);
      send = movement.inPlace ? Region{true, recv.at + static_cast<size_t>(r) * block, block} : place(program, block);
      break;
    case Collective::Scatter:  // sendbuff is used on the root only
      if (!root) {
        recv = place(program, block);
        break;
      }
      send = place(program, n * block);
      recv = movement.inPlace ? Region{true, send.at + static_cast<size_t>(r) * block, block} : place(program, block);
      break;
    default: break;  // the barrier has neither
  }
  program.buffers[kScratch] = place(program, program.schedule.scratchBytes);
}

// Rank r's promised output, in terms of the other ranks' inputs.
void promiseOutput(const MovementCase& movement, int r, MovementProblem& problem) {
  const CollectiveShape& shape = movement.shape;
  const int n = shape.nranks;
  const size_t unit = shape.elementBytes;
  const size_t block = shape.count * unit;
  const auto sendAt = [&](int rank) { return problem.programs[static_cast<size_t>(rank)].buffers[kSend].at; };
  const size_t recvAt = problem.programs[static_cast<size_t>(r)].buffers[kRecv].at;
  const size_t ur = static_cast<size_t>(r);
  switch (shape.collective) {
    case Collective::AllToAll:
      for (int i = 0; i < n; ++i) problem.promise.holds(r, recvAt + static_cast<size_t>(i) * block, i, sendAt(i) + ur * block, block);
      break;
    case Collective::AllToAllv: {
      const VectorLayout& mine = (*movement.layouts)[ur];
      for (int i = 0; i < n; ++i) {
        const size_t ui = static_cast<size_t>(i);
        const VectorLayout& theirs = (*movement.layouts)[ui];
        problem.promise.holds(r, recvAt + mine.recvDispls[ui] * unit, i, sendAt(i) + theirs.sendDispls[ur] * unit,
                              mine.recvCounts[ui] * unit);
      }
      break;
    }
    case Collective::Gather:
      if (r != shape.root) break;
      for (int i = 0; i < n; ++i) problem.promise.holds(r, recvAt + static_cast<size_t>(i) * block, i, sendAt(i), block);
      break;
    case Collective::Scatter: problem.promise.holds(r, recvAt, shape.root, sendAt(shape.root) + ur * block, block); break;
    default: break;
  }
}

// Every range a collective's schedule names falls on whole elements.
std::string checkElementBoundaries(const MovementProblem& problem, size_t unit) {
  for (size_t r = 0; r < problem.programs.size(); ++r) {
    for (const Step& step : problem.programs[r].schedule.steps) {
      for (const Range* range : {&step.src, &step.dst}) {
        if (range->offset % unit != 0 || range->bytes % unit != 0) {
          return "rank " + std::to_string(r) + " step (" + describe(step) + ") splits an element of " +
                 std::to_string(unit) + " bytes";
        }
      }
    }
  }
  return "";
}

}  // namespace

MovementProblem movementProblem(const MovementCase& movement) {
  checkCase(movement);
  const CollectiveShape& shape = movement.shape;
  MovementProblem problem;
  problem.programs.resize(static_cast<size_t>(shape.nranks));
  for (int r = 0; r < shape.nranks; ++r) {
    CollectiveShape mine = shape;
    mine.rank = r;
    mine.layout = shape.collective == Collective::AllToAllv ? &(*movement.layouts)[static_cast<size_t>(r)] : nullptr;
    RankProgram& program = problem.programs[static_cast<size_t>(r)];
    program.schedule = buildSchedule(mine);
    layOut(movement, r, program);
  }
  problem.promise = Promise(problem.programs);
  for (int r = 0; r < shape.nranks; ++r) promiseOutput(movement, r, problem);
  return problem;
}

std::string verifyBarrier(const MovementResult& result) {
  const size_t n = result.heardFrom.size();
  for (size_t r = 0; r < n; ++r) {
    const int first = result.heardFrom[r].firstAbsent(static_cast<int>(n));
    if (first < 0) continue;
    return "barrier of " + std::to_string(n) + " ranks: rank " + std::to_string(r) + " can finish before rank " +
           std::to_string(first) + " has started (it hears from " + std::to_string(result.heardFrom[r].count()) +
           " ranks)";
  }
  return "";
}

std::string proveMovement(const MovementCase& movement, MovementResult* result) {
  try {
    const MovementProblem problem = movementProblem(movement);
    if (movement.shape.collective != Collective::Barrier) {
      std::string wrong = checkElementBoundaries(problem, movement.shape.elementBytes);
      if (!wrong.empty()) return wrong;
    }
    MovementResult simulated = simulateMovement(problem.programs);
    std::string wrong = verifyPromise(problem.programs, problem.promise, simulated);
    if (wrong.empty() && movement.shape.collective == Collective::Barrier) wrong = verifyBarrier(simulated);
    if (result != nullptr) *result = std::move(simulated);
    return wrong;
  } catch (const Error& error) {
    return error.what();
  }
}

}  // namespace loom::algo
