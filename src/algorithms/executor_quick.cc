#include "algorithms/executor_quick.h"

#include <algorithm>

#include "base/backoff.h"
#include "base/datatype.h"

namespace loom::algo::executor_detail {

bool quickEligible(const Schedule& schedule, const ExecutionContext& context) {
  const size_t count = schedule.steps.size();
  if (count == 0 || count > kQuickSteps || context.connections == nullptr || context.spinPasses == 0) {
    return false;
  }
  const auto& connections = *context.connections;
  size_t bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    const Step& step = schedule.steps[i];
    const bool message = step.kind == StepKind::Send || step.kind == StepKind::Recv;
    if (!message || step.dependsOn >= 0 || step.alsoDependsOn >= 0) return false;
    bytes += step.kind == StepKind::Send ? step.src.bytes : step.dst.bytes;
    if (bytes > kQuickBytes) return false;
    if (step.peer < 0 || step.peer >= static_cast<int>(connections.size()) || connections[step.peer] == nullptr ||
        connections[step.peer]->transport().registersMemory()) {
      return false;  // Run reports a missing connection
    }
    for (size_t j = 0; j < i; ++j) {
      if (schedule.steps[j].peer == step.peer && schedule.steps[j].kind == step.kind) return false;
    }
  }
  return true;
}

namespace {

// Marks the first `count` messages that have completed; returns how many are left.
size_t collectCompleted(size_t count, QuickMessages& quick, size_t remaining) {
  for (size_t i = 0; i < count; ++i) {
    if (quick.done[i]) continue;
    if (quick.isSend[i] ? quick.connections[i]->sendDone() : quick.connections[i]->recvDone()) {
      quick.done[i] = 1;
      --remaining;
    }
  }
  return remaining;
}

void flushWakeups(const QuickMessages& quick) {
  for (size_t k = 0; k < quick.distinctCount; ++k) quick.distinct[k]->flushWakeup();
}

}  // namespace

QuickOutcome quickExchange(const CallSpec& call, const Schedule& schedule, const ExecutionBuffers& buffers,
                           const ExecutionContext& context, QuickMessages& quick, int& spunRounds,
                           std::exception_ptr& failure, int& failedPeer) {
  const size_t count = schedule.steps.size();
  const size_t elementBytes = typeSize(call.type);
  const transport::CallTag tag = callTag(call, context);
  quick.distinctCount = 0;
  for (size_t i = 0; i < count; ++i) {
    transport::Connection* connection = (*context.connections)[schedule.steps[i].peer];
    quick.connections[i] = connection;
    quick.done[i] = 0;
    quick.isSend[i] = schedule.steps[i].kind == StepKind::Send;
    transport::Connection** const listed = quick.distinct + quick.distinctCount;
    if (std::find(quick.distinct, listed, connection) == listed) quick.distinct[quick.distinctCount++] = connection;
  }
  spunRounds = 0;
  // As Run does: the call's tag once per peer before its first message (so it never overwrites
  // the tag of a receive already posted on the connection), a message's own where it has one.
  if (call.sequence != transport::kPointToPointTag) {
    for (size_t k = 0; k < quick.distinctCount; ++k) quick.distinct[k]->setCallTag(tag);
  }
  for (size_t i = 0; i < count; ++i) {
    const Step& step = schedule.steps[i];
    transport::Connection& connection = *quick.connections[i];
    if (step.kind == StepKind::Send) {
      if (carriesOwnTag(call, step)) connection.setSendTag(messageTag(tag, step, elementBytes));
      connection.postSend(unregisteredRegion(buffers, schedule, step.src.buffer), step.src.offset, step.src.bytes);
    } else {
      if (carriesOwnTag(call, step)) connection.setRecvTag(messageTag(tag, step, elementBytes));
      quick.sinks[i].emplace(writableTarget(buffers, step.dst), nullptr, call, context, elementBytes, step.rawIncoming);
      connection.postRecv(step.dst.bytes, &*quick.sinks[i]);
    }
  }
  // A transport may complete a message when it is posted (a send copied away at once).
  size_t remaining = collectCompleted(count, quick, count);
  size_t progressing = 0;  // the connection in progress(), to name it in an error
  try {
    for (int idle = 0; remaining > 0;) {
      bool moved = false;
      for (progressing = 0; progressing < quick.distinctCount; ++progressing) {
        moved |= quick.distinct[progressing]->progress();
      }
      if (moved) {
        // Otherwise nothing can have completed (a message completes as its bytes move).
        remaining = collectCompleted(count, quick, remaining);
        idle = 0;
        continue;
      }
      if (++idle > context.spinPasses) {
        spunRounds = idle - 1;
        return QuickOutcome::Posted;
      }
      if (idle == kFlushAfterIdleRounds) flushWakeups(quick);
      cpuPause();
    }
  } catch (...) {
    failure = std::current_exception();
    failedPeer = progressing < quick.distinctCount ? quick.distinct[progressing]->peer() : -1;
    return QuickOutcome::Failed;
  }
  flushWakeups(quick);  // a peer asleep waiting for what this exchange sent learns of it now
  return QuickOutcome::Done;
}

}  // namespace loom::algo::executor_detail
