// SPDX-License-Identifier: Apache-2.0
// Calls on their way to a communicator. A stream queue and a group at its end hold these:
// descriptors (algorithms/call_spec.h) with the turn each took when it was issued, never
// closures, so what runs is what the API checked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "algorithms/call_spec.h"

namespace loom {

class Communicator;

// One turn of a communicator (core/call_order.h): a call, or, when `peerOps` is not empty, a
// batch of point-to-point operations that run as one unit (a group's sends and receives, or a
// lone send or receive; `call` is then unused).
struct Work {
  Work(const algo::CallSpec& call, uint64_t ticket) : call(call), ticket(ticket) {}
  Work(std::vector<algo::CallSpec> peerOps, uint64_t ticket) : ticket(ticket), peerOps(std::move(peerOps)) {}
  algo::CallSpec call;
  uint64_t ticket = 0;
  std::vector<algo::CallSpec> peerOps;  // sends and receives, in issue order
};

// One communicator's turns, in issue order, each with its ticket. The batch keeps the
// communicator alive until it has run.
struct CallBatch {
  std::shared_ptr<Communicator> comm;
  std::vector<Work> calls;
};

// Runs the batch's calls in order on the calling thread. Every ticket is run: after a failure
// the rest fail at once (the error is sticky) instead of leaving later calls waiting for their
// turn. Rethrows the first failure.
void runBatch(const CallBatch& batch);
// Runs several communicators' batches at once, each on its own thread (the first on the
// calling thread): host collectives complete on the thread that runs them, so one thread
// driving several communicators (after loomCommInitAll) would wait on itself.
void runBatches(const std::vector<CallBatch>& batches);

// Runs each task on its own thread (the first on the calling thread) and joins them all,
// even when starting a thread fails; rethrows the first task's exception.
void runConcurrently(const std::vector<std::function<void()>>& tasks);

}  // namespace loom
