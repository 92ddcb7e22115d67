// SPDX-License-Identifier: Apache-2.0
/* An ordinary NCCL program: written against NVIDIA's nccl.h 2.28 and linked with -lnccl, it
 * knows nothing of Loom. tests/nccl/run_nccl_program.py runs it with Loom's libnccl.so.2 first
 * on LD_LIBRARY_PATH, on host buffers and stream 0 (no CUDA runtime call anywhere), and checks
 * that Loom's library is the one that was loaded.
 *
 *   nccl_program MODE RANK NRANKS DIR
 *
 * One process per rank; DIR is a directory shared by the ranks of one run, through which the
 * unique ids travel (rank 0 writes DIR/<tag>.id atomically, the others poll for it). MODE:
 *   all       ncclGetVersion; ncclCommInitRank with the classic id exchange; every collective
 *             (nccl_collectives.c); ncclCommSplit (even/odd colors, key -rank; then
 *             NCCL_SPLIT_NOCOLOR giving NULL); ncclCommInitRankScalable with min(3, NRANKS) ids
 *             made by ranks 0, 1, 2; a non-blocking init (blocking = 0) polled with
 *             ncclCommGetAsyncError, a collective, ncclCommAbort; ncclCommFinalize/Destroy.
 *   commid    NCCL_COMM_ID=host:port is set: every rank calls ncclGetUniqueId itself (the id is
 *             just the address; no exchange), init, collectives; then a second communicator
 *             the same way, as a program that makes several in a row does.
 *   extras    NRANKS 1: the calls beyond the collectives (nccl_extras.c), in one process
 *   badinput  NRANKS 2: calls that must fail, each with its code and a message naming the
 *             problem (nccl_bad_input.c). Wants LOOM_TIMEOUT_MS small (the runner sets it).
 * Environment: NCCL_PROGRAM_TIMEOUT_S bounds the whole run (default 90; past it the process
 * prints where it was and exits 3). Every wait in the program has a bound of its own too.
 * Exit status: 0 all passed; 1 a call failed or a result was wrong (each printed); 2 usage;
 * 3 watchdog. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_program_util.h"

enum { kIdWaitSeconds = 30 };

/* The classic exchange: rank 0 makes the id, the others read it from the shared directory. */
static void exchangeId(int rank, const char* dir, const char* tag, ncclUniqueId* id) {
  if (rank == 0) {
    NCHECK(ncclGetUniqueId(id), NULL);
    publishId(dir, tag, id);
  } else {
    fetchId(dir, tag, id, kIdWaitSeconds);
  }
}

static void expectShape(ncclComm_t comm, const char* label, int wantCount, int wantRank) {
  int count = -1, rank = -1;
  NCHECK(ncclCommCount(comm, &count), comm);
  NCHECK(ncclCommUserRank(comm, &rank), comm);
  if (count != wantCount || rank != wantRank)
    reportWrong("%s: ncclCommCount/ncclCommUserRank say rank %d of %d, expected %d of %d", label, rank, count,
                wantRank, wantCount);
}

/* All-gathers `mine` (one int32 per rank) and compares with `want` (the communicator's order). */
static void checkOrder(ncclComm_t comm, const char* label, int32_t mine, const int32_t* want, int n) {
  int32_t* got = calloc((size_t)n, sizeof(int32_t));
  NCHECK(ncclAllGather(&mine, got, 1, ncclInt32, comm, NULL), comm);
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) reportWrong("%s: all-gathered order: position %d holds %d, expected %d", label, i, got[i], want[i]);
  free(got);
}

static void destroy(ncclComm_t comm) {
  NCHECK(ncclCommFinalize(comm), comm);
  NCHECK(ncclCommDestroy(comm), comm);
}

