// SPDX-License-Identifier: Apache-2.0
// A batch of point-to-point operations as one schedule. Each operation is one step on its
// peer's send or receive lane, in the batch's order, so messages between one pair match in
// issue order; the executor progresses every lane at once, which is what makes a group where
// every rank sends to all others before receiving complete instead of deadlock. A send to
// this rank itself meets this rank's receive from itself of the same rank, k-th with k-th, as
// a local copy. Operations of zero bytes are no steps at all (on both sides).
#include <algorithm>

#include "algorithms/schedule.h"
#include "base/error.h"

namespace loom::algo {

namespace {

struct SelfMessages {
  std::vector<size_t> sends, recvs;  // operation indices, in order
};

// The batch's sends to and receives from this rank itself, checked to pair up one to one.
SelfMessages selfMessages(int rank, const std::vector<PeerOperation>& operations) {
  SelfMessages self;
  // The usual batch has none: no lists to fill.
  if (std::none_of(operations.begin(), operations.end(), [rank](const PeerOperation& op) { return op.peer == rank; })) {
    return self;
  }
  for (size_t k = 0; k < operations.size(); ++k) {
    if (operations[k].bytes > 0 && operations[k].peer == rank) (operations[k].send ? self.sends : self.recvs).push_back(k);
  }
  const std::vector<size_t>& selfSends = self.sends;
  const std::vector<size_t>& selfRecvs = self.recvs;
  for (size_t i = 0; i < std::max(selfSends.size(), selfRecvs.size()); ++i) {
    if (i >= selfSends.size() || i >= selfRecvs.size()) {
      const bool send = i < selfSends.size();
      throwUsage("rank " + std::to_string(rank) + ": a " + (send ? "send to" : "receive from") +
                 " this rank itself (operation " + std::to_string((send ? selfSends : selfRecvs)[i]) +
                 " of the group) has no matching " + (send ? "receive from" : "send to") +
                 " itself in the same group, so it could never complete");
    }
    const PeerOperation& send = operations[selfSends[i]];
    const PeerOperation& recv = operations[selfRecvs[i]];
    if (send.bytes != recv.bytes) {
      throwUsage("rank " + std::to_string(rank) + ": a send of " + std::to_string(send.bytes) +
                 " bytes to this rank itself meets a receive of " + std::to_string(recv.bytes) + " bytes");
    }
  }
  return self;
}

}  // namespace

void checkSelfMessages(int rank, const std::vector<PeerOperation>& operations) { selfMessages(rank, operations); }

Schedule pointToPointBatch(int rank, const std::vector<PeerOperation>& operations) {
  Schedule schedule;
  pointToPointBatch(rank, operations, schedule);
  return schedule;
}

bool samePointToPointShape(const std::vector<PeerOperation>& built, const std::vector<PeerOperation>& operations) {
  if (built.size() != operations.size()) return false;
  for (size_t k = 0; k < built.size(); ++k) {
    if (!samePeerOperationShape(built[k], operations[k])) return false;
  }
  return true;
}

// The builder below makes one Send or Recv step per operation that moves bytes to another
// rank (isMessageStep), in operation order, before any local copy: step s is the s-th such
// operation.
void renumberPointToPointBatch(int rank, const std::vector<PeerOperation>& operations, Schedule& schedule) {
  size_t step = 0;
  for (const PeerOperation& operation : operations) {
    if (isMessageStep(rank, operation)) schedule.steps[step++].message = operation.message;
  }
}

void pointToPointBatch(int rank, const std::vector<PeerOperation>& operations, Schedule& schedule) {
  const SelfMessages self = selfMessages(rank, operations);
  schedule.steps.clear();
  schedule.scratchBytes = 0;
  for (size_t k = 0; k < operations.size(); ++k) {
    const PeerOperation& operation = operations[k];
    if (!isMessageStep(rank, operation)) continue;
    Step step{operation.send ? StepKind::Send : StepKind::Recv, operation.peer, {}, {}};
    (operation.send ? step.src : step.dst) = Range{userBuffer(k), 0, operation.bytes};
    step.message = operation.message;
    schedule.steps.push_back(step);
  }
  for (size_t i = 0; i < self.sends.size(); ++i) {
    const size_t bytes = operations[self.sends[i]].bytes;
    schedule.steps.push_back(
        Step{StepKind::Copy, -1, Range{userBuffer(self.recvs[i]), 0, bytes}, Range{userBuffer(self.sends[i]), 0, bytes}});
  }
  schedule.measure();
}

}  // namespace loom::algo
