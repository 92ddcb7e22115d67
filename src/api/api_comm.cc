// SPDX-License-Identifier: Apache-2.0
// Communicator lifecycle entry points.
#include <unistd.h>

#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "api/api_internal.h"
#include "base/config.h"
#include "base/function_ref.h"
#include "base/log.h"
#include "base/net/socket.h"
#include "base/version.h"
#include "bootstrap/env_job.h"
#include "bootstrap/socket_bootstrap.h"
#include "bootstrap/store.h"
#include "core/call_batch.h"
#include "core/device_staging.h"
#include "core/group.h"
#include "core/settings.h"
#include "device/device_select.h"

using namespace loom;

namespace {

loomComm_t wrap(std::unique_ptr<Communicator> impl) { return api::registerComm(std::move(impl)); }

// Which build a job runs, as NCCL's "NCCL version 2.x" line: once per process, at its first
// init of any kind (a split or shrink has a parent, so it is never the first, but says so too).
void announceVersion() {
  static const bool announced = [] {
    LOOM_VERSION_LINE("Loom version %s", versionString());  // alone at NCCL_DEBUG=VERSION, as NCCL's line
    return true;
  }();
  (void)announced;
  config::reportNcclVariablesOnce();  // the NCCL_* variables set but not honoured (libnccl.so.2)
}

// Before anything is sized by nranks (finding 9 of issue 14: 2^28 used to grow 2 GB first).
void checkRankArgs(int nranks, int rank) {
  if (nranks < 1) throwArgument("nranks " + std::to_string(nranks) + " must be >= 1");
  if (nranks > kMaxRanks) {
    throwArgument("nranks " + std::to_string(nranks) + " is too large: Loom serves at most " +
                  std::to_string(kMaxRanks) + " ranks per communicator");
  }
  if (rank < 0 || rank >= nranks) {
    throwArgument("rank " + std::to_string(rank) + " is not in [0, " + std::to_string(nranks) + ")");
  }
}

// Shrink completes on the calling thread; inside a group it would wait for ranks that the
// same thread only reaches at GroupEnd. (Inits and splits are queued instead: deferInit.)
// The message names no function: api::guarded puts the one that was called in front.
void rejectInGroup() {
  if (group::active()) {
    throwUsage("cannot be called between loomGroupStart and loomGroupEnd in this release; call it after loomGroupEnd");
  }
}

// Inside a group (NCCL's way of making several ranks from one thread): the handle exists at
// once, in the state of a non-blocking init still running, and the group's end connects it
// with the group's other inits (core/group_inits.h), blocking or not as its config says.
// `beforeConnect` runs at the group's end, first (rank 0's root of a ROOT_AT_INIT id, which a
// group that never runs must not leave listening).
loomComm_t deferGroupedInit(std::shared_ptr<Communicator> impl, bool blocking, std::function<void()> beforeConnect) {
  auto init = std::make_shared<api::PendingInit>();
  init->queued = true;
  const loomComm_t handle = api::registerComm(impl, init);
  group::DeferredInit deferred;
  deferred.blocking = blocking;
  deferred.connect = [impl, init, beforeConnect] {
    if (!init->start()) throwUsage("the communicator was destroyed or aborted before its group ended");
    if (beforeConnect) beforeConnect();
    impl->connect();
  };
  deferred.finish = [init](loomResult_t code, const std::string& message) { init->finish(code, message); };
  try {
    group::deferInit(std::move(deferred));
  } catch (...) {
    api::unregisterComm(handle);
    throw;
  }
  return handle;
}

// Non-blocking init (config.blocking = 0, as in NCCL): the handle exists at once and the
// collective part runs on its own thread; loomCommGetAsyncError reports loomInProgress until it
// is done, and loomCommAbort stops it wherever it waits. The thread is detached: it holds its
// own references, and destroy/abort wait for it (bounded) through PendingInit.
loomComm_t startNonBlockingInit(std::shared_ptr<Communicator> impl) {
  auto init = std::make_shared<api::PendingInit>();
  const loomComm_t handle = api::registerComm(impl, init);
  try {
    std::thread([impl, init] {
      try {
        impl->connect();
        init->finish(loomSuccess, "");
      } catch (const Error& error) {
        init->finish(error.code(), error.what());
      } catch (const std::bad_alloc&) {
        init->finish(loomSystemError, "out of memory");
      } catch (const std::exception& error) {
        init->finish(loomInternalError, std::string("internal error: ") + error.what());
      }
    }).detach();
  } catch (...) {
    api::unregisterComm(handle);
    throw;
  }
  return handle;
}

// How an init makes its communicator: from a unique id or a store, connected now or later.
using MakeComm = FunctionRef<std::unique_ptr<Communicator>(CommSettings settings, Communicator::Connect when)>;

loomResult_t initRank(const char* function, loomComm_t* comm, int nranks, int rank, const loomConfig_t* config,
                      MakeComm make, std::function<void()> beforeConnect = nullptr) {
  bool pending = false;
  const loomResult_t result = api::guarded(function, [&] {
    if (comm == nullptr) throwArgument("comm is NULL");
    *comm = nullptr;
    checkRankArgs(nranks, rank);
    announceVersion();
    CommSettings settings = resolveSettings(config);
    if (group::active()) {
      const bool blocking = settings.blocking;
      *comm = deferGroupedInit(make(std::move(settings), Communicator::Connect::Later), blocking, beforeConnect);
      return;
    }
    if (beforeConnect) beforeConnect();
    if (settings.blocking) {
      *comm = wrap(make(std::move(settings), Communicator::Connect::Now));
      return;
    }
    *comm = startNonBlockingInit(make(std::move(settings), Communicator::Connect::Later));
    pending = true;
  });
  return result == loomSuccess && pending ? loomInProgress : result;
}

// An id made with LOOM_UNIQUE_ID_ROOT_AT_INIT names a root nobody has started: rank 0 starts
// it now, where the id says (NCCL's NCCL_COMM_ID), before it goes there itself.
void startRootOfRankZero(const loomUniqueId& id, int rank) {
  if (rank != 0) return;
  const UniqueIdContents contents = decodeUniqueId(id);
  if (!contents.rankZeroStartsRoot) return;
  RootOptions root;
  root.published = true;  // every rank made the id itself
  root.generation = contents.generation;
  startRootServer(&contents.rootAddress, &contents.secret, root);
}

loomResult_t initRank(const char* function, loomComm_t* comm, int nranks, const loomUniqueId& id, int rank,
                      const loomConfig_t* config) {
  auto make = [&](CommSettings settings, Communicator::Connect when) {
    return std::make_unique<Communicator>(id, nranks, rank, std::move(settings), when);
  };
  return initRank(function, comm, nranks, rank, config, make, [id, rank] { startRootOfRankZero(id, rank); });
}

// Takes the handle out of the table (one caller wins) and stops a non-blocking init still
// running: abort makes its waits fail within milliseconds; then it is waited for, so nothing
// of it runs after destroy/abort returns.
api::CommEntry release(loomComm_t comm, bool abort) {
  api::checkedCommEntry(comm);
  std::optional<api::CommEntry> entry = api::unregisterComm(comm);
  if (!entry) throwArgument("comm is not a live communicator (destroyed, or never created)");
  // An init still queued in its group is cancelled: nothing runs it until the group's end.
  if (entry->init && entry->init->cancelQueued("destroyed or aborted before its group ended")) return *entry;
  const bool initRunning = entry->init && entry->init->state(nullptr) == loomInProgress;
  if (abort || initRunning) entry->impl->abort();
  if (entry->init && !entry->init->waitDone(entry->impl->settings().timeoutMs)) {
    throw Error(loomInternalError, "the non-blocking init of communicator " + entry->impl->name() +
                                       " did not stop after abort");
  }
  return *entry;
}

}  // namespace