static void testSplit(ncclComm_t parent, int rank, int n) {
  /* even and odd ranks, each child ordered by key = -rank: the parent's ranks in reverse */
  const int color = rank % 2;
  ncclComm_t child = NULL;
  NCHECK(ncclCommSplit(parent, color, -rank, &child, NULL), parent);
  if (child == NULL) die("ncclCommSplit(color %d) gave NULL", color);
  int32_t want[64];
  int childN = 0, childRank = 0;
  for (int p = n - 1; p >= 0; --p) {
    if (p % 2 != color) continue;
    if (p > rank) ++childRank;
    want[childN++] = p;
  }
  char label[64];
  snprintf(label, sizeof label, "split child (color %d, key -rank)", color);
  expectShape(child, label, childN, childRank);
  checkOrder(child, label, rank, want, childN);
  checkAllReduce(child, label, 1);
  destroy(child);

  /* rank 0 opts out: it must get NULL, the others a communicator of n - 1 ranks */
  ncclComm_t rest = (ncclComm_t)(uintptr_t)0x5eed;  /* not NULL, so NULL must have been written */
  NCHECK(ncclCommSplit(parent, rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, rank, &rest, NULL), parent);
  if (rank == 0) {
    if (rest != NULL) reportWrong("ncclCommSplit(NCCL_SPLIT_NOCOLOR) gave %p, expected NULL", (void*)rest);
  } else if (rest == NULL) {
    die("ncclCommSplit(color 7) gave NULL");
  } else {
    expectShape(rest, "split without rank 0", n - 1, rank - 1);
    checkAllReduce(rest, "split without rank 0", 1);
    destroy(rest);
  }
  printf("%s: ncclCommSplit: child of %d ranks (I am %d), NCCL_SPLIT_NOCOLOR ok\n", g_who, childN, childRank);
}

