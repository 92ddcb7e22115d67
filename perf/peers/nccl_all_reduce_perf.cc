// SPDX-License-Identifier: Apache-2.0
// nccl_all_reduce_perf: nccl-tests' all-reduce benchmark through NCCL's API (nccl_backend.h).
#include "perf/peers/nccl_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllReduce, loom::perf::createNcclBackends, "nccl_");
}
