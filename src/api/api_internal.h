// SPDX-License-Identifier: Apache-2.0
// Shared by the C API files: the exception boundary and handle checks.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "core/comm.h"
#include "core/stream.h"
#include "loom.h"

namespace loom::api {

void setLastError(const std::string& message);
// Inside loomGroupStart/End a failed call also fails the group (group.cc).
void noteGroupFailure(loomResult_t code, const std::string& message);

// Records a failure of `function` as the thread's last error (and the group's, in a group).
// noexcept: if even that cannot allocate, the code alone still reaches the caller.
loomResult_t fail(const char* function, loomResult_t code, const char* message) noexcept;

// Runs `body`, converting any exception into a result code and the thread's last error
// ("function: message"). Nothing escapes into C.
template <class Body>
loomResult_t guarded(const char* function, Body&& body) {
  try {
    std::forward<Body>(body)();
    return loomSuccess;
  } catch (const Error& error) {
    return fail(function, error.code(), error.what());
  } catch (const std::bad_alloc&) {
    return fail(function, loomSystemError, "out of memory");
  } catch (const std::exception& error) {
    return fail(function, loomInternalError, (std::string("internal error: ") + error.what()).c_str());
  } catch (...) {
    return fail(function, loomInternalError, "internal error: unknown exception");
  }
}

// A non-blocking init (config.blocking = 0) running on its own thread; its communicator is in
// the table from the start, so loomCommGetAsyncError and loomCommAbort can reach it.
struct PendingInit {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  loomResult_t code = loomSuccess;
  std::string message;

  // A grouped init (deferGroupedInit) waits for its group's end before anything runs it.
  bool queued = false;

  // The first outcome stays: a later finish (of an init cancelled while queued) is ignored.
  void finish(loomResult_t result, std::string text);
  // The group's end is about to connect it: false when it was cancelled first.
  bool start();
  // A destroy or abort before its group's end: finished now with `text`, so nothing waits for
  // it; false when it is not queued (it runs, or ran).
  bool cancelQueued(std::string text);
  // Waits until the init thread is done, at most timeoutMs; false if it is not.
  bool waitDone(int timeoutMs);
  // loomInProgress, loomSuccess, or the init's error (with its message).
  loomResult_t state(std::string* text);
};

// What a communicator handle names (api/handle_table.h).
struct CommEntry {
  std::shared_ptr<Communicator> impl;
  pid_t creator = 0;
  std::shared_ptr<PendingInit> init;  // null unless made by a non-blocking init
};

// Live communicators: a destroyed, stale, garbage or foreign handle is an error, not a crash.
loomComm_t registerComm(std::shared_ptr<Communicator> impl, std::shared_ptr<PendingInit> init = nullptr);
// The entry, for the one caller that removed it (two threads destroying one handle: one wins).
std::optional<CommEntry> unregisterComm(loomComm_t comm);
// Throws loomInvalidArgument (null/unknown/destroyed) or loomInvalidUsage (used from a
// process other than the one that created it, e.g. after fork).
CommEntry checkedCommEntry(loomComm_t comm, const char* what = "comm");
// As checkedCommEntry, for a communicator that is ready: one whose non-blocking init is still
// running is loomInvalidUsage, one whose init failed gives that error. The returned reference
// keeps the communicator alive even if another thread destroys the handle meanwhile.
std::shared_ptr<Communicator> checkedComm(loomComm_t comm, const char* what = "comm");
// Whether `comm` is a live handle of `pinned`, a communicator the caller holds a reference to (a
// group's, core/group.h), as this thread's last checkedComm found: then checkedComm would return
// `pinned`, and the caller needs no reference of its own. False: ask checkedComm.
bool namesPinnedComm(loomComm_t comm, const Communicator* pinned, const char* what = "comm");

// Live streams, likewise. checkedStream(NULL) is null: the NULL stream is the calling thread.
loomStream_t registerStream(std::shared_ptr<Stream> stream);
std::shared_ptr<Stream> unregisterStream(loomStream_t stream);  // null if not live
std::shared_ptr<Stream> lookUpStream(loomStream_t stream);
inline std::shared_ptr<Stream> checkedStream(loomStream_t stream) {
  return stream == nullptr ? nullptr : lookUpStream(stream);  // the common NULL stream: no call
}

}  // namespace loom::api
