// SPDX-License-Identifier: Apache-2.0
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
#include "device/device_select.h"
#include "transport/transport.h"

namespace loom {

namespace {

// A batch as one call for the executor: bytes, so each message's tag counts bytes.
algo::CallSpec asOneCall() {
  algo::CallSpec batch;
  batch.collective = algo::Collective::Send;
  batch.type = loomUint8;
  batch.sequence = transport::kPointToPointTag;  // each message then tags itself (executor)
  return batch;
}

// "send to rank 1 (100 x int32)", "group of 4 sends and receives": the batch in errors.
std::string operationName(const std::vector<algo::CallSpec>& ops) {
  const algo::CallSpec& first = ops.front();
  if (ops.size() != 1) return "group of " + std::to_string(ops.size()) + " sends and receives";
  return std::string(algo::collectiveName(first.collective)) + " " +
         (first.collective == algo::Collective::Send ? "to" : "from") + " rank " + std::to_string(first.peer) + " (" +
         std::to_string(first.count) + " x " + typeName(first.type) + ")";
}

}  // namespace

inline void Communicator::peerOpsOnHost(const std::vector<algo::CallSpec>& ops) {
  // Kept per thread, like the executor's storage: a small exchange allocates nothing here. The
  // schedule depends only on the communicator (rank, connections) and the operations'
  // directions, peers and sizes, so an exchange repeated in a loop keeps it, with whether it is
  // a quick exchange, and only renumbers its messages, in the same pass that reads the batch.
  struct Kept {
    std::vector<algo::PeerOperation> operations;  // this batch's; before the pass, the planned one's
    std::vector<algo::UserBuffer> buffers;
    algo::Schedule schedule;
    uint64_t plannedComm = 0;  // the serial of the communicator `schedule` is for; 0: none kept
    algo::QuickPlan quick;  // the schedule's quick exchange, worked out on its first run
    algo::CallSpec batch = asOneCall();  // the batch as the executor's call; only its size changes
  };
  Kept& kept = PerThread<Kept>::get();
  std::vector<algo::PeerOperation>& operations = kept.operations;
  std::vector<algo::UserBuffer>& buffers = kept.buffers;
  algo::Schedule& schedule = kept.schedule;
  const size_t count = ops.size();
  bool samePlan = kept.plannedComm == serial_ && operations.size() == count;
  if (!samePlan) {
    kept.plannedComm = 0;  // until a new schedule is whole (building it may throw)
    operations.resize(count);
    buffers.resize(count);
  }
  size_t totalBytes = 0;
  size_t step = 0;  // the kept schedule's step of the next message (algo::renumberPointToPointBatch)
  for (size_t k = 0; k < count; ++k) {
    const algo::CallSpec& op = ops[k];
    const bool send = op.collective == algo::Collective::Send;
    algo::PeerOperation operation{send, op.peer, op.count * typeSize(op.type), 0};
    // Zero-byte operations move nothing and take no number, on both ranks alike.
    const bool message = algo::isMessageStep(rank_, operation);
    if (message) operation.message = order_.nextMessage(send, op.peer);
    samePlan = samePlan && algo::samePeerOperationShape(operations[k], operation);
    if (samePlan && message) schedule.steps[step++].message = operation.message;
    operations[k] = operation;
    buffers[k] = algo::UserBuffer{send ? const_cast<char*>(static_cast<const char*>(op.send)) : static_cast<char*>(op.recv),
                                  operation.bytes};
    totalBytes += operation.bytes;
  }
  // Built only for an error or a trace line.
  const auto operation = [this, &ops] {
    return operationName(ops) + " (comm " + name_ + ", rank " + std::to_string(rank_) + ")";
  };

  try {
    if (!samePlan) {
      kept.plannedComm = 0;
      algo::pointToPointBatch(rank_, operations, schedule);
      kept.quick.state = algo::QuickPlan::State::Unknown;
      kept.plannedComm = serial_;
    }
    algo::CallSpec& batch = kept.batch;
    batch.count = totalBytes;
    algo::ExecutionBuffers executionBuffers;
    executionBuffers.user = &buffers;
    algo::ExecutionContext context;
    fillContext(context, operation, totalBytes);
    context.streamReductions = false;
    context.quickPlan = &kept.quick;
    LOOM_TRACE(COLL, "%s: %zu steps", operation().c_str(), schedule.steps.size());
    algo::execute(batch, schedule, executionBuffers, context);
  } catch (...) {
    const auto name = [&ops] { return operationName(ops); };  // built only once the peers are told
    recordFailure(name);
  }
}

// Sends and receives of device buffers: the host path over pinned copies (core/device_staging.h),
// a send starting once its buffer has arrived and a receive's data going back once it is complete.
void Communicator::peerOpsStaged(const std::vector<algo::CallSpec>& ops) {
  const auto name = [&ops] { return operationName(ops); };
  std::optional<DeviceGuard> onDevice;
  std::vector<algo::CallSpec> hostOps;
  // A batch of one piece or less waits for its input whole and keeps the quick exchange.
  size_t bytes = 0;
  for (const algo::CallSpec& op : ops) bytes += op.count * typeSize(op.type);
  const bool whole = settings_.deviceCopyBytes == 0 || bytes <= settings_.deviceCopyBytes;
  try {
    onDevice.emplace(device::processRuntime(), device_);
    const std::span<const algo::CallSpec> staged =
        staging_.stageIn(ops, device_, rank_, nranks_, whole ? 0 : settings_.deviceCopyBytes);
    hostOps.assign(staged.begin(), staged.end());
    if (whole) staging_.awaitInput(settings_.timeoutMs);
  } catch (...) {
    failStaged(name);
  }
  try {
    const StagedScope overlapped(*this, !whole);
    peerOpsOnHost(hostOps);  // tells the peers and records its own failure
  } catch (...) {
    staging_.settle(settings_.timeoutMs);
    throw;
  }
  try {
    staging_.stageOut(settings_.timeoutMs);
  } catch (...) {
    failStaged(name);
  }
}

void Communicator::runPeerOps(const std::vector<algo::CallSpec>& ops, uint64_t ticket) {
  const TurnGuard turn(*this, ticket, ops.front());
  refuseIfFailed();
  ErrorState::Running running(errors_);
  for (const algo::CallSpec& op : ops) {
    if (op.deviceBuffers != 0) [[unlikely]] {
      peerOpsStaged(ops);
      return;
    }
  }
  peerOpsOnHost(ops);
}

}  // namespace loom
