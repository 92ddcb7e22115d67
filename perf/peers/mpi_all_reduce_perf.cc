// SPDX-License-Identifier: Apache-2.0
// mpi_all_reduce_perf: nccl-tests' all-reduce benchmark on MPI (mpi_backend.h).
#include "perf/peers/mpi_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllReduce, loom::perf::createMpiBackends,
                              "mpi_");
}
