// SPDX-License-Identifier: Apache-2.0
// The perf driver's MPI backend: MPI_COMM_WORLD, started by mpirun
// (`mpirun --allow-run-as-root --oversubscribe --bind-to none -np N mpi_all_reduce_perf ...`;
// a plain start is one rank). Ranks are processes, so -t N > 1 is refused.
//
// Mapping onto NCCL's semantics (also printed on the "# Backend:" line):
// - types: MPI has no half or bfloat16; naming one is refused, -d all skips them;
// - avg: MPI has no average op: MPI_SUM, then one division pass over the result (timed);
// - in place: MPI_IN_PLACE. MPI's in-place reduce-scatter leaves the rank's block at the start
//   of the buffer, NCCL's at sendbuff + rank * count: the block is moved there (timed; rank 0's
//   is already in place).
// - sendrecv: MPI_Sendrecv; all-to-all, gather, scatter: MPI_Alltoall, MPI_Gather, MPI_Scatter,
//   in place (gather, scatter) with MPI_IN_PLACE on the root, which matches NCCL's layout.
#pragma once

#include <memory>
#include <vector>

#include "perf/perf_backend.h"

namespace loom::perf {

std::vector<std::unique_ptr<Backend>> createMpiBackends(const Options& options, const char* tool);

}  // namespace loom::perf