static void testScalable(int rank, int n, const char* dir) {
  /* ranks 0, 1 and 2 each make an id; every rank passes the same ids in the same order */
  const int nIds = n < 3 ? n : 3;
  ncclUniqueId ids[3];
  char tag[32];
  if (rank < nIds) {
    NCHECK(ncclGetUniqueId(&ids[rank]), NULL);
    snprintf(tag, sizeof tag, "scalable-%d", rank);
    publishId(dir, tag, &ids[rank]);
  }
  for (int i = 0; i < nIds; ++i) {
    snprintf(tag, sizeof tag, "scalable-%d", i);
    if (i != rank) fetchId(dir, tag, &ids[i], kIdWaitSeconds);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = NULL;
  NCHECK(ncclCommInitRankScalable(&comm, n, rank, nIds, ids, &config), NULL);
  expectShape(comm, "ncclCommInitRankScalable", n, rank);
  int32_t want[64];
  for (int i = 0; i < n; ++i) want[i] = i;
  checkOrder(comm, "ncclCommInitRankScalable", rank, want, n);
  checkAllReduce(comm, "ncclCommInitRankScalable", 1);
  destroy(comm);
  printf("%s: ncclCommInitRankScalable with %d ids ok\n", g_who, nIds);
}

static void testNonBlocking(ncclComm_t mainComm, int rank, int n, const char* dir) {
  ncclUniqueId id;
  exchangeId(rank, dir, "nonblocking", &id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  const double start = nowSeconds();
  ncclResult_t result = ncclCommInitRankConfig(&comm, n, id, rank, &config);
  if (result != ncclInProgress && result != ncclSuccess)
    failCall("ncclCommInitRankConfig(blocking = 0)", __FILE__, __LINE__, result, comm);
  if (comm == NULL) die("ncclCommInitRankConfig(blocking = 0) returned %d without a communicator", (int)result);
  awaitReady(comm, "non-blocking ncclCommInitRankConfig", 30);
  printf("%s: non-blocking init returned %s, ready after %.3f s\n", g_who, ncclGetErrorString(result),
         nowSeconds() - start);
  expectShape(comm, "non-blocking init", n, rank);
  checkAllReduce(comm, "non-blocking communicator", 0);
  /* every rank is done with it before any rank aborts it: one call on the main communicator */
  checkAllReduce(mainComm, "main communicator, before the abort", 1);
  NCHECK(ncclCommAbort(comm), comm);
}

static void testErrorStrings(void) {
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* text = ncclGetErrorString((ncclResult_t)r);
    if (text == NULL || text[0] == '\0') reportWrong("ncclGetErrorString(%d) is empty", r);
  }
  const char* unknown = ncclGetErrorString((ncclResult_t)99);
  if (unknown == NULL) reportWrong("ncclGetErrorString(99) is NULL");
}

static void runAll(int rank, int n, const char* dir) {
  ncclUniqueId id;
  exchangeId(rank, dir, "main", &id);
  ncclComm_t comm = NULL;
  double start = nowSeconds();
  NCHECK(ncclCommInitRank(&comm, n, id, rank), NULL);
  printf("%s: ncclCommInitRank: %.3f s\n", g_who, nowSeconds() - start);
  expectShape(comm, "ncclCommInitRank", n, rank);
  runCollectives(comm, "main");
  testSplit(comm, rank, n);
  testScalable(rank, n, dir);
  testNonBlocking(comm, rank, n, dir);
  testErrorStrings();
  destroy(comm);
}

static void runCommId(int rank, int n) {
  const char* address = getenv("NCCL_COMM_ID");
  if (address == NULL || address[0] == '\0') die("mode commid wants NCCL_COMM_ID=host:port");
  for (int round = 1; round <= 2; ++round) {
    ncclUniqueId id;
    NCHECK(ncclGetUniqueId(&id), NULL);  /* every rank: with NCCL_COMM_ID the id is the address */
    ncclComm_t comm = NULL;
    NCHECK(ncclCommInitRank(&comm, n, id, rank), NULL);
    char label[64];
    snprintf(label, sizeof label, "NCCL_COMM_ID communicator %d", round);
    expectShape(comm, label, n, rank);
    int32_t want[64];
    for (int i = 0; i < n; ++i) want[i] = i;
    checkOrder(comm, label, rank, want, n);
    if (round == 1)
      runCollectives(comm, label);
    else
      checkAllReduce(comm, label, 1);
    destroy(comm);
    printf("%s: %s (%s) ok\n", g_who, label, address);
  }
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s all|commid|badinput|extras RANK NRANKS DIR\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  const int rank = atoi(argv[2]), n = atoi(argv[3]);
  const char* dir = argv[4];
  if (n < 1 || n > 64 || rank < 0 || rank >= n) {
    fprintf(stderr, "%s: bad RANK %s / NRANKS %s (1 to 64 ranks)\n", argv[0], argv[2], argv[3]);
    return 2;
  }
  snprintf(g_who, sizeof g_who, "rank %d", rank);
  const char* timeout = getenv("NCCL_PROGRAM_TIMEOUT_S");
  startWatchdog(timeout != NULL ? atoi(timeout) : 90);
  setvbuf(stdout, NULL, _IOLBF, 0);
  printLoadedLibnccl();

  int version = 0;
  NCHECK(ncclGetVersion(&version), NULL);
  printf("%s: ncclGetVersion: %d (nccl.h of this build: %d)\n", g_who, version, NCCL_VERSION_CODE);
  if (version < 22800) reportWrong("ncclGetVersion gave %d, expected at least 22800 (2.28)", version);

  const double start = nowSeconds();
  if (strcmp(mode, "all") == 0) {
    runAll(rank, n, dir);
  } else if (strcmp(mode, "commid") == 0) {
    runCommId(rank, n);
  } else if (strcmp(mode, "badinput") == 0) {
    runBadInput(rank, n, dir);
  } else if (strcmp(mode, "extras") == 0) {
    runExtras();
  } else {
    fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
    return 2;
  }
  printLoadedLibnccl();  /* again: a library loaded later (a plugin) shows too */
  if (wrongResults() > 0) {
    printf("%s: FAILED: %d wrong results (above)\n", g_who, wrongResults());
    return 1;
  }
  printf("%s: %s passed in %.2f s\n", g_who, mode, nowSeconds() - start);
  return 0;
}
