// SPDX-License-Identifier: Apache-2.0
// Version, error strings and the last error.
#include "api/api_internal.h"
#include "base/version.h"
#include "core/group.h"

namespace loom::api {

namespace {
thread_local std::string lastError;
}  // namespace

void setLastError(const std::string& message) { lastError = message; }

loomResult_t fail(const char* function, loomResult_t code, const char* message) noexcept {
  try {
    const std::string text = std::string(function) + ": " + message;
    lastError = text;
    if (group::active()) group::noteFailure(code, text);
  } catch (...) {
  }
  return code;
}

}  // namespace loom::api

using namespace loom;

extern "C" {

loomResult_t loomGetVersion(int* version) {
  return api::guarded("loomGetVersion", [&] {
    if (version == nullptr) throwArgument("version is NULL");
    *version = LOOM_VERSION_CODE;
  });
}

const char* loomGetVersionString(void) { return versionString(); }

const char* loomGetErrorString(loomResult_t result) {
  switch (result) {
    case loomSuccess: return "no error";
    case loomUnhandledCudaError: return "unhandled cuda error";
    case loomSystemError: return "unhandled system error (network, shared memory, timeout)";
    case loomInternalError: return "internal error - please report this issue to the Loom developers";
    case loomInvalidArgument: return "invalid argument";
    case loomInvalidUsage: return "invalid usage";
    case loomRemoteError: return "remote process exited or there was a network error";
    case loomInProgress: return "Loom operation in progress";
    default: return "unknown result code";
  }
}

const char* loomGetLastError(loomComm_t comm) {
  if (!api::lastError.empty() || comm == nullptr) return api::lastError.c_str();
  // Nothing failed on this thread: report the communicator's asynchronous error, if any.
  thread_local std::string asyncText;
  try {
    const api::CommEntry entry = api::checkedCommEntry(comm);
    std::string message;
    const loomResult_t state = entry.init ? entry.init->state(&message) : loomSuccess;
    if (state != loomSuccess && state != loomInProgress) {
      asyncText = message;  // the non-blocking init failed
    } else if (state == loomSuccess && entry.impl->asyncError(&message) != loomSuccess) {
      asyncText = message;
    } else {
      asyncText.clear();
    }
  } catch (...) {
    asyncText.clear();
  }
  return asyncText.c_str();
}

}  // extern "C"
