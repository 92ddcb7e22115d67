// SPDX-License-Identifier: Apache-2.0
// A numeric simulator for schedules, used by test_schedules_hierarchical.cc: runs every rank's
// steps in a random order over real (double) memory, one message in flight per peer and
// direction, completed only when the receiver takes it. It checks what the symbolic simulator
// cannot: avg's scaling flags (raw input, partial sums), and that no step overwrites memory a
// send in flight still reads (in place).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/schedule.h"

namespace loom::algo::numeric_sim {

// What one simulated run found: "" for none. The output is checked only after a run that
// completed (verifyProblem stays "" after a failed run).
struct NumericOutcome {
  std::string runProblem;     // a bad step, or a deadlock
  std::string verifyProblem;  // an output element that is not bit for bit the expected one
};

// Runs every rank's schedule for `shape` over real memory, choosing among the steps that may
// run next with `seed`, then compares each rank's output with the exact result.
NumericOutcome simulateNumerically(const CollectiveShape& shape, bool inPlace, uint32_t seed);

}  // namespace loom::algo::numeric_sim
