// Shared by the C API files: the exception boundary and handle checks.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "base/error.h"
#include "core/comm.h"
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

// Live communicators: a destroyed or foreign handle is an error, not a crash.
void registerComm(loomComm* comm);
// True for the one caller that removed it (two threads destroying one handle: one wins).
bool unregisterComm(loomComm* comm);
// Throws loomInvalidArgument (null/unknown/destroyed) or loomInvalidUsage (used from a
// process other than the one that created it, e.g. after fork). The returned reference
// keeps the communicator alive even if another thread destroys the handle meanwhile.
std::shared_ptr<Communicator> checkedComm(loomComm_t comm, const char* what = "comm");

}  // namespace loom::api
