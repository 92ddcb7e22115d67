// SPDX-License-Identifier: Apache-2.0
// The communicator: one rank's membership in a group of ranks. It composes the parts that
// each do one job, and keeps little of its own:
//   ErrorState     abort, revoke and the first (sticky) error      core/error_state.h
//   CallOrder      tickets, turns, call numbers, queued work         core/call_order.h
//   Bootstrap      small exchanges among the ranks                   base/bootstrap.h
//   Connector      peer facts, transports, connections, direct engine core/connector.h
//   ScheduleCache  built schedules and scratch memory                core/schedule_cache.h
//   PreMulSumInput this rank's premultiplied input for PreMulSum calls core/premul_input.h
//   DeviceStaging  pinned host copies of a call's device buffers     core/device_staging.h
//   Registrations  buffers registered with it (loomCommRegister)     core/registrations.h
// A call (algorithms/call_spec.h) takes a ticket when issued and runs when its turn comes:
// through the direct engine when that takes it, else as a schedule on the executor.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/call_spec.h"
#include "base/bootstrap.h"
#include "base/function_ref.h"
#include "core/buffer_domains.h"
#include "core/call_order.h"
#include "core/connector.h"
#include "core/device_staging.h"
#include "core/error_state.h"
#include "core/premul_input.h"
#include "core/registrations.h"
#include "core/schedule_cache.h"
#include "core/settings.h"
#include "loom.h"

namespace loom::algo {
struct ExecutionContext;
}

namespace loom {

class Store;

class Communicator {
 public:
  // Collective over the nranks ranks that share `id`: bootstrap, peer discovery, transports.
  // With Connect::Later the constructor only records its arguments and connect() does the
  // collective part, so a non-blocking init can run it on another thread while abort() (from
  // any thread) ends it promptly.
  enum class Connect { Now, Later };
  Communicator(const loomUniqueId& id, int nranks, int rank, CommSettings settings, Connect when = Connect::Now);
  // The same with the ranks meeting in a key-value store under `keyPrefix`
  // (loomCommInitRankStore) instead of at a unique id's root.
  Communicator(std::shared_ptr<Store> store, std::string keyPrefix, int nranks, int rank, CommSettings settings,
               Connect when = Connect::Now);
  void connect();
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const CommSettings& settings() const { return settings_; }
  const std::string& name() const { return name_; }
  // The device this communicator is bound to: the one current on the thread that made it
  // (loomCommInitAll: its device list's entry); -1 without a device runtime.
  int device() const { return device_; }
  // The buffers registered with this communicator (loomCommRegister); destroy drops them.
  Registrations& registrations() { return registrations_; }

  // Marks which of a validated call's buffers are device memory (core/buffer_domains.h), before
  // the call is issued; throws loomInvalidArgument for a buffer this communicator cannot use.
  void findDeviceBuffers(algo::CallSpec& call) const { loom::findDeviceBuffers(call, device_, rank_, nranks_); }

  // Calls on one communicator execute in the order they were issued, whichever thread runs
  // them: issuing takes a ticket, and run() waits for its turn. Every ticket must be run
  // exactly once.
  // The issuing step around taking tickets and queueing (core/call_order.h); false: another
  // thread is inside it right now (concurrent issue). Tickets are taken inside it.
  bool beginIssue() { return order_.beginIssue(); }
  uint64_t takeTicket() { return order_.ticketInStep(); }
  void endIssue() { order_.endIssue(); }
  // Runs one call to completion on the calling thread. After a failure the communicator is
  // unusable (its connections may hold half a message): every later call is refused with the
  // first error's code and a message naming the call that failed (ErrorState::refusal);
  // loomCommGetAsyncError reports that code.
  void run(const algo::CallSpec& call, uint64_t ticket);
  // Runs a batch of sends and receives (algo::Collective::Send/Recv, validated) as one unit in
  // one turn: every peer's messages progress at once (core/peer_ops.cc).
  void runPeerOps(const std::vector<algo::CallSpec>& ops, uint64_t ticket);

  // Work queued on streams but not finished yet; loomCommFinalize waits for it.
  void asyncWorkAdded() { order_.asyncWorkAdded(); }
  void asyncWorkDone() { order_.asyncWorkDone(); }
  void waitForAsyncWork();

  // Collective over this communicator; returns null for LOOM_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, const CommSettings& childSettings);
  // Collective over the survivors (every rank not in `excluded`; those do not call it):
  // a communicator of the survivors in parent-rank order, rendezvousing through the parent's
  // bootstrap listeners so that dead ranks are never waited on (comm_shrink.cc).
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excluded, const CommSettings& childSettings);

