// SPDX-License-Identifier: Apache-2.0
/* The bad-input mode of the ordinary NCCL program (nccl_program badinput RANK 2 DIR): calls an
 * NCCL program can get wrong, each of which must fail with the code NCCL gives it and leave a
 * message in ncclGetLastError that names the problem, promptly (no hang); the communicator the
 * argument errors were tried on must still work afterwards. Every message is printed, so the
 * run's log shows what a user would read. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_program_util.h"

enum { kAnyError = -1 };

/* Checks one refused call: its code (kAnyError: any but ncclSuccess/ncclInProgress), and a
 * message holding at least one of `keywords` (case-insensitive; NULL-terminated). */
static void expectFailure(const char* what, ncclResult_t got, int want, const char* const* keywords) {
  const char* message = ncclGetLastError(NULL);  /* NCCL keeps it per thread, whatever comm says */
  printf("%s: bad input: %s -> %d (%s): \"%s\"\n", g_who, what, (int)got, ncclGetErrorString(got),
         message != NULL ? message : "(null)");
  if (got == ncclSuccess || got == ncclInProgress) {
    reportWrong("%s returned %s, expected an error", what, ncclGetErrorString(got));
    return;
  }
  if (want != kAnyError && (int)got != want)
    reportWrong("%s returned %d (%s), expected %d (%s)", what, (int)got, ncclGetErrorString(got), want,
                ncclGetErrorString((ncclResult_t)want));
  if (message == NULL || message[0] == '\0') {
    reportWrong("%s: ncclGetLastError is empty", what);
    return;
  }
  for (const char* const* k = keywords; *k != NULL; ++k)
    if (strcasestr(message, *k) != NULL) return;
  reportWrong("%s: the message does not name the problem (looked for \"%s\"...): %s", what, keywords[0], message);
}

#define KEYS(...) ((const char* const[]){__VA_ARGS__, NULL})

/* A 1-rank init with `config` and a fresh id of this process's own: nobody else is waited for,
 * so a library that does not check the config simply succeeds (and that is reported). */
static void expectConfigRefused(const char* what, ncclConfig_t* config, int want, const char* const* keywords) {
  ncclUniqueId id;
  NCHECK(ncclGetUniqueId(&id), NULL);
  ncclComm_t comm = NULL;
  ncclResult_t result = ncclCommInitRankConfig(&comm, 1, id, 0, config);
  expectFailure(what, result, want, keywords);
  if (result == ncclSuccess && comm != NULL) NCHECK(ncclCommDestroy(comm), comm);
}

/* Arguments refused before anything is sent: each rank makes the same calls, so the ranks stay
 * in step whatever the library counts. */
static void badArguments(ncclComm_t comm, int rank) {
  int32_t buf[8] = {0};
  expectFailure("ncclAllReduce(comm = NULL)", ncclAllReduce(buf, buf, 8, ncclInt32, ncclSum, NULL, NULL),
                ncclInvalidArgument, KEYS("comm"));
  expectFailure("ncclAllReduce(datatype = 99)",
                ncclAllReduce(buf, buf, 8, (ncclDataType_t)99, ncclSum, comm, NULL), ncclInvalidArgument,
                KEYS("99", "datatype", "data type"));
  expectFailure("ncclAllReduce(op = 77)", ncclAllReduce(buf, buf, 8, ncclInt32, (ncclRedOp_t)77, comm, NULL),
                ncclInvalidArgument, KEYS("77", "op"));
  expectFailure("ncclAllReduce(sendbuff = NULL)", ncclAllReduce(NULL, buf, 8, ncclInt32, ncclSum, comm, NULL),
                ncclInvalidArgument, KEYS("sendbuff", "buffer", "null"));
  expectFailure("ncclBroadcast(root = 7 of 2)", ncclBroadcast(buf, buf, 8, ncclInt32, 7, comm, NULL),
                ncclInvalidArgument, KEYS("root", "7"));
  expectFailure("ncclSend(peer = 5 of 2)", ncclSend(buf, 8, ncclInt32, 5, comm, NULL), ncclInvalidArgument,
                KEYS("peer", "5"));
  /* a stream without CUDA: this machine has no CUDA runtime that could own one */
  expectFailure("ncclAllReduce(stream = 0x1)",
                ncclAllReduce(buf, buf, 8, ncclInt32, ncclSum, comm, (cudaStream_t)(uintptr_t)0x1),
                ncclInvalidUsage, KEYS("stream", "cuda"));
  (void)rank;
}

