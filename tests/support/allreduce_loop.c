// SPDX-License-Identifier: Apache-2.0
/* One rank of tests/scripts/kill_one_rank.py: all-reduces float32 in a loop until a call fails.
 * Uses only loom.h. The rank joins through the environment (LOOM_RANK, LOOM_WORLD_SIZE,
 * LOOM_COMM_ID=host:port of rank 0's listener, LOOM_COMM_SECRET), as under loomrun.
 *   allreduce_loop [COUNT [ITERATIONS [EXIT_AFTER_US]]]
 *                                         COUNT float32 elements per call (default 1 Mi =
 *                                         4 MiB); stop with exit 0 after ITERATIONS calls
 *                                         (default 0: never); EXIT_AFTER_US > 0: _exit(7)
 *                                         that long after start, wherever the rank is (init
 *                                         included: a rank that quits without cleaning up,
 *                                         tests/adversarial/shm_leaks.py)
 * Every element differs (rank + 1) * (i % 251 + 1), so a misplaced piece shows.
 * Prints "rank R: iteration N ok" now and then; when a call fails it prints
 * "rank R: loom error: <loomGetLastError>" to stderr and exits 3 (init failure: 2, wrong
 * result: 4). */
#include <loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <signal.h>
#include <unistd.h>

static void quitNow(int signal) {
  (void)signal;
  _exit(7); /* async-signal-safe; no destructor, no loomCommDestroy */
}

int main(int argc, char** argv) {
  size_t count = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)1 << 20;
  const unsigned long long iterations = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
  const long long exitAfterUs = argc > 3 ? strtoll(argv[3], NULL, 10) : 0;
  if (exitAfterUs > 0) {
    struct itimerval timer = {{0, 0}, {(time_t)(exitAfterUs / 1000000), (suseconds_t)(exitAfterUs % 1000000)}};
    signal(SIGALRM, quitNow);
    setitimer(ITIMER_REAL, &timer, NULL);
  }
  loomComm_t comm;
  if (loomCommInitFromEnv(&comm) != loomSuccess) {
    fprintf(stderr, "init failed: %s\n", loomGetLastError(NULL));
    return 2;
  }
  int rank = -1, nranks = 0;
  loomCommUserRank(comm, &rank);
  loomCommCount(comm, &nranks);
  float* send = malloc(count * sizeof(float));
  float* recv = malloc(count * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    return 2;
  }
  for (size_t i = 0; i < count; ++i) send[i] = (float)((rank + 1) * (int)(i % 251 + 1));
  const int rankSum = nranks * (nranks + 1) / 2;
  for (unsigned long long iteration = 1; iterations == 0 || iteration <= iterations; ++iteration) {
    loomResult_t result = loomAllReduce(send, recv, count, loomFloat32, loomSum, comm, NULL);
    if (result != loomSuccess) {
      fprintf(stderr, "rank %d: iteration %llu failed with %s\n", rank, iteration,
              loomGetErrorString(result));
      fprintf(stderr, "rank %d: loom error: %s\n", rank, loomGetLastError(comm));
      free(send);
      free(recv);
      return 3; /* without loomCommDestroy: the process just ends, as a crashing job would */
    }
    for (size_t i = 0; i < count; ++i) {
      const float expected = (float)(rankSum * (int)(i % 251 + 1));
      if (recv[i] != expected) {
        fprintf(stderr, "rank %d: iteration %llu: element %zu is %g, expected %g\n", rank,
                iteration, i, (double)recv[i], (double)expected);
        free(send);
        free(recv);
        return 4;
      }
    }
    if (iteration <= 5 || iteration % 20 == 0) {
      printf("rank %d: iteration %llu ok\n", rank, iteration);
      fflush(stdout);
    }
  }
  printf("rank %d: %llu iterations ok\n", rank, iterations);
  fflush(stdout);
  free(send);
  free(recv);
  return loomCommDestroy(comm) == loomSuccess ? 0 : 5;
}