  // Makes every wait of this communicator fail promptly (from any thread), also a call's
  // wait for its turn.
  void abort();
  bool aborted() const { return errors_.stopped(); }
  // loomCommRevoke: calls in flight fail promptly and later ones are refused, but the
  // bootstrap stays usable (split, shrink) and the failures are not errors of the job.
  void revoke();
  bool revoked() const { return errors_.revoked(); }

  // The first error of any call, sticky, as loomCommGetAsyncError reports it; loomInProgress
  // while a revoked communicator still runs a call.
  loomResult_t asyncError(std::string* message = nullptr) const { return errors_.asyncError(message); }

 private:
  // Holds the turn of `ticket` for its scope, once it has come and the communicator is live.
  class TurnGuard {
   public:
    TurnGuard(Communicator& comm, uint64_t ticket, const algo::CallSpec& call);
    ~TurnGuard();
    TurnGuard(const TurnGuard&) = delete;
    TurnGuard& operator=(const TurnGuard&) = delete;

   private:
    Communicator& comm_;
    uint64_t ticket_;
    bool holds_ = false;
  };
  void waitForTurn(uint64_t ticket, const algo::CallSpec& call);
  // After a failure: throws the refusal that names the failed call (ErrorState::refusal).
  void refuseIfFailed();
  // Inside a catch block: tell the peers, record (naming the call by what `failedCall` builds,
  // after the peers are told), rethrow.
  [[noreturn]] void recordFailure(FunctionRef<std::string()> failedCall);
  // "allreduce #2 (10 x float32)": a call as a later call's refusal names it.
  static std::string callName(const algo::CallSpec& call);
  // What the executor needs of this communicator to run one schedule.
  void fillContext(algo::ExecutionContext& context, FunctionRef<std::string()> operation, size_t messageBytes) const;
  // Every buffer host memory. Inlined into run(): the host path pays no call for the seam.
  [[gnu::always_inline]] inline void runOnHost(const algo::CallSpec& call);
  [[gnu::noinline, gnu::cold]] void runStaged(const algo::CallSpec& call);  // through DeviceStaging
  [[noreturn]] void failStaged(FunctionRef<std::string()> failedCall);  // in a catch block
  // call.sequence is set. Inlined into run()'s host path, as it was before the staged path also
  // called it (out of line it cost an 8 B all-reduce 38 instructions, perf/count_instructions).
  [[gnu::always_inline]] inline void execute(const algo::CallSpec& call);
  void executeCall(const algo::CallSpec& call);  // a PreMulSum call already premultiplied
  std::string describeCall(const algo::CallSpec& call) const;
  size_t nonFiniteInput(const algo::CallSpec& call) const;
  void checkFinite(const algo::CallSpec& call, size_t badInput) const;
  [[gnu::always_inline]] inline void peerOpsOnHost(const std::vector<algo::CallSpec>& ops);  // runPeerOps' host path
  [[gnu::noinline, gnu::cold]] void peerOpsStaged(const std::vector<algo::CallSpec>& ops);

  int rank_;
  int nranks_;
  CommSettings settings_;
  std::string name_;
  ErrorState errors_;
  CallOrder order_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<Connector> links_;
  ScheduleCache schedules_;
  PreMulSumInput premul_;
  int device_ = -1;
  DeviceStaging staging_;
  Registrations registrations_;
  // While a staged call runs with its copies overlapping the transfer: the executor's view of
  // staging_ (fillContext passes it on); null otherwise.
  algo::StagedCopies* staged_ = nullptr;
  struct StagedScope {
    StagedScope(Communicator& comm, bool overlap) : comm_(comm) {
      if (overlap) comm_.staged_ = &comm_.staging_;
    }
    ~StagedScope() { comm_.staged_ = nullptr; }
    Communicator& comm_;
  };
  uint32_t shrinks_ = 0;  // shrink epochs, to tell offers apart
  loomUniqueId id_;        // kept for connect()
  std::shared_ptr<Store> store_;  // ... or the store the ranks meet in, dropped once connected
  std::string storePrefix_;
  std::atomic<bool> connected_{false};  // links_ is built (connect() has finished)
  // Unique over the process's life (an address may be reused): what per-thread caches of a
  // communicator's facts are keyed by (runPeerOps' kept schedule).
  const uint64_t serial_ = nextSerial();
  static uint64_t nextSerial();
  // Makes a child (split, shrink) on this communicator's device, whatever device is current on
  // the calling thread, which is left as it was.
  template <class... Args>
  std::unique_ptr<Communicator> makeChild(Args&&... args) const {
    std::optional<DeviceGuard> onDevice;
    if (device_ >= 0) onDevice.emplace(device::processRuntime(), device_);
    return std::make_unique<Communicator>(std::forward<Args>(args)...);
  }
};

}  // namespace loom