extern "C" {

loomResult_t loomGetUniqueId(loomUniqueId* uniqueId) {
  return api::guarded("loomGetUniqueId", [&] {
    if (uniqueId == nullptr) throwArgument("uniqueId is NULL");
    const std::string pinned = config::text(config::Knob::CommId);
    RootOptions published;
    published.published = true;  // the caller hands the id to ranks Loom cannot see
    if (pinned.empty()) {
      *uniqueId = startRootServer(nullptr, nullptr, published);
      return;
    }
    sockaddr_storage address = commIdAddress(pinned);
    *uniqueId = startRootServer(&address, nullptr, published);
  });
}

loomResult_t loomGetUniqueIdFlags(loomUniqueId* uniqueId, int flags) {
  if (flags == LOOM_UNIQUE_ID_DEFAULT) return loomGetUniqueId(uniqueId);
  return api::guarded("loomGetUniqueIdFlags", [&] {
    if (uniqueId == nullptr) throwArgument("uniqueId is NULL");
    if (flags != LOOM_UNIQUE_ID_ROOT_AT_INIT) {
      throwArgument("flags " + std::to_string(flags) + " is neither LOOM_UNIQUE_ID_DEFAULT nor LOOM_UNIQUE_ID_ROOT_AT_INIT");
    }
    const std::string pinned = config::text(config::Knob::CommId);
    if (pinned.empty()) {
      RootOptions published;
      published.published = true;
      *uniqueId = startRootServer(nullptr, nullptr, published);
      return;
    }
    *uniqueId = encodeUniqueId(rankZeroRootId(pinned));
  });
}

loomResult_t loomCommInitRankScalable(loomComm_t* newcomm, int nranks, int myrank, int nId, loomUniqueId* commIds,
                                      loomConfig_t* config) {
  const loomResult_t checked = api::guarded("loomCommInitRankScalable", [&] {
    if (newcomm == nullptr) throwArgument("newcomm is NULL");
    *newcomm = nullptr;
    if (nId < 1) throwArgument("nId " + std::to_string(nId) + " must be >= 1");
    if (commIds == nullptr) throwArgument("commIds is NULL");
    for (int i = 0; i < nId; ++i) decodeUniqueId(commIds[i]);  // every id well formed, before anything stops
    // Loom's one root serves every rank at a bounded cost each: all meet at commIds[0], and
    // the roots this process started for the other ids are stopped (their ports close).
    for (int i = 1; i < nId; ++i) {
      if (std::memcmp(&commIds[i], &commIds[0], sizeof(loomUniqueId)) != 0) stopRootServer(commIds[i]);
    }
  });
  if (checked != loomSuccess) return checked;
  return initRank("loomCommInitRankScalable", newcomm, nranks, commIds[0], myrank, config);
}

loomResult_t loomCommInitRankStore(loomComm_t* comm, int nranks, int rank, const loomStore_t* store,
                                   const char* keyPrefix, loomConfig_t* config) {
  std::shared_ptr<Store> callbacks;
  const loomResult_t checked = api::guarded("loomCommInitRankStore", [&] { callbacks = storeFromCallbacks(store); });
  if (checked != loomSuccess) return checked;
  const std::string prefix = keyPrefix != nullptr ? keyPrefix : "";
  auto make = [&](CommSettings settings, Communicator::Connect when) {
    return std::make_unique<Communicator>(callbacks, prefix, nranks, rank, std::move(settings), when);
  };
  return initRank("loomCommInitRankStore", comm, nranks, rank, config, make);
}

loomResult_t loomCommInitRank(loomComm_t* comm, int nranks, loomUniqueId commId, int rank) {
  return initRank("loomCommInitRank", comm, nranks, commId, rank, nullptr);
}

loomResult_t loomCommInitRankConfig(loomComm_t* comm, int nranks, loomUniqueId commId, int rank,
                                    loomConfig_t* config) {
  return initRank("loomCommInitRankConfig", comm, nranks, commId, rank, config);
}

loomResult_t loomCommInitAll(loomComm_t* comms, int ndev, const int* devlist) {
  return api::guarded("loomCommInitAll", [&] {
    if (comms == nullptr) throwArgument("comms is NULL");
    if (ndev < 1 || ndev > 1024) throwArgument("ndev " + std::to_string(ndev) + " must be in [1, 1024]");
    announceVersion();
    // Rank i is bound to devlist[i] (NULL: device i), as in NCCL, when a device runtime is
    // active; host communicators otherwise. Checked before any rank starts.
    DeviceRuntime& runtime = device::processRuntime();
    std::vector<int> devices(ndev, -1);
    if (runtime.available()) {
      for (int rank = 0; rank < ndev; ++rank) {
        devices[rank] = devlist != nullptr ? devlist[rank] : rank;
        if (devices[rank] < 0 || devices[rank] >= runtime.deviceCount()) {
          throwArgument("devlist[" + std::to_string(rank) + "] = " + std::to_string(devices[rank]) +
                        " is not a device (this process sees " + std::to_string(runtime.deviceCount()) + ", runtime " +
                        runtime.name() + ")");
        }
      }
    }
    const loomUniqueId id = startRootServer(nullptr, nullptr);
    const CommSettings settings = resolveSettings(nullptr);
    std::vector<std::unique_ptr<Communicator>> made(ndev);
    std::vector<std::function<void()>> tasks;
    for (int rank = 0; rank < ndev; ++rank) {
      tasks.push_back([&, rank] {
        // Task 0 runs on the caller's thread, whose current device is put back afterwards.
        std::optional<DeviceGuard> onDevice;
        if (devices[rank] >= 0) onDevice.emplace(runtime, devices[rank]);
        made[rank] = std::make_unique<Communicator>(id, ndev, rank, settings);
      });
    }
    runConcurrently(tasks);
    for (int rank = 0; rank < ndev; ++rank) comms[rank] = wrap(std::move(made[rank]));
  });
}

loomResult_t loomCommInitFromEnv(loomComm_t* comm) {
  return api::guarded("loomCommInitFromEnv", [&] {
    if (comm == nullptr) throwArgument("comm is NULL");
    *comm = nullptr;
    const EnvJob job = readEnvJob();
    const UniqueIdContents contents = envUniqueId(job);
    log::setThreadRank(job.rank);
    announceVersion();
    // Rank 0 hosts the rendezvous at the agreed address; the others retry until it is up.
    if (job.rank == 0) {
      RootOptions root;
      root.published = true;  // every process of the job derives the id from its environment
      root.generation = contents.generation;
      startRootServer(&contents.rootAddress, &contents.secret, root);
    }
    LOOM_INFO(INIT, "loomCommInitFromEnv: %s rank %d of %d, root %s", job.launcher.c_str(), job.rank,
              job.nranks, addressToString(contents.rootAddress).c_str());
    *comm = wrap(std::make_unique<Communicator>(encodeUniqueId(contents), job.nranks, job.rank,
                                                resolveSettings(nullptr)));
  });
}

loomResult_t loomCommSplit(loomComm_t comm, int color, int key, loomComm_t* newcomm, loomConfig_t* config) {
  return api::guarded("loomCommSplit", [&] {
    auto parent = api::checkedComm(comm);
    if (newcomm == nullptr) throwArgument("newcomm is NULL");
    *newcomm = nullptr;
    announceVersion();
    if (color < 0 && color != LOOM_SPLIT_NOCOLOR) {
      throwArgument("color " + std::to_string(color) + " must be >= 0 or LOOM_SPLIT_NOCOLOR");
    }
    CommSettings settings = config ? resolveSettings(config) : parent->settings();
    if (group::active()) {
      // Queued: the group's end splits, with the group's other inits, and writes *newcomm
      // (which must stay valid until then, as in NCCL). A split always completes in the end.
      group::DeferredInit deferred;
      deferred.connect = [parent, color, key, settings, newcomm] {
        std::unique_ptr<Communicator> child = parent->split(color, key, settings);
        if (child) *newcomm = wrap(std::move(child));
      };
      deferred.finish = [](loomResult_t, const std::string&) {};  // the split's error is End's
      group::deferInit(std::move(deferred));
      return;
    }
    std::unique_ptr<Communicator> child = parent->split(color, key, settings);
    if (child) *newcomm = wrap(std::move(child));
  });
}

loomResult_t loomCommShrink(loomComm_t comm, int* excludeRanksList, int excludeRanksCount, loomComm_t* newcomm,
                            loomConfig_t* config, int shrinkFlags) {
  return api::guarded("loomCommShrink", [&] {
    auto parent = api::checkedComm(comm);
    if (newcomm == nullptr) throwArgument("newcomm is NULL");
    *newcomm = nullptr;
    rejectInGroup();
    announceVersion();
    if (excludeRanksCount < 0 || excludeRanksCount >= parent->size()) {
      throwArgument("excludeRanksCount " + std::to_string(excludeRanksCount) + " must be in [0, " +
                    std::to_string(parent->size()) + ")");
    }
    if (excludeRanksCount > 0 && excludeRanksList == nullptr) throwArgument("excludeRanksList is NULL");
    if (shrinkFlags != LOOM_SHRINK_DEFAULT && shrinkFlags != LOOM_SHRINK_ABORT) {
      throwArgument("shrinkFlags " + std::to_string(shrinkFlags) + " is neither LOOM_SHRINK_DEFAULT nor LOOM_SHRINK_ABORT");
    }
    // Stops a call still running on another thread (it fails, as after loomCommRevoke).
    if (shrinkFlags == LOOM_SHRINK_ABORT) parent->revoke();
    const std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
    CommSettings settings = config ? resolveSettings(config) : parent->settings();
    *newcomm = wrap(parent->shrink(excluded, settings));
  });
}

loomResult_t loomCommRevoke(loomComm_t comm, int revokeFlags) {
  return api::guarded("loomCommRevoke", [&] {
    auto impl = api::checkedComm(comm);
    if (revokeFlags != LOOM_REVOKE_DEFAULT) {
      throwArgument("revokeFlags " + std::to_string(revokeFlags) + " must be LOOM_REVOKE_DEFAULT (0)");
    }
    impl->revoke();
  });
}

loomResult_t loomCommFinalize(loomComm_t comm) {
  // Blocking collectives are complete when they return; this waits for the ones queued on
  // streams (bounded by the communicator's timeout).
  return api::guarded("loomCommFinalize", [&] {
    auto impl = api::checkedComm(comm);
    if (impl->revoked()) throwUsage("the communicator was revoked (loomCommRevoke): destroy it instead");
    impl->waitForAsyncWork();
  });
}

loomResult_t loomCommDestroy(loomComm_t comm) {
  if (comm == nullptr) return loomSuccess;  // as ncclCommDestroy(NULL)
  return api::guarded("loomCommDestroy", [&] {
    // Work still queued on streams holds its own reference and finishes first.
    release(comm, false);
  });
}

loomResult_t loomCommAbort(loomComm_t comm) {
  if (comm == nullptr) return loomSuccess;  // as ncclCommAbort(NULL)
  return api::guarded("loomCommAbort", [&] {
    // A collective running on another thread sees the flag within milliseconds and fails;
    // it holds its own reference, so the communicator goes when it is done.
    release(comm, true);
  });
}

loomResult_t loomCommGetAsyncError(loomComm_t comm, loomResult_t* asyncError) {
  return api::guarded("loomCommGetAsyncError", [&] {
    const api::CommEntry entry = api::checkedCommEntry(comm);
    if (asyncError == nullptr) throwArgument("asyncError is NULL");
    const loomResult_t init = entry.init ? entry.init->state(nullptr) : loomSuccess;
    *asyncError = init != loomSuccess ? init : entry.impl->asyncError();
  });
}

loomResult_t loomCommCount(const loomComm_t comm, int* count) {
  return api::guarded("loomCommCount", [&] {
    auto impl = api::checkedComm(comm);
    if (count == nullptr) throwArgument("count is NULL");
    *count = impl->size();
  });
}

loomResult_t loomCommUserRank(const loomComm_t comm, int* rank) {
  return api::guarded("loomCommUserRank", [&] {
    auto impl = api::checkedComm(comm);
    if (rank == nullptr) throwArgument("rank is NULL");
    *rank = impl->rank();
  });
}

}  // extern "C"
