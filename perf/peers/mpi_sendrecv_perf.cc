// SPDX-License-Identifier: Apache-2.0
// mpi_sendrecv_perf: nccl-tests' sendrecv benchmark on MPI (mpi_backend.h): MPI_Sendrecv to
// rank + 1 and from rank - 1.
#include "perf/peers/mpi_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kSendRecv, loom::perf::createMpiBackends,
                              "mpi_");
}
