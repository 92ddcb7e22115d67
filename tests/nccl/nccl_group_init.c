// SPDX-License-Identifier: Apache-2.0
/* An ordinary NCCL program (nccl.h only) that initialises two ranks of one communicator from one
 * thread, as a program driving two GPUs from one thread does:
 *
 *   nccl_group_init pair|rest blocking|nonblocking DIR
 *
 * A 4-rank communicator made by two processes. `pair` holds ranks 0 and 1 in its main thread:
 * it makes the unique id (written to DIR/group-<mode>.id), calls ncclCommInitRankConfig for
 * both ranks inside one ncclGroupStart/ncclGroupEnd, then issues both ranks' all-reduces inside
 * one group. `rest` holds ranks 2 and 3, one thread each, each with a plain
 * ncclCommInitRankConfig and its own all-reduce. blocking: every config has blocking = 1 and
 * ncclGroupEnd returns ncclSuccess once both communicators are ready. nonblocking: blocking = 0,
 * ncclGroupEnd returns ncclInProgress (or ncclSuccess, which NCCL also allows) and the program
 * polls ncclCommGetAsyncError on each communicator; its calls may return ncclInProgress too.
 * Results are exact (int32 and float32 sums of small integers). Exit 0 passed, 1 failed, 2
 * usage, 3 watchdog (NCCL_PROGRAM_TIMEOUT_S, default 60). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_program_util.h"

enum { kRanks = 4, kCount = 4099, kWaitSeconds = 30 };

static int g_blocking = 1;
static const char* g_dir = ".";
static char g_tag[32];

/* A blocking communicator's call must succeed; a non-blocking one's may be ncclInProgress. */
#define NCHECK_MODE(call, comm)  \
  do {                           \
    if (g_blocking)              \
      NCHECK(call, comm);        \
    else                         \
      NCHECK_NB(call, comm);     \
  } while (0)

static float value(int rank, size_t i) { return (float)((rank * 7 + (int)(i % 101)) % 13 - 6); }

typedef struct {
  int rank;
  ncclComm_t comm;
  int32_t* ints;
  float* floats;
} Rank;

static void fill(Rank* r) {
  r->ints = allocBuffer(kCount * sizeof(int32_t));
  r->floats = allocBuffer(kCount * sizeof(float));
  for (size_t i = 0; i < kCount; ++i) {
    r->ints[i] = (int32_t)value(r->rank, i);
    r->floats[i] = value(r->rank, i);
  }
}

/* Both all-reduces of one rank (in place, int32 then float32); inside the caller's group. */
static void issue(Rank* r) {
  NCHECK_MODE(ncclAllReduce(r->ints, r->ints, kCount, ncclInt32, ncclSum, r->comm, NULL), r->comm);
  NCHECK_MODE(ncclAllReduce(r->floats, r->floats, kCount, ncclFloat32, ncclSum, r->comm, NULL), r->comm);
}

static void verify(Rank* r) {
  size_t bad = 0;
  for (size_t i = 0; i < kCount; ++i) {
    float want = 0;
    for (int k = 0; k < kRanks; ++k) want += value(k, i);
    if (r->ints[i] != (int32_t)want || r->floats[i] != want) {
      if (bad++ < 3)
        reportWrong("rank %d: element %zu is %d / %g, expected %g", r->rank, i, r->ints[i], r->floats[i], want);
    }
  }
  if (!guardIntact(r->ints) || !guardIntact(r->floats)) reportWrong("rank %d: wrote past a buffer", r->rank);
  freeBuffer(r->ints);
  freeBuffer(r->floats);
}

static ncclConfig_t makeConfig(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = g_blocking;
  return config;
}

static void checkShape(const Rank* r) {
  int count = -1, rank = -1;
  NCHECK(ncclCommCount(r->comm, &count), r->comm);
  NCHECK(ncclCommUserRank(r->comm, &rank), r->comm);
  if (count != kRanks || rank != r->rank) reportWrong("communicator says rank %d of %d, expected %d of %d", rank, count, r->rank, kRanks);
}

