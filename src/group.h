// loomGroupStart/End: calls between them are queued per thread and issued at the end. Host
// collectives complete on the calling thread, so one thread driving several communicators
// (after loomCommInitAll) would wait on itself; at GroupEnd each communicator's calls run
// on their own thread, in order, and End returns when all are done.
#pragma once

#include <functional>

#include "loom.h"

namespace loom::group {

bool active();  // the calling thread is between GroupStart and GroupEnd
void start();
// Queues `work` (a collective on `comm`); `stream` null means "complete by GroupEnd".
void enqueue(loomComm_t comm, loomStream_t stream, std::function<void()> work);
// Issues everything queued (when the outermost group ends); throws the first failure.
void end();

// Runs `work` on `stream`, recording a failure as the communicator's asynchronous error.
void enqueueOnStream(loomComm_t comm, loomStream_t stream, std::function<void()> work);

}  // namespace loom::group
