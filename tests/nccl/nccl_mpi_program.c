/* SPDX-License-Identifier: Apache-2.0 */
/* An NCCL program in the most common shape: ranks from MPI, the unique id broadcast with
 * MPI_Bcast, one all-reduce checked exactly. Compiled against the toolkit's nccl.h, linked
 * -lnccl, and run by mpirun with Loom's libnccl.so.2 first on LD_LIBRARY_PATH (test
 * nccl_mpi_program): Loom's library under mpirun's environment. */
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 4099

int main(int argc, char** argv) {
  int rank = 0;
  int size = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = NULL;
  if (ncclCommInitRank(&comm, size, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  static int values[COUNT];
  for (int i = 0; i < COUNT; ++i) values[i] = (rank + 1) * (i % 7);
  if (ncclAllReduce(values, values, COUNT, ncclInt32, ncclSum, comm, NULL) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclAllReduce: %s\n", rank, ncclGetLastError(comm));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int wrong = 0;
  for (int i = 0; i < COUNT; ++i) wrong += values[i] != size * (size + 1) / 2 * (i % 7);
  printf("rank %d of %d: all-reduce of %d int32, %d wrong\n", rank, size, COUNT, wrong);
  ncclCommDestroy(comm);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
