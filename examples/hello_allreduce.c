// SPDX-License-Identifier: Apache-2.0
/* The smallest useful Loom program: every rank all-reduces a buffer and checks the sum.
 * Run:  loomrun -n 4 ./hello_allreduce [MiB]       (default 64 MiB of float32) */
#include <loom.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  size_t count = (argc > 1 ? strtoull(argv[1], NULL, 10) : 64) * 1024 * 1024 / sizeof(float);
  loomComm_t comm;
  if (loomCommInitFromEnv(&comm) != loomSuccess) {
    fprintf(stderr, "init failed: %s\n", loomGetLastError(NULL));
    return 1;
  }
  int rank, nranks;
  loomCommUserRank(comm, &rank);
  loomCommCount(comm, &nranks);
  float* data = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) data[i] = (float)(rank + 1 + i % 7);
  if (loomAllReduce(data, data, count, loomFloat32, loomSum, comm, NULL) != loomSuccess) {
    fprintf(stderr, "rank %d: %s\n", rank, loomGetLastError(comm));
    return 1;
  }
  size_t wrong = 0; /* sum over ranks of (r + 1 + i % 7) */
  for (size_t i = 0; i < count; ++i)
    wrong += data[i] != (float)(nranks * (nranks + 1) / 2 + nranks * (int)(i % 7));
  printf("rank %d of %d: all-reduced %zu floats, %zu wrong\n", rank, nranks, count, wrong);
  free(data);
  loomCommDestroy(comm);
  return wrong == 0 ? 0 : 2;
}
