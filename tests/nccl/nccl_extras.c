/* SPDX-License-Identifier: Apache-2.0 */
/* Mode "extras" of nccl_program: the calls of nccl.h beyond the collectives, through Loom's
 * libnccl.so.2, in one process (ncclCommInitAll's two ranks, driven in groups): ncclMemAlloc'd
 * buffers in an exact all-reduce, registration and windows (and their misuse), PreMulSum,
 * ncclCommCuDevice on a host communicator, ncclResetDebugInit, a call this library refuses
 * inside a group failing the group (nothing runs, and the next group works), every form of
 * ncclGroupSimulateEnd, a bad config among a group's inits failing at once, and a destroy of an
 * init still queued in its group returning at once. */
#include <stdio.h>
#include <string.h>

#include "nccl_program_util.h"

#define COUNT 1001

static void expectCode(const char* what, ncclResult_t got, ncclResult_t want) {
  if (got != want) reportWrong("%s: result %d (%s), expected %d: %s", what, got, ncclGetErrorString(got), want,
                               ncclGetLastError(NULL));
  else printf("%s: %d as expected: %s\n", what, got, ncclGetLastError(NULL));
}

static void allReduceBoth(ncclComm_t comms[2], float* bufs[2], ncclRedOp_t op, cudaStream_t stream1) {
  NCHECK(ncclGroupStart(), NULL);
  NCHECK(ncclAllReduce(bufs[0], bufs[0], COUNT, ncclFloat, op, comms[0], 0), comms[0]);
  (void)ncclAllReduce(bufs[1], bufs[1], COUNT, ncclFloat, op, comms[1], stream1);
}

