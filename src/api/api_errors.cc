// Version, error strings, the last error, and the registry of live communicators.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "api/api_internal.h"
#include "core/group.h"

namespace loom::api {

namespace {
thread_local std::string lastError;
std::mutex registryMutex;
std::unordered_set<loomComm*>& registry() {
  static auto* live = new std::unordered_set<loomComm*>();  // never destroyed: used at exit
  return *live;
}
// getpid() is a system call (glibc stopped caching it); every collective checks the caller's
// process, so keep the pid here and refresh it in the child after fork.
std::atomic<pid_t> cachedPid{0};
void refreshPid() { cachedPid.store(getpid(), std::memory_order_relaxed); }
pid_t currentPid() {
  static const bool registered = [] {
    refreshPid();
    pthread_atfork(nullptr, nullptr, refreshPid);
    return true;
  }();
  (void)registered;
  return cachedPid.load(std::memory_order_relaxed);
}
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

void registerComm(loomComm* comm) {
  std::lock_guard lock(registryMutex);
  registry().insert(comm);
}

bool unregisterComm(loomComm* comm) {
  std::lock_guard lock(registryMutex);
  return registry().erase(comm) == 1;
}

std::shared_ptr<Communicator> checkedComm(loomComm_t comm, const char* what) {
  if (comm == nullptr) throwArgument(std::string(what) + " is NULL");
  std::shared_ptr<Communicator> impl;
  pid_t creator = 0;
  {
    std::lock_guard lock(registryMutex);
    if (registry().count(comm) == 0) {
      throwArgument(std::string(what) + " is not a live communicator (destroyed, or never created)");
    }
    impl = comm->impl;
    creator = comm->creatorPid;
  }
  if (creator != currentPid()) {
    throwUsage(std::string(what) + " was created by process " + std::to_string(creator) +
               " and cannot be used in process " + std::to_string(getpid()) + " (after fork?)");
  }
  return impl;
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
    std::string message;
    if (api::checkedComm(comm)->asyncError(&message) != loomSuccess) asyncText = message;
    else asyncText.clear();
  } catch (...) {
    asyncText.clear();
  }
  return asyncText.c_str();
}

}  // extern "C"
