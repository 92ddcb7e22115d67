// Shared by the C API files: the exception boundary and handle checks.
#pragma once

#include <string>
#include <utility>

#include "comm.h"
#include "error.h"
#include "loom.h"

namespace loom::api {

void setLastError(const std::string& message);
void clearLastError();

// Runs `body`, converting any exception into a result code and the thread's last error
// ("function: message"). Nothing escapes into C.
template <class Body>
loomResult_t guarded(const char* function, Body&& body) {
  try {
    std::forward<Body>(body)();
    return loomSuccess;
  } catch (const Error& error) {
    setLastError(std::string(function) + ": " + error.what());
    return error.code();
  } catch (const std::bad_alloc&) {
    setLastError(std::string(function) + ": out of memory");
    return loomSystemError;
  } catch (const std::exception& error) {
    setLastError(std::string(function) + ": internal error: " + error.what());
    return loomInternalError;
  } catch (...) {
    setLastError(std::string(function) + ": internal error: unknown exception");
    return loomInternalError;
  }
}

// Live communicators: a destroyed or foreign handle is an error, not a crash.
void registerComm(loomComm* comm);
void unregisterComm(loomComm* comm);
// Throws loomInvalidArgument (null/unknown/destroyed) or loomInvalidUsage (used from a
// process other than the one that created it, e.g. after fork).
Communicator& checkedComm(loomComm_t comm, const char* what = "comm");

}  // namespace loom::api
