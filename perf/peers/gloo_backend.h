// SPDX-License-Identifier: Apache-2.0
// The perf driver's Gloo backend (Debian's libgloo-dev, TCP transport), started like Loom's
// tools: `loomrun -n N gloo_all_reduce_perf ...` (gloo_rendezvous.h: how ranks meet), or -t N
// for N ranks as threads of one process (an in-process HashStore).
//
// What runs (also printed on the "# Backend:" line):
// - all-reduce: gloo::allreduce (AllreduceOptions; gloo's default algorithm, its ring), with
//   gloo's own sum/product/max/min; avg = sum, then one division pass (timed);
// - all-gather: gloo::allgather (AllgatherOptions, ring); in place it reads the rank's block at
//   recvbuff + rank * count, as NCCL does;
// - reduce-scatter: gloo's only one, ReduceScatterHalvingDoubling, which reduces in place over
//   the whole input and leaves the rank's block at its start. It is built once per buffer and
//   size (in the untimed call before timing) and reused; the rank's block is then moved to
//   where NCCL puts it (timed). Out of place it therefore overwrites sendbuff, which the driver
//   rewrites before every checked run.
// - no bfloat16 (gloo has no such type): naming it is refused, -d all skips it.
#pragma once

#include <memory>
#include <vector>

#include "perf/perf_backend.h"

namespace loom::perf {

std::vector<std::unique_ptr<Backend>> createGlooBackends(const Options& options, const char* tool);

}  // namespace loom::perf
