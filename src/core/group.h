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

#include <functional>
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
// An init queued in a group (core/group_inits.cc): loomCommInitRank* and loomCommSplit between
// GroupStart and GroupEnd return at once, and the group's end connects them all together, so
// one thread can make several ranks of one communicator (NCCL's way of driving one GPU per rank
// from one thread).
struct DeferredInit {
  bool blocking = true;  // End waits for it; else End starts it and returns loomInProgress
  std::function<void()> connect;  // the init's collective part; throws on failure
  // Records the outcome where the caller will look (the handle's pending state); never throws.
  // Called exactly once: after connect, or instead of it when the group fails first.
  std::function<void(loomResult_t code, const std::string& message)> finish;
};
void deferInit(DeferredInit init);
// Issues everything queued (when the outermost group ends); throws the first failure. Returns
// loomInProgress when it started non-blocking inits that are still connecting, else loomSuccess.
loomResult_t end();
// As end(), but runs nothing: the outermost group's calls and inits are dropped (inits fail).
void endWithoutRunning();

}  // namespace loom::group