/* Ranks 0 and 1 from this thread. */
static void runPair(void) {
  ncclUniqueId id;
  NCHECK(ncclGetUniqueId(&id), NULL);
  publishId(g_dir, g_tag, &id);
  Rank ranks[2] = {{0, NULL, NULL, NULL}, {1, NULL, NULL, NULL}};
  ncclConfig_t configs[2] = {makeConfig(), makeConfig()};
  const double start = nowSeconds();
  NCHECK(ncclGroupStart(), NULL);
  for (int i = 0; i < 2; ++i)
    NCHECK_MODE(ncclCommInitRankConfig(&ranks[i].comm, kRanks, id, ranks[i].rank, &configs[i]), NULL);
  watchdogWhere("ncclGroupEnd after two ncclCommInitRankConfig");
  ncclResult_t end = ncclGroupEnd();
  printf("%s: ncclGroupEnd of two inits (%s) returned %d (%s) after %.3f s\n", g_who,
         g_blocking ? "blocking" : "non-blocking", (int)end, ncclGetErrorString(end), nowSeconds() - start);
  if (g_blocking ? end != ncclSuccess : (end != ncclInProgress && end != ncclSuccess))
    failCall("ncclGroupEnd (two ncclCommInitRankConfig)", __FILE__, __LINE__, end, NULL);
  for (int i = 0; i < 2; ++i) {
    if (ranks[i].comm == NULL) die("rank %d: no communicator after ncclGroupEnd", ranks[i].rank);
    if (g_blocking) {  /* ready already: the async state must say so at once */
      ncclResult_t state = ncclInProgress;
      NCHECK(ncclCommGetAsyncError(ranks[i].comm, &state), ranks[i].comm);
      if (state != ncclSuccess) reportWrong("rank %d: ncclCommGetAsyncError says %d after a blocking ncclGroupEnd", ranks[i].rank, (int)state);
    } else {
      awaitReady(ranks[i].comm, "ncclCommGetAsyncError after a non-blocking group init", kWaitSeconds);
    }
    checkShape(&ranks[i]);
    fill(&ranks[i]);
  }
  printf("%s: both communicators ready after %.3f s\n", g_who, nowSeconds() - start);

  NCHECK(ncclGroupStart(), NULL);
  for (int i = 0; i < 2; ++i) issue(&ranks[i]);
  NCHECK_MODE(ncclGroupEnd(), NULL);
  for (int i = 0; i < 2; ++i) {
    if (!g_blocking) awaitReady(ranks[i].comm, "grouped all-reduces of ranks 0 and 1", kWaitSeconds);
    verify(&ranks[i]);
  }
  /* finalize both together (each waits for its peers), then destroy */
  NCHECK(ncclGroupStart(), NULL);
  for (int i = 0; i < 2; ++i) NCHECK_MODE(ncclCommFinalize(ranks[i].comm), ranks[i].comm);
  NCHECK_MODE(ncclGroupEnd(), NULL);
  for (int i = 0; i < 2; ++i) {
    if (!g_blocking) awaitReady(ranks[i].comm, "ncclCommFinalize", kWaitSeconds);
    NCHECK(ncclCommDestroy(ranks[i].comm), ranks[i].comm);
  }
}

/* Rank 2 or 3, on a thread of its own. */
static void* runOne(void* arg) {
  Rank* r = arg;
  ncclUniqueId id;
  fetchId(g_dir, g_tag, &id, kWaitSeconds);
  ncclConfig_t config = makeConfig();
  NCHECK_MODE(ncclCommInitRankConfig(&r->comm, kRanks, id, r->rank, &config), NULL);
  if (!g_blocking) awaitReady(r->comm, "non-blocking ncclCommInitRankConfig", kWaitSeconds);
  checkShape(r);
  fill(r);
  issue(r);
  if (!g_blocking) awaitReady(r->comm, "all-reduces", kWaitSeconds);
  verify(r);
  NCHECK_MODE(ncclCommFinalize(r->comm), r->comm);
  if (!g_blocking) awaitReady(r->comm, "ncclCommFinalize", kWaitSeconds);
  NCHECK(ncclCommDestroy(r->comm), r->comm);
  return NULL;
}

static void runRest(void) {
  Rank ranks[2] = {{2, NULL, NULL, NULL}, {3, NULL, NULL, NULL}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i)
    if (pthread_create(&threads[i], NULL, runOne, &ranks[i]) != 0) die("pthread_create failed");
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "pair") != 0 && strcmp(argv[1], "rest") != 0) ||
      (strcmp(argv[2], "blocking") != 0 && strcmp(argv[2], "nonblocking") != 0)) {
    fprintf(stderr, "usage: %s pair|rest blocking|nonblocking DIR\n", argv[0]);
    return 2;
  }
  const int pair = strcmp(argv[1], "pair") == 0;
  g_blocking = strcmp(argv[2], "blocking") == 0;
  g_dir = argv[3];
  snprintf(g_tag, sizeof g_tag, "group-%s", argv[2]);
  snprintf(g_who, sizeof g_who, "%s (ranks %s)", argv[1], pair ? "0,1" : "2,3");
  const char* timeout = getenv("NCCL_PROGRAM_TIMEOUT_S");
  startWatchdog(timeout != NULL ? atoi(timeout) : 60);
  setvbuf(stdout, NULL, _IOLBF, 0);
  printLoadedLibnccl();
  const double start = nowSeconds();
  if (pair)
    runPair();
  else
    runRest();
  if (wrongResults() > 0) {
    printf("%s: FAILED: %d wrong results (above)\n", g_who, wrongResults());
    return 1;
  }
  printf("%s: group init (%s) passed in %.2f s\n", g_who, argv[2], nowSeconds() - start);
  return 0;
}
