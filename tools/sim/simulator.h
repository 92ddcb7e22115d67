// SPDX-License-Identifier: Apache-2.0
// A symbolic simulator for schedules: runs every rank's schedule against in-memory channels
// where each element holds the set of ranks whose input it contains, plus a "divided" mark
// (rank_set.h: any number of ranks). It proves a schedule right for a given shape: no
// deadlock, matching message sizes, no contribution counted twice, avg divided exactly once,
// and every rank's output holding exactly the contributions the collective promises.
// Memory: one set per element of every rank's buffers, so O(n^2 * count / 64) words beyond 64
// ranks (and deterministic mode's scratch holds n blocks a rank): keep counts small there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "rank_set.h"

namespace loom::algo {

struct SimulationOutput {
  // Per rank, its output (recv) buffer at the end, one set per element.
  std::vector<RankSets> recv;
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
