// SPDX-License-Identifier: Apache-2.0
#include "algorithms/executor_quick.h"

#include <algorithm>

#include "base/backoff.h"
#include "base/datatype.h"

namespace loom::algo::executor_detail {

bool quickEligible(const Schedule& schedule, const ExecutionContext& context) {
  const size_t count = schedule.steps.size();
  if (count == 0 || count > kQuickSteps || context.connections == nullptr) {
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

void prepareQuickPlan(const CallSpec& call, const Schedule& schedule, const ExecutionContext& context,
                      QuickPlan& plan) {
  if (!quickEligible(schedule, context)) {
    plan.state = QuickPlan::State::Ineligible;
    return;
  }
  const size_t elementBytes = typeSize(call.type);
  plan.callTag = callTag(call, context);
  plan.count = schedule.steps.size();
  plan.distinctCount = 0;
  for (size_t i = 0; i < plan.count; ++i) {
    const Step& step = schedule.steps[i];
    transport::Connection* connection = (*context.connections)[step.peer];
    plan.connections[i] = connection;
    plan.isSend[i] = step.kind == StepKind::Send;
    plan.ownTag[i] = carriesOwnTag(call, step);
    plan.tags[i] = messageTag(plan.callTag, step, elementBytes);
    plan.tags[i].sequence = plan.callTag.sequence;  // the message's number goes in per exchange
    transport::Connection** const listed = plan.distinct + plan.distinctCount;
    if (std::find(plan.distinct, listed, connection) == listed) plan.distinct[plan.distinctCount++] = connection;
  }
  plan.state = QuickPlan::State::Eligible;
}

namespace {

// Marks the first `count` messages that have completed; returns how many are left.
size_t collectCompleted(const QuickPlan& plan, QuickMessages& quick, size_t remaining) {
  for (size_t i = 0; i < plan.count; ++i) {
    if (quick.done[i]) continue;
    if (plan.isSend[i] ? plan.connections[i]->sendDone() : plan.connections[i]->recvDone()) {
      quick.done[i] = 1;
      --remaining;
    }
  }
  return remaining;
}

void flushWakeups(const QuickPlan& plan) {
  for (size_t k = 0; k < plan.distinctCount; ++k) plan.distinct[k]->flushWakeup();
}

// A message's tag: the plan's, numbered as this exchange numbers it (messageTag's rule).
transport::CallTag numberedTag(const QuickPlan& plan, size_t i, const Step& step) {
  transport::CallTag tag = plan.tags[i];
  if (tag.sequence != 0 && step.message != 0) tag.sequence = transport::kPointToPointTag | step.message;
  return tag;
}

}  // namespace

QuickOutcome quickExchange(const CallSpec& call, const Schedule& schedule, const QuickPlan& plan,
                           const ExecutionBuffers& buffers, const ExecutionContext& context, QuickMessages& quick,
                           int& spunRounds, std::exception_ptr& failure, int& failedPeer) {
  const size_t count = plan.count;
  const size_t elementBytes = typeSize(call.type);
  spunRounds = 0;
  // As Run does: the call's tag once per peer before its first message (so it never overwrites
  // the tag of a receive already posted on the connection), a message's own where it has one.
  if (call.sequence != transport::kPointToPointTag) {
    for (size_t k = 0; k < plan.distinctCount; ++k) plan.distinct[k]->setCallTag(plan.callTag);
  }
  // The sends first, pushed by one pass over the connections before the receives are posted:
  // setting up the receives then overlaps the sent lines' trip to the peers instead of
  // delaying it. A transport may complete a send when it is posted (copied away at once).
  bool sendsInFlight = false;
  for (size_t i = 0; i < count; ++i) {
    quick.done[i] = 0;
    if (!plan.isSend[i]) continue;
    const Step& step = schedule.steps[i];
    transport::Connection& connection = *plan.connections[i];
    if (plan.ownTag[i]) connection.setSendTag(numberedTag(plan, i, step));
    connection.postSend(unregisteredRegion(buffers, schedule, step.src.buffer), step.src.offset, step.src.bytes);
    sendsInFlight = sendsInFlight || !connection.sendDone();
  }
  size_t progressing = 0;  // the connection in progress(), to name it in an error
  try {
    if (sendsInFlight) {
      for (progressing = 0; progressing < plan.distinctCount; ++progressing) plan.distinct[progressing]->progress();
    }
  } catch (...) {
    failure = std::current_exception();
    failedPeer = plan.distinct[progressing]->peer();
    return QuickOutcome::Failed;
  }
  for (size_t i = 0; i < count; ++i) {
    if (plan.isSend[i]) continue;
    const Step& step = schedule.steps[i];
    transport::Connection& connection = *plan.connections[i];
    if (plan.ownTag[i]) connection.setRecvTag(numberedTag(plan, i, step));
    quick.sinks[i].emplace(writableTarget(buffers, step.dst), nullptr, call, context, elementBytes, step.rawIncoming);
    connection.postRecv(step.dst.bytes, &*quick.sinks[i]);
  }
  size_t remaining = collectCompleted(plan, quick, count);
  try {
    for (int idle = 0; remaining > 0;) {
      bool moved = false;
      for (progressing = 0; progressing < plan.distinctCount; ++progressing) {
        moved |= plan.distinct[progressing]->progress();
      }
      if (moved) {
        // Otherwise nothing can have completed (a message completes as its bytes move).
        remaining = collectCompleted(plan, quick, remaining);
        idle = 0;
        continue;
      }
      if (++idle > context.spinPasses) {
        spunRounds = idle - 1;
        return QuickOutcome::Posted;
      }
      if (idle == kFlushAfterIdleRounds) flushWakeups(plan);
      cpuPause();
    }
  } catch (...) {
    failure = std::current_exception();
    failedPeer = progressing < plan.distinctCount ? plan.distinct[progressing]->peer() : -1;
    return QuickOutcome::Failed;
  }
  flushWakeups(plan);  // a peer asleep waiting for what this exchange sent learns of it now
  return QuickOutcome::Done;
}

}  // namespace loom::algo::executor_detail
