// SPDX-License-Identifier: Apache-2.0
// The tables of live communicators and streams (api/handle_table.h), and the checks every entry
// point makes on the handles it is given.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "api/api_internal.h"
#include "api/handle_table.h"
#include "api/red_op_table.h"
#include "base/per_thread.h"

namespace loom::api {

namespace {

// Never destroyed: handles are used by atexit handlers and by threads still running at exit.
// Guarded across fork: every init and destroy takes a table's lock, in any thread.
template <class Entry>
HandleTable<Entry>* makeProcessTable(uint8_t tag) {
  auto* table = new HandleTable<Entry>(tag);
  table->guardAcrossFork();
  return table;
}
HandleTable<CommEntry>& comms() {
  static auto* const table = makeProcessTable<CommEntry>(0xc1);
  return *table;
}
struct StreamEntry {
  std::shared_ptr<Stream> stream;
  pid_t creator = 0;
};
HandleTable<StreamEntry>& streams() {
  static auto* const table = makeProcessTable<StreamEntry>(0x51);
  return *table;
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

[[noreturn, gnu::noinline, gnu::cold]] void throwForeignProcess(pid_t creator, const char* what) {
  throwUsage(std::string(what) + " was created by process " + std::to_string(creator) +
             " and cannot be used in process " + std::to_string(getpid()) + " (after fork?)");
}

// Every call passes here: the message is built out of line.
inline void checkProcess(pid_t creator, const char* what) {
  if (creator != currentPid()) throwForeignProcess(creator, what);
}

}  // namespace

bool PendingInit::start() {
  std::lock_guard lock(mutex);
  if (done) return false;
  queued = false;
  return true;
}

bool PendingInit::cancelQueued(std::string text) {
  {
    std::lock_guard lock(mutex);
    if (!queued || done) return false;
    queued = false;
    done = true;
    code = loomInvalidUsage;
    message = std::move(text);
  }
  finished.notify_all();
  return true;
}

void PendingInit::finish(loomResult_t result, std::string text) {
  {
    std::lock_guard lock(mutex);
    if (done) return;
    done = true;
    code = result;
    message = std::move(text);
  }
  finished.notify_all();
}

bool PendingInit::waitDone(int timeoutMs) {
  std::unique_lock lock(mutex);
  return finished.wait_for(lock, std::chrono::milliseconds(timeoutMs), [&] { return done; });
}

loomResult_t PendingInit::state(std::string* text) {
  std::lock_guard lock(mutex);
  if (!done) return loomInProgress;
  if (text != nullptr) *text = message;
  return code;
}

loomComm_t registerComm(std::shared_ptr<Communicator> impl, std::shared_ptr<PendingInit> init) {
  const std::optional<uintptr_t> handle = comms().add(CommEntry{std::move(impl), currentPid(), std::move(init)});
  if (!handle) throw Error(loomSystemError, "too many live communicators (16777216)");
  return reinterpret_cast<loomComm_t>(*handle);
}

std::optional<CommEntry> unregisterComm(loomComm_t comm) {
  std::optional<CommEntry> entry = comms().remove(reinterpret_cast<uintptr_t>(comm));
  if (entry) removePreMulSumOps(comm);  // its operators die with the handle (red_op_table.h)
  return entry;
}

CommEntry checkedCommEntry(loomComm_t comm, const char* what) {
  if (comm == nullptr) throwArgument(std::string(what) + " is NULL");
  CommEntry entry;
  const bool live = comms().find(reinterpret_cast<uintptr_t>(comm), [&](const CommEntry& found) { entry = found; });
  if (!live) throwArgument(std::string(what) + " is not a live communicator (destroyed, or never created)");
  checkProcess(entry.creator, what);
  return entry;
}

namespace {

// The communicator this thread looked up last, while no handle has been removed since: a
// thread issuing call after call on one communicator (a send/recv loop) then finds it without
// the table's lock. A weak reference: the cache never keeps a destroyed communicator alive.
struct LastComm {
  uintptr_t handle = 0;
  uint64_t removals = 0;
  std::weak_ptr<Communicator> impl;
  const Communicator* raw = nullptr;  // impl's object, compared only (never used through)
  pid_t creator = 0;
};

}  // namespace

std::shared_ptr<Communicator> checkedComm(loomComm_t comm, const char* what) {
  if (comm == nullptr) throwArgument(std::string(what) + " is NULL");
  LastComm& last = PerThread<LastComm>::get();
  const auto handle = reinterpret_cast<uintptr_t>(comm);
  if (handle == last.handle && comms().removals() == last.removals) {
    // Live when looked up and not removed since. A destroy racing this call is ordered after
    // it, exactly as if the lookup had taken the lock first.
    if (std::shared_ptr<Communicator> impl = last.impl.lock()) {
      checkProcess(last.creator, what);
      return impl;
    }
  }
  const uint64_t removalsBefore = comms().removals();
  std::shared_ptr<Communicator> impl;
  std::shared_ptr<PendingInit> init;
  pid_t creator = 0;
  // The common case copies one shared pointer under the table's lock, as before handles were
  // numbers; a non-blocking init's state is looked at only when there is one.
  const bool live = comms().find(reinterpret_cast<uintptr_t>(comm), [&](const CommEntry& found) {
    impl = found.impl;
    creator = found.creator;
    if (found.init) init = found.init;
  });
  if (!live) throwArgument(std::string(what) + " is not a live communicator (destroyed, or never created)");
  checkProcess(creator, what);
  if (init) {
    std::string message;
    const loomResult_t state = init->state(&message);
    if (state == loomInProgress) {
      throwUsage(std::string(what) + " " + impl->name() + " is still initialising (non-blocking init): poll " +
                 "loomCommGetAsyncError until it returns loomSuccess");
    }
    if (state != loomSuccess) throw Error(state, std::string(what) + " failed to initialise: " + message);
  }
  // Remembered only when ready (a finished init stays finished) and valid for this process.
  // removalsBefore was read before the lookup: a removal in between makes the entry stale at once.
  last.handle = handle;
  last.removals = removalsBefore;
  last.impl = impl;
  last.raw = impl.get();
  last.creator = creator;
  return impl;
}

bool namesPinnedComm(loomComm_t comm, const Communicator* pinned, const char* what) {
  const LastComm& last = PerThread<LastComm>::get();
  // The handle names the communicator it named when checked last, nothing was removed since,
  // and that is the pinned one (alive: the pin holds it, so the address cannot be reused).
  if (comm == nullptr || reinterpret_cast<uintptr_t>(comm) != last.handle || last.raw != pinned ||
      comms().removals() != last.removals) {
    return false;
  }
  checkProcess(last.creator, what);
  return true;
}

loomStream_t registerStream(std::shared_ptr<Stream> stream) {
  const std::optional<uintptr_t> handle = streams().add(StreamEntry{std::move(stream), currentPid()});
  if (!handle) throw Error(loomSystemError, "too many live streams (16777216)");
  return reinterpret_cast<loomStream_t>(*handle);
}

std::shared_ptr<Stream> unregisterStream(loomStream_t stream) {
  std::optional<StreamEntry> entry = streams().remove(reinterpret_cast<uintptr_t>(stream));
  if (!entry) return nullptr;
  checkProcess(entry->creator, "stream");
  return std::move(entry->stream);
}

std::shared_ptr<Stream> lookUpStream(loomStream_t stream) {
  StreamEntry entry;
  if (!streams().find(reinterpret_cast<uintptr_t>(stream), [&](const StreamEntry& found) { entry = found; })) {
    throwArgument("stream is not a live stream (destroyed, or never created)");
  }
  checkProcess(entry.creator, "stream");
  return std::move(entry.stream);
}

}  // namespace loom::api
