// SPDX-License-Identifier: Apache-2.0
// A symbolic simulator for schedules: runs every rank's schedule against in-memory channels
// where each element holds the set of ranks whose input it contains (a bitmask), plus a
// "divided" mark. It proves a schedule right for a given shape: no deadlock, matching
// message sizes, no contribution counted twice, avg divided exactly once, and every rank's
// output holding exactly the contributions the collective promises.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"

namespace loom::algo {

inline constexpr uint64_t kDividedMark = 1ull << 63;  // ranks < 63 only

struct SimulationOutput {
  // Per rank, its output (recv) buffer at the end, one mask per element.
  std::vector<std::vector<uint64_t>> recv;
  size_t messages = 0;  // point-to-point messages exchanged in total
  size_t bytes = 0;     // bytes exchanged in total (elements of 8 bytes)
};

// Simulates all shape.nranks ranks (shape.rank is ignored; elementBytes is taken as 8).
// Throws loom::Error(loomInternalError) describing the first violation found.
SimulationOutput simulate(CollectiveShape shape, bool inPlace);

// Checks `output` against what the collective promises; returns "" when right, else a
// description of the first wrong element.
std::string verifySymbolic(const CollectiveShape& shape, bool inPlace, const SimulationOutput& output);

}  // namespace loom::algo
