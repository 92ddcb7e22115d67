// SPDX-License-Identifier: Apache-2.0
#include "core/group_inits.h"

#include <exception>
#include <functional>
#include <new>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "core/call_batch.h"

namespace loom::group {

namespace {

// Fails every init with the same reason, then throws it.
[[noreturn]] void refuseAll(std::vector<DeferredInit>& inits, loomResult_t code, const std::string& message) {
  for (DeferredInit& init : inits) init.finish(code, message);
  throw Error(code, message);
}

// Connects one init and records how it went; rethrows for the blocking path to report.
void connectAndFinish(DeferredInit& init) {
  try {
    init.connect();
    init.finish(loomSuccess, "");
  } catch (const Error& error) {
    init.finish(error.code(), error.what());
    throw;
  } catch (const std::bad_alloc&) {
    init.finish(loomSystemError, "out of memory");
    throw;
  } catch (const std::exception& error) {
    init.finish(loomInternalError, std::string("internal error: ") + error.what());
    throw;
  }
}

}  // namespace

loomResult_t runDeferredInits(std::vector<DeferredInit>& inits, size_t otherCalls, loomResult_t failure,
                              const std::string& failureMessage) {
  const std::string count = std::to_string(inits.size()) + " communicator init" + (inits.size() == 1 ? "" : "s");
  if (failure != loomSuccess) {
    refuseAll(inits, failure, "a call in the group failed, so none of its " + count + " ran: " + failureMessage);
  }
  if (otherCalls > 0) {
    // NCCL refuses it too: an init's rank is not ready to run a collective until End has
    // connected it, and the calls would wait on ranks that this thread has not yet connected.
    refuseAll(inits, loomInvalidUsage,
              "the group mixes " + count + " with " + std::to_string(otherCalls) +
                  " other calls; group the inits alone, then the calls in a group of their own. Nothing ran");
  }
  size_t blocking = 0;
  for (const DeferredInit& init : inits) blocking += init.blocking ? 1 : 0;
  if (blocking != 0 && blocking != inits.size()) {
    refuseAll(inits, loomInvalidUsage,
              "the group mixes blocking and non-blocking configs (" + std::to_string(blocking) + " of " + count +
                  " blocking); as in NCCL, one group's communicators are all blocking or all non-blocking. Nothing ran");
  }
  if (blocking == 0) {
    // Each thread owns its init (the functions hold their references); destroy and abort
    // wait for it through the handle's pending state, as for a non-blocking init outside a group.
    for (DeferredInit& init : inits) {
      try {
        std::thread([init]() mutable {
          try {
            connectAndFinish(init);
          } catch (...) {
          }
        }).detach();
      } catch (const std::system_error& error) {
        init.finish(loomSystemError, std::string("cannot start the init's thread: ") + error.what());
      } catch (...) {
        init.finish(loomSystemError, "out of memory starting the init's thread");
      }
    }
    return loomInProgress;
  }
  // A task that never started (no thread for it) has not finished its init: done here.
  std::vector<char> started(inits.size(), 0);
  std::vector<std::function<void()>> tasks;
  tasks.reserve(inits.size());
  for (size_t i = 0; i < inits.size(); ++i) {
    tasks.push_back([&inits, &started, i] {
      started[i] = 1;
      connectAndFinish(inits[i]);
    });
  }
  try {
    runConcurrently(tasks);  // joins them all, then rethrows the first failure
  } catch (...) {
    for (size_t i = 0; i < inits.size(); ++i) {
      if (!started[i]) inits[i].finish(loomSystemError, "no thread could be started to connect it");
    }
    throw;
  }
  return loomSuccess;
}

}  // namespace loom::group