void runExtras(void) {
  ncclComm_t comms[2];
  NCHECK(ncclCommInitAll(comms, 2, NULL), NULL);
  int device = 0;
  expectCode("ncclCommCuDevice on a host communicator", ncclCommCuDevice(comms[0], &device), ncclInvalidUsage);
  /* Deprecated in nccl.h 2.28, still exported: called as an older program would. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop

  /* ncclMemAlloc'd buffers, registered, in an exact all-reduce. */
  float* bufs[2];
  void* handles[2];
  ncclWindow_t windows[2];
  for (int r = 0; r < 2; ++r) {
    NCHECK(ncclMemAlloc((void**)&bufs[r], COUNT * sizeof(float)), NULL);
    for (int i = 0; i < COUNT; ++i) bufs[r][i] = (float)((r + 1) * (i % 5));
    NCHECK(ncclCommRegister(comms[r], bufs[r], COUNT * sizeof(float), &handles[r]), comms[r]);
    NCHECK(ncclCommWindowRegister(comms[r], bufs[r], COUNT * sizeof(float), &windows[r], 0), comms[r]);
  }
  allReduceBoth(comms, bufs, ncclSum, 0);
  NCHECK(ncclGroupEnd(), NULL);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < COUNT; ++i) {
      if (bufs[r][i] != (float)(3 * (i % 5))) {
        reportWrong("memalloc all-reduce: rank %d [%d] = %g", r, i, bufs[r][i]);
        break;
      }
    }
  }

  /* PreMulSum: each rank's input times its own scalar (2 and 3). */
  ncclRedOp_t ops[2];
  float scalars[2] = {2.0f, 3.0f};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < COUNT; ++i) bufs[r][i] = 1.0f;
    NCHECK(ncclRedOpCreatePreMulSum(&ops[r], &scalars[r], ncclFloat, ncclScalarHostImmediate, comms[r]), comms[r]);
  }
  NCHECK(ncclGroupStart(), NULL);
  for (int r = 0; r < 2; ++r) NCHECK(ncclAllReduce(bufs[r], bufs[r], COUNT, ncclFloat, ops[r], comms[r], 0), comms[r]);
  NCHECK(ncclGroupEnd(), NULL);
  if (bufs[0][COUNT - 1] != 5.0f || bufs[1][0] != 5.0f) reportWrong("PreMulSum gave %g, %g, expected 5", bufs[0][COUNT - 1], bufs[1][0]);
  for (int r = 0; r < 2; ++r) NCHECK(ncclRedOpDestroy(ops[r], comms[r]), comms[r]);

  /* A call this library refuses (a stream without CUDA) fails its whole group: nothing runs. */
  for (int r = 0; r < 2; ++r) bufs[r][0] = 7.0f;
  allReduceBoth(comms, bufs, ncclSum, (cudaStream_t)0x1);
  expectCode("ncclGroupEnd after a refused call", ncclGroupEnd(), ncclInvalidUsage);
  if (bufs[0][0] != 7.0f) reportWrong("a refused group ran: %g", bufs[0][0]);
  allReduceBoth(comms, bufs, ncclSum, 0); /* ... and the next group works */
  NCHECK(ncclGroupEnd(), NULL);
  if (bufs[0][0] != 14.0f) reportWrong("the group after a refused one gave %g, expected 14", bufs[0][0]);

  /* ncclGroupSimulateEnd: NULL is a plain ncclGroupEnd; otherwise the group ends unrun. */
  allReduceBoth(comms, bufs, ncclSum, 0);
  NCHECK(ncclGroupSimulateEnd(NULL), NULL);
  if (bufs[0][0] != 28.0f) reportWrong("ncclGroupSimulateEnd(NULL) did not run the group: %g", bufs[0][0]);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  allReduceBoth(comms, bufs, ncclSum, 0);
  expectCode("ncclGroupSimulateEnd", ncclGroupSimulateEnd(&info), ncclInvalidUsage);
  if (info.estimatedTime != -1.0f || bufs[0][0] != 28.0f) reportWrong("simulated group: estimate %g, value %g", info.estimatedTime, bufs[0][0]);
  info.magic = 0;
  allReduceBoth(comms, bufs, ncclSum, 0);
  expectCode("ncclGroupSimulateEnd with a bad magic", ncclGroupSimulateEnd(&info), ncclInvalidArgument);
  expectCode("ncclGroupEnd with no group open", ncclGroupEnd(), ncclInvalidUsage);

  /* Registrations and windows, and their misuse. */
  for (int r = 0; r < 2; ++r) {
    NCHECK(ncclCommWindowDeregister(comms[r], windows[r]), comms[r]);
    NCHECK(ncclCommDeregister(comms[r], handles[r]), comms[r]);
  }
  expectCode("a second ncclCommDeregister", ncclCommDeregister(comms[0], handles[0]), ncclInvalidArgument);
  expectCode("a second ncclCommWindowDeregister", ncclCommWindowDeregister(comms[0], windows[0]), ncclInvalidArgument);
  for (int r = 0; r < 2; ++r) NCHECK(ncclMemFree(bufs[r]), NULL);
  expectCode("a second ncclMemFree", ncclMemFree(bufs[0]), ncclInvalidArgument);

  /* A bad config among a group's inits fails the group at once, not after the timeout. */
  ncclUniqueId id;
  NCHECK(ncclGetUniqueId(&id), NULL);
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER, bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x12345678;
  ncclComm_t pair[2] = {NULL, NULL};
  const double start = nowSeconds();
  NCHECK(ncclGroupStart(), NULL);
  NCHECK(ncclCommInitRankConfig(&pair[0], 2, id, 0, &good), NULL);
  expectCode("an init with a bad magic in a group", ncclCommInitRankConfig(&pair[1], 2, id, 1, &bad), ncclInvalidArgument);
  expectCode("ncclGroupEnd after it", ncclGroupEnd(), ncclInvalidArgument);
  if (nowSeconds() - start > 2.0) reportWrong("the refused group took %.1f s", nowSeconds() - start);
  if (pair[0] != NULL) NCHECK(ncclCommDestroy(pair[0]), NULL);

  /* Destroying an init still queued in its group returns at once; the group's end says why. */
  ncclUniqueId lone;
  NCHECK(ncclGetUniqueId(&lone), NULL);
  ncclComm_t queued = NULL;
  const double queuedAt = nowSeconds();
  NCHECK(ncclGroupStart(), NULL);
  NCHECK(ncclCommInitRank(&queued, 1, lone, 0), NULL);
  NCHECK(ncclCommDestroy(queued), NULL);
  expectCode("ncclGroupEnd after destroying its init", ncclGroupEnd(), ncclInvalidUsage);
  if (nowSeconds() - queuedAt > 2.0) reportWrong("destroying a queued init took %.1f s", nowSeconds() - queuedAt);

  for (int r = 0; r < 2; ++r) NCHECK(ncclCommDestroy(comms[r]), NULL);
}
