// SPDX-License-Identifier: Apache-2.0
// Runs one rank's schedule over real connections.
//
// Steps go into one queue per (peer, direction) in schedule order, plus local steps; a step
// starts once the step it depends on is done. Each pass posts what can start and calls
// progress() on every busy connection, so a rank sends right while it receives from the left
// and no blocking call can deadlock a ring. When a pass moves nothing the rank backs off
// (base/backoff.h): spin, then sched_yield, then sleep on the wait set of the connections it
// waits on (transport.h: a doorbell, sockets), with a bound so the deadline and the abort flag
// are checked regularly, and every 100 ms of idling it looks for dead peers on this host
// (src/algorithms/peer_liveness.h). A few small messages that depend on nothing (a group's
// sends and receives) are first posted and polled without that bookkeeping, for as long as it
// would spin (executor_quick.h). The executor sees transports only through transport.h.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/call_spec.h"
#include "algorithms/schedule.h"
#include "base/function_ref.h"
#include "loom.h"
#include "transport/transport.h"

namespace loom::algo {

// A point-to-point batch's buffer of one operation (userBuffer(k) in its schedule).
struct UserBuffer {
  char* base = nullptr;
  size_t bytes = 0;
};

struct ExecutionBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
  void* scratch = nullptr;
  const std::vector<UserBuffer>* user = nullptr;  // by operation index; null outside batches
};

struct ExecutionContext {
  int rank = 0;
  int nranks = 1;
  // Indexed by peer rank; null where this rank has no connection.
  const std::vector<transport::Connection*>* connections = nullptr;
  int timeoutMs = 600000;  // fail after this long without any progress
  const std::atomic<bool>* abortFlag = nullptr;
  // By rank, the pids of the ranks on this host to check for death while idle (0 = unchecked;
  // see checkablePeerPids). All of them, not only this rank's neighbours: a rank further round
  // the ring than the dead one's neighbours would otherwise wait for its timeout.
  const std::vector<pid_t>* peerPids = nullptr;
  // By rank, the name of the host a rank on another host runs on ("" on this host): errors
  // about a peer across the network say where it was, so a lost host is named.
  const std::vector<std::string>* peerHosts = nullptr;
  // Names the call in errors ("allreduce #12 (1024 x float32, ...)"); called only on the way to
  // an error or a trace line, so the common path builds no string. It refers to a callable of
  // the caller's, which outlives the execution.
  FunctionRef<std::string()> operation;
  bool checkCalls = true;  // LOOM_CHECK >= 1: messages carry the call's tag (CallSpec::descriptor)
  // Large messages: received pieces are written with non-temporal stores (src/kernels/host/stream_copy.h)
  // so a copy does not first read every output line it overwrites.
  bool streamCopies = false;
  bool streamReductions = false;
  // Passes that spin before a waiting rank yields its core. Ranks that each have a core answer
  // within microseconds (a point-to-point round trip), so they spin longer than oversubscribed
  // ones, which must hand the core to the rank they wait for.
  int spinPasses = 63;
  // How long a waiting rank yields before it sleeps, at least (0: the backoff's rounds alone
  // decide). Ranks that outnumber cores yield this long: a sleeping rank leaves its core idle,
  // the kernel then pulls a rank over from the other core, and once the wait ends the ranks
  // stay unevenly placed for tens of milliseconds (core/spread_ranks.h says why).
  int yieldBeforeSleepMs = 0;
  // A caller that repeats one schedule (a batch of sends and receives in a loop) keeps its
  // QuickPlan beside it: null, or a plan whose state is Unknown, makes the executor work it out.
  struct QuickPlan* quickPlan = nullptr;
  // The buffers are host copies of device memory whose copies run alongside the steps
  // (staged_copies.h); null for host buffers. Such a call never takes the quick exchange.
  class StagedCopies* staged = nullptr;
};

// What a quick exchange (executor_quick.h) derives from the schedule, the call's shape and the
// connections alone: whether the schedule is one, which connection each message uses, each
// connection once, and each message's tag but for its number. Valid while those stay the
// same; the caller sets `state` back to Unknown when they change.
constexpr size_t kQuickSteps = 8;
struct QuickPlan {
  enum class State : uint8_t { Unknown, Eligible, Ineligible };
  State state = State::Unknown;
  size_t count = 0;  // messages
  transport::Connection* connections[kQuickSteps] = {};
  uint8_t isSend[kQuickSteps] = {};
  uint8_t ownTag[kQuickSteps] = {};  // the message carries a tag of its own (carriesOwnTag)
  transport::CallTag tags[kQuickSteps];  // that tag, its sequence the call's (numbered per exchange)
  transport::CallTag callTag;            // the call's tag, set once per connection otherwise
  transport::Connection* distinct[kQuickSteps] = {};  // each connection once, for progress()
  size_t distinctCount = 0;
};

// Runs `schedule`, this rank's part of `call` (its type and op reduce what arrives).
void execute(const CallSpec& call, const Schedule& schedule, const ExecutionBuffers& buffers,
             const ExecutionContext& context);

}  // namespace loom::algo