static void badConfigs(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0x12345678u;
  expectConfigRefused("ncclCommInitRankConfig(config.magic = 0x12345678)", &config, ncclInvalidArgument,
                      KEYS("magic", "NCCL_CONFIG_INITIALIZER"));
  ncclConfig_t pigeon = NCCL_CONFIG_INITIALIZER;
  pigeon.netName = "carrier-pigeon";
  expectConfigRefused("ncclCommInitRankConfig(config.netName = \"carrier-pigeon\")", &pigeon, kAnyError,
                      KEYS("carrier-pigeon"));
  ncclUniqueId id;
  NCHECK(ncclGetUniqueId(&id), NULL);
  ncclComm_t comm = NULL;
  expectFailure("ncclCommInitRank(nranks = 0)", ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument,
                KEYS("nranks", "0"));
  expectFailure("ncclCommInitRank(rank 5 of 2)", ncclCommInitRank(&comm, 2, id, 5), ncclInvalidArgument,
                KEYS("rank", "5"));
}

/* An id whose communicator formed and was destroyed, used again: first by rank 1 alone (the
 * root's process still runs), then by both ranks. Each attempt must fail within a bound set by
 * LOOM_TIMEOUT_MS (the runner sets it to a few seconds), never hang or form a communicator. */
static void staleId(const ncclUniqueId* stale, int rank, const char* dir) {
  const char* timeout = getenv("LOOM_TIMEOUT_MS");
  const double bound = 2.0 + (timeout != NULL ? atof(timeout) / 1000.0 : 600.0) * 2;
  for (int both = 0; both < 2; ++both) {
    if (both || rank == 1) {
      ncclComm_t comm = NULL;
      const double start = nowSeconds();
      watchdogWhere("ncclCommInitRank with a stale id");
      ncclResult_t result = ncclCommInitRank(&comm, 2, *stale, rank);
      const double took = nowSeconds() - start;
      char what[160];
      snprintf(what, sizeof what, "ncclCommInitRank(stale id, %s) after %.2f s",
               both ? "both ranks again" : "rank 1 alone", took);
      expectFailure(what, result, kAnyError, KEYS("id", "formed", "accept", "rank", "timed out"));
      if (took > bound) reportWrong("%s: took %.1f s, more than %.1f s", what, took, bound);
      if (result == ncclSuccess && comm != NULL) NCHECK(ncclCommDestroy(comm), comm);
    }
    /* rank 0 stays out of the first attempt, then both go; rank 0's process (the old root's)
     * stays until rank 1 is done, so rank 1 meets a root whose process runs, not one exiting */
    const char* flag = both ? "stale-both-done" : "stale-alone-done";
    if (rank == 1) publishFlag(dir, flag);
    else awaitFlag(dir, flag, 60);
  }
}

void runBadInput(int rank, int n, const char* dir) {
  if (n != 2) die("badinput wants 2 ranks, not %d", n);
  ncclUniqueId id;
  if (rank == 0) {
    NCHECK(ncclGetUniqueId(&id), NULL);
    publishId(dir, "bad-main", &id);
  } else {
    fetchId(dir, "bad-main", &id, 30);
  }
  ncclComm_t comm = NULL;
  NCHECK(ncclCommInitRank(&comm, n, id, rank), NULL);
  badArguments(comm, rank);
  /* none of those calls may have harmed the communicator */
  checkAllReduce(comm, "after the refused arguments", 1);
  NCHECK(ncclCommFinalize(comm), comm);
  NCHECK(ncclCommDestroy(comm), comm);
  badConfigs();
  staleId(&id, rank, dir);
  printf("%s: bad inputs done, %d wrong\n", g_who, wrongResults());
}
