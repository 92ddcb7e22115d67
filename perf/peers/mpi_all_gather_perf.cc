// SPDX-License-Identifier: Apache-2.0
// mpi_all_gather_perf: nccl-tests' all-gather benchmark on MPI (mpi_backend.h).
#include "perf/peers/mpi_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllGather, loom::perf::createMpiBackends,
                              "mpi_");
}
