// SPDX-License-Identifier: Apache-2.0
// Issuing calls: now, on a stream, or queued in a group.
//
// loomGroupStart/End: calls between them are queued per thread and issued at the end. Host
// collectives complete on the thread that runs them, so one thread driving several
// communicators (after loomCommInitAll) would wait on itself; at GroupEnd each
// communicator's calls run on their own thread, in order (core/call_batch.h) — on the calling
// thread's behalf for the NULL stream, inside one stream item per stream otherwise — and End
// returns when the NULL-stream calls are done. A call that fails its checks inside a group
// fails the whole group at End, and nothing of it runs (as in NCCL).
#pragma once

#include <memory>
#include <string>

#include "algorithms/call_spec.h"
#include "loom.h"

namespace loom {
class Communicator;
class Stream;
}

namespace loom::group {

bool active();  // the calling thread is between GroupStart and GroupEnd
void start();
// Outside a group: runs the call now, or enqueues it on `stream` (the stream call.stream names;
// null for the NULL stream). Inside: queues it. `comm` is the communicator the call's handle
// names. Taking the turn and queueing are one step per communicator (core/call_order.h): a
// second thread inside that step on the same communicator gets loomInvalidUsage, and its call
// is not queued.
void issue(const algo::CallSpec& call, std::shared_ptr<Communicator> comm, std::shared_ptr<Stream> stream);
// Inside a group: the communicator of the call queued last (null: none, or outside a group). The
// group holds a reference to it until it ends, so a call on it can be queued without one of its
// own, by issuePinned (which needs pinned() not null).
Communicator* pinned();
void issuePinned(algo::CallSpec call, std::shared_ptr<Stream> stream);
// A call inside the group failed its checks: GroupEnd will fail and run nothing.
void noteFailure(loomResult_t code, const std::string& message);
// Issues everything queued (when the outermost group ends); throws the first failure.
void end();

}  // namespace loom::group
