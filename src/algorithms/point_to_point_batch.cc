// A batch of point-to-point operations as one schedule. Each operation is one step on its
// peer's send or receive lane, in the batch's order, so messages between one pair match in
// issue order; the executor progresses every lane at once, which is what makes a group where
// every rank sends to all others before receiving complete instead of deadlock. A send to
// this rank itself meets this rank's receive from itself of the same rank, k-th with k-th, as
// a local copy. Operations of zero bytes are no steps at all (on both sides).
#include "algorithms/schedule.h"
#include "base/error.h"

namespace loom::algo {

Schedule pointToPointBatch(int rank, const std::vector<PeerOperation>& operations) {
  Schedule schedule;
  std::vector<size_t> selfSends, selfRecvs;
  for (size_t k = 0; k < operations.size(); ++k) {
    const PeerOperation& operation = operations[k];
    if (operation.bytes == 0) continue;
    if (operation.peer == rank) {
      (operation.send ? selfSends : selfRecvs).push_back(k);
      continue;
    }
    Step step{operation.send ? StepKind::Send : StepKind::Recv, operation.peer, {}, {}};
    (operation.send ? step.src : step.dst) = Range{userBuffer(k), 0, operation.bytes};
    step.message = operation.message;
    schedule.steps.push_back(step);
  }
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
    schedule.steps.push_back(
        Step{StepKind::Copy, -1, Range{userBuffer(selfRecvs[i]), 0, recv.bytes}, Range{userBuffer(selfSends[i]), 0, send.bytes}});
  }
  schedule.measure();
  return schedule;
}

}  // namespace loom::algo
