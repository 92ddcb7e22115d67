// SPDX-License-Identifier: Apache-2.0
// Point-to-point batches as problems for the provenance simulator (movement_simulator.h): every
// rank's list of PeerOperations (a group's sends and receives on one communicator), each in its
// own user buffer, run as the schedules pointToPointBatch builds. The promise: the k-th receive
// on rank b from rank a holds exactly the bytes of the k-th send from a to b (a == b included:
// a local copy), and no send buffer is ever written.
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "movement_simulator.h"

namespace loom::algo {

using BatchProgram = std::vector<std::vector<PeerOperation>>;  // by rank, in issue order

// Sets every operation's `message` to its place among the operations of its pair and direction
// (1, 2, ...), zero-byte ones included: both sides count the same operations.
void numberMessages(BatchProgram& batch);

// Each rank's schedule (pointToPointBatch, which throws for an unmatched send to itself) with
// one buffer per operation.
std::vector<RankProgram> batchPrograms(const BatchProgram& batch);

// The promise above. Throws loom::Error(loomInvalidArgument) when the batch is not
// pair-consistent: a send or receive without a partner, or partners of different sizes.
Promise batchPromise(const BatchProgram& batch, const std::vector<RankProgram>& programs);

// Builds, simulates and verifies: "" when every receive gets exactly its send's data, else
// what went wrong (a simulator error included).
std::string proveBatch(const BatchProgram& batch, MovementResult* result = nullptr);

}  // namespace loom::algo
