// SPDX-License-Identifier: Apache-2.0
// Seeded random inputs for the provenance simulator: all-to-all-v layouts and point-to-point
// batches that are valid (pair-consistent) by construction, the same for the same seed on every
// platform (a SplitMix64 generator, not <random>'s distributions, whose results vary).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/call_spec.h"
#include "algorithms/schedule.h"
#include "peer_batches.h"

namespace loom::algo {

// Per-pair counts of 0..maxCount elements (a third of them zero), and in each buffer the blocks
// in a random order with a gap of 0..3 elements before each: non-overlapping, with gaps, and
// rank i's sendCounts[j] == rank j's recvCounts[i].
std::vector<VectorLayout> randomLayouts(int nranks, uint64_t seed, size_t maxCount = 6);

// Per ordered pair (a rank and itself included) 0..3 messages of random sizes (zero and odd
// ones included); each rank's sends and receives interleaved at random, each pair's messages in
// order. Numbered (numberMessages).
BatchProgram randomBatch(int nranks, uint64_t seed);

// Every rank sends `bytes` to every rank, itself included, before it receives from any.
BatchProgram allPairsBatch(int nranks, size_t bytes);

}  // namespace loom::algo
