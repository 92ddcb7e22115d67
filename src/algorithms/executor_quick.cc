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
  for (size_t i = 0; i < count; ++i) {
    const Step& step = schedule.steps[i];
    const bool message = step.kind == StepKind::Send || step.kind == StepKind::Recv;
    if (!message || step.dependsOn >= 0 || step.alsoDependsOn >= 0) return false;
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

QuickOutcome quickExchange(const CallSpec& call, const Schedule& schedule, const ExecutionBuffers& buffers,
                           const ExecutionContext& context, QuickMessages& quick, int& spunRounds,
                           std::exception_ptr& failure, int& failedPeer) {
  const size_t count = schedule.steps.size();
  const size_t elementBytes = typeSize(call.type);
  const transport::CallTag tag = callTag(call, context);
  quick.distinctCount = 0;
  for (size_t i = 0; i < count; ++i) {
    const Step& step = schedule.steps[i];
    transport::Connection* connection = (*context.connections)[step.peer];
    quick.connections[i] = connection;
    quick.done[i] = 0;
    transport::Connection** const listed = quick.distinct + quick.distinctCount;
    if (std::find(quick.distinct, listed, connection) == listed) quick.distinct[quick.distinctCount++] = connection;
  }
  size_t remaining = count;
  size_t progressing = quick.distinctCount;  // the connection in progress(), for an error
  spunRounds = 0;
  try {
    // As Run::peerLanes does, once per peer before the call's first message (a later call would
    // overwrite the tag of a receive already posted on the same connection).
    if (call.sequence != transport::kPointToPointTag) {
      for (size_t k = 0; k < quick.distinctCount; ++k) quick.distinct[k]->setCallTag(tag);
    }
    for (size_t i = 0; i < count; ++i) {
      const Step& step = schedule.steps[i];
      transport::Connection& connection = *quick.connections[i];
      // As Run::post: a message of its own tag (point-to-point, all-to-all-v) or the call's.
      const bool ownTag = step.message != 0 || call.collective == Collective::AllToAllv;
      if (step.kind == StepKind::Send) {
        if (ownTag) connection.setSendTag(messageTag(tag, step, elementBytes));
        connection.postSend(unregisteredRegion(buffers, schedule, step.src.buffer), step.src.offset, step.src.bytes);
      } else {
        if (ownTag) connection.setRecvTag(messageTag(tag, step, elementBytes));
        char* target = bufferBase(buffers, step.dst.buffer) + step.dst.offset;
        quick.sinks[i].emplace(target, nullptr, call, context, elementBytes, step.rawIncoming);
        connection.postRecv(step.dst.bytes, &*quick.sinks[i]);
      }
    }
    for (int idle = 0;;) {
      bool moved = false;
      for (progressing = 0; progressing < quick.distinctCount; ++progressing) {
        moved |= quick.distinct[progressing]->progress();
      }
      if (moved) {
        // Only a pass that moved bytes can have completed a message.
        for (size_t i = 0; i < count; ++i) {
          if (quick.done[i]) continue;
          const bool isSend = schedule.steps[i].kind == StepKind::Send;
          if (isSend ? quick.connections[i]->sendDone() : quick.connections[i]->recvDone()) {
            quick.done[i] = 1;
            --remaining;
          }
        }
        if (remaining == 0) break;
        idle = 0;
        continue;
      }
      if (++idle > context.spinPasses) {
        spunRounds = idle - 1;
        return QuickOutcome::Posted;
      }
      if (idle == kFlushAfterIdleRounds) {
        for (size_t k = 0; k < quick.distinctCount; ++k) quick.distinct[k]->flushWakeup();
      }
      cpuPause();
    }
  } catch (...) {
    failure = std::current_exception();
    if (progressing < quick.distinctCount) failedPeer = quick.distinct[progressing]->peer();
    return QuickOutcome::Failed;
  }
  // A peer asleep waiting for what this exchange sent learns of it now (as Run's end does).
  for (size_t k = 0; k < quick.distinctCount; ++k) quick.distinct[k]->flushWakeup();
  return QuickOutcome::Done;
}

}  // namespace loom::algo::executor_detail
