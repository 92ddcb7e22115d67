// SPDX-License-Identifier: Apache-2.0
// The perf tools' backend on NCCL's API (nccl_*_perf): Loom's libnccl.so.2, as an ordinary
// NCCL program calls it. Its numbers against the Loom tools' show what the NCCL layer costs
// (perf/count_instructions --abi nccl).
#pragma once

#include <memory>
#include <vector>

#include "perf/perf_backend.h"

namespace loom::perf {

// Under a launcher (loomrun: LOOM_RANK, LOOM_WORLD_SIZE, LOOM_COMM_ID) every rank makes the id
// itself with ncclGetUniqueId, as NCCL programs do under NCCL_COMM_ID; without one, -t N ranks
// from ncclCommInitAll.
std::vector<std::unique_ptr<Backend>> createNcclBackends(const Options& options, const char* tool);

}  // namespace loom::perf
