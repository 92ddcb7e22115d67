// Point-to-point batches: a group's sends and receives on one communicator (or a lone send or
// receive) run in one turn as one schedule (algorithms/point_to_point_batch.cc), so every
// peer's messages progress at once and any order of posting completes.
//
// Matching: the k-th send from rank a to rank b meets the k-th receive on b from a, counted
// per pair and direction over the communicator's life (CallOrder::nextMessage), whatever
// groups they were issued in. Each message carries that number and its size (LOOM_CHECK >= 1),
// so a receive that meets a send of another size fails on both ranks naming the pair, instead
// of mixing data. Collectives keep their own numbers: not every rank takes part in a message.
#include <string>
#include <vector>

#include "algorithms/executor.h"
#include "algorithms/schedule.h"
#include "base/datatype.h"
#include "base/per_thread.h"
#include "base/log.h"
#include "core/comm.h"
#include "transport/transport.h"

namespace loom {

void Communicator::runPeerOps(const std::vector<algo::CallSpec>& ops, uint64_t ticket) {
  const TurnGuard turn(*this, ticket, ops.front());
  refuseIfFailed();
  ErrorState::Running running(errors_);

  // Kept per thread, like the executor's storage: a small exchange allocates nothing here. The
  // schedule depends only on the rank and the operations' directions, peers and sizes, so an
  // exchange repeated in a loop keeps it and only renumbers its messages.
  struct Kept {
    std::vector<algo::PeerOperation> operations;
    std::vector<algo::UserBuffer> buffers;
    algo::Schedule schedule;
    std::vector<algo::PeerOperation> plannedFor;  // the operations `schedule` was built from
    int plannedRank = -1;                         // ... on this rank; -1: no schedule kept
  };
  Kept& kept = PerThread<Kept>::get();
  std::vector<algo::PeerOperation>& operations = kept.operations;
  std::vector<algo::UserBuffer>& buffers = kept.buffers;
  algo::Schedule& schedule = kept.schedule;
  operations.clear();
  buffers.clear();
  size_t totalBytes = 0;
  for (const algo::CallSpec& op : ops) {
    const bool send = op.collective == algo::Collective::Send;
    const size_t bytes = op.count * typeSize(op.type);
    // Zero-byte operations move nothing and take no number, on both ranks alike.
    const uint64_t message = bytes > 0 && op.peer != rank_ ? order_.nextMessage(send, op.peer) : 0;
    operations.push_back(algo::PeerOperation{send, op.peer, bytes, message});
    buffers.push_back(algo::UserBuffer{send ? const_cast<char*>(static_cast<const char*>(op.send))
                                            : static_cast<char*>(op.recv),
                                       bytes});
    totalBytes += bytes;
  }
  // Built only for an error or a trace line.
  const auto operation = [this, &ops] {
    const algo::CallSpec& first = ops.front();
    return (ops.size() == 1 ? std::string(algo::collectiveName(first.collective)) + " " +
                                  (first.collective == algo::Collective::Send ? "to" : "from") + " rank " +
                                  std::to_string(first.peer) + " (" + std::to_string(first.count) + " x " +
                                  typeName(first.type) + ")"
                            : "group of " + std::to_string(ops.size()) + " sends and receives") +
           " (comm " + name_ + ", rank " + std::to_string(rank_) + ")";
  };

  try {
    if (kept.plannedRank == rank_ && algo::samePointToPointShape(kept.plannedFor, operations)) {
      algo::renumberPointToPointBatch(rank_, operations, schedule);
    } else {
      kept.plannedRank = -1;  // until the new schedule is whole (building it may throw)
      algo::pointToPointBatch(rank_, operations, schedule);
      kept.plannedFor = operations;
      kept.plannedRank = rank_;
    }
    // The batch as one call for the executor: bytes, so each message's tag counts bytes.
    algo::CallSpec batch;
    batch.collective = algo::Collective::Send;
    batch.type = loomUint8;
    batch.count = totalBytes;
    batch.sequence = transport::kPointToPointTag;  // each message then tags itself (executor)
    algo::ExecutionBuffers executionBuffers;
    executionBuffers.user = &buffers;
    algo::ExecutionContext context;
    fillContext(context, operation, totalBytes);
    context.streamReductions = false;
    LOOM_TRACE(COLL, "%s: %zu steps", operation().c_str(), schedule.steps.size());
    algo::execute(batch, schedule, executionBuffers, context);
  } catch (...) {
    recordFailure();
  }
}

}  // namespace loom
