// SPDX-License-Identifier: Apache-2.0
// mpi_reduce_scatter_perf: nccl-tests' reduce-scatter benchmark on MPI (mpi_backend.h).
#include "perf/peers/mpi_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kReduceScatter, loom::perf::createMpiBackends,
                              "mpi_");
}
