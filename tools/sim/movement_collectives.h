// SPDX-License-Identifier: Apache-2.0
// The data-movement collectives as problems for the provenance simulator (movement_simulator.h):
// each rank's schedule from buildSchedule, its buffers laid out the way an application passes
// them (nccl.h's in-place forms for gather and scatter, NULL where a rank's buffer is unused),
// and what the collective promises byte by byte:
//   all-to-all    rank r's output block i is rank i's input block r;
//   all-to-all-v  rank r's output at recvDispls[i] (recvCounts[i] elements) is rank i's input
//                 at its sendDispls[r]; the gaps between blocks are never written;
//   gather        the root's output block i is rank i's input; non-roots have no output;
//   scatter       rank r's output is the root's input block r; non-roots have no input;
//   barrier       no data; every rank's finish is preceded, through messages, by every
//                 rank's start.
// Inputs are never written (the in-place root block: it already holds what it must).
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "movement_simulator.h"

namespace loom::algo {

struct MovementCase {
  // collective (AllToAll, AllToAllv, Gather, Scatter, Barrier), nranks, count, elementBytes,
  // root; rank and layout are set per rank.
  CollectiveShape shape;
  // Gather: the root's sendbuff is recvbuff + root * count; scatter: the root's recvbuff is
  // sendbuff + root * count (nccl.h). nccl.h defines no other in-place form here.
  bool inPlace = false;
  // All-to-all-v: each rank's counts and displacements, by rank; pair-consistent (rank i's
  // sendCounts[j] == rank j's recvCounts[i]).
  const std::vector<VectorLayout>* layouts = nullptr;
};

struct MovementProblem {
  std::vector<RankProgram> programs;
  Promise promise;
};

// Throws loom::Error(loomInvalidArgument) for a case the collective does not define.
MovementProblem movementProblem(const MovementCase& movement);

// Builds, simulates and verifies: "" when the schedules keep every promise (and, for the
// barrier, the barrier property), else what went wrong. Every range must also fall on whole
// elements. `result`, when given, receives the simulation's result.
std::string proveMovement(const MovementCase& movement, MovementResult* result = nullptr);

// The barrier property on a finished simulation: "" when every rank heard from every rank.
std::string verifyBarrier(const MovementResult& result);

}  // namespace loom::algo
