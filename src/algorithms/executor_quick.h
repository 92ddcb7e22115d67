// SPDX-License-Identifier: Apache-2.0
// The executor's quick exchange: a schedule of a few messages that depend on nothing (a
// group's sends and receives, a lone send or receive, a non-root's part of a gather) is
// posted and polled here first, without the lane bookkeeping of the executor's general run,
// for as long as that run would spin before yielding. An 8-byte exchange between ranks that
// each have a core completes here, and its latency is then mostly this loop and the line's
// trip between the cores. What is still in flight after the spin is adopted by a general run
// (executor.cc), which waits on with the deadline, liveness and sleeping logic. Internal to the
// executor; nothing else includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>

#include "algorithms/executor.h"
#include "algorithms/executor_lanes.h"

namespace loom::algo::executor_detail {

// A quick exchange's receives' sinks and its messages' completion, by step index; what the
// schedule fixes is in its QuickPlan (executor.h). Kept per thread with the executor's other
// storage: a receive's sink must outlive the exchange's hand-over to a run.
struct QuickMessages {
  std::optional<StepSink> sinks[kQuickSteps];  // the receives' (a posted receive keeps its sink)
  uint8_t done[kQuickSteps];
};

// At most this many bytes in all: the quick exchange checks no abort flag while it moves data,
// which a small exchange ends long before anyone could notice; a large one gains nothing here.
constexpr size_t kQuickBytes = 64 * 1024;

// Whether `schedule` is a quick exchange: 1..kQuickSteps sends and receives of at most
// kQuickBytes in all, one per peer and direction, depending on nothing, over transports that
// register no memory. A rank that does not spin (ExecutionContext::spinPasses 0: ranks that
// outnumber the cores yield at once) makes one pass, which completes the exchange when the
// peers' messages are already there (as they often are for a rank the scheduler ran last), and
// hands the rest to a run, which yields. With the set-up kept in a QuickPlan that pass is
// cheaper than a run's (sendrecv 8 B on 4 ranks, 2 cores: 2699 -> 2265 instructions a call on
// rank 0, time -1.4% and -4.2% in two alternating runs of 13 and 9 pairs).
bool quickEligible(const Schedule& schedule, const ExecutionContext& context);
// Fills `plan` for `call`'s schedule (state Eligible), or sets it Ineligible.
void prepareQuickPlan(const CallSpec& call, const Schedule& schedule, const ExecutionContext& context,
                      QuickPlan& plan);

enum class QuickOutcome {
  Done,    // every message completed
  Posted,  // some are still in flight after the spin: a run adopts them (`quick`)
  Failed,  // progress() threw: `failure`, from the connection to `failedPeer`
};

// Posts every message of a quick exchange and polls them for up to context.spinPasses idle
// passes. `spunRounds`: the idle passes spent, for the adopting run's backoff. An error while
// posting is thrown as is, as Run::post lets it go. `plan`: the schedule's, Eligible.
QuickOutcome quickExchange(const CallSpec& call, const Schedule& schedule, const QuickPlan& plan,
                           const ExecutionBuffers& buffers, const ExecutionContext& context, QuickMessages& quick,
                           int& spunRounds, std::exception_ptr& failure, int& failedPeer);

}  // namespace loom::algo::executor_detail
