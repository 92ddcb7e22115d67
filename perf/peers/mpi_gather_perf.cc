// SPDX-License-Identifier: Apache-2.0
// mpi_gather_perf: nccl-tests' gather benchmark on MPI (mpi_backend.h).
#include "perf/peers/mpi_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kGather, loom::perf::createMpiBackends,
                              "mpi_");
}
