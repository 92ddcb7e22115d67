// SPDX-License-Identifier: Apache-2.0
/* Helpers of the "ordinary NCCL program" (nccl_program.c, nccl_group_init.c): checked calls,
 * the unique-id file exchange, bounded waits, the libnccl that /proc/self/maps shows, and
 * typed element access for exact checks. Nothing here knows Loom: only NVIDIA's nccl.h. */
#ifndef LOOM_TESTS_NCCL_PROGRAM_UTIL_H_
#define LOOM_TESTS_NCCL_PROGRAM_UTIL_H_

#include <nccl.h>
#include <stddef.h>

/* The rank (or "pair"/"rest" process label) that prefixes every line this process prints. */
extern char g_who[32];

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double nowSeconds(void);

/* A run that goes on past `seconds` prints where it was and exits 3: the last resort behind
 * every bounded wait, so no run of this program can hang. */
void startWatchdog(int seconds);
void watchdogWhere(const char* what);

/* Prints "<who>: FAILED <call> at <file>:<line>: result N (<string>): <last error>" and exits 1. */
void failCall(const char* call, const char* file, int line, ncclResult_t result, ncclComm_t comm);

/* Every NCCL call of the program goes through one of these. NCHECK wants ncclSuccess; NCHECK_NB
 * also takes ncclInProgress (a non-blocking communicator's call that has not finished yet). */
#define NCHECK(call, comm)                                                       \
  do {                                                                           \
    watchdogWhere(#call);                                                        \
    ncclResult_t nccheckResult_ = (call);                                        \
    if (nccheckResult_ != ncclSuccess) failCall(#call, __FILE__, __LINE__, nccheckResult_, (comm)); \
  } while (0)
#define NCHECK_NB(call, comm)                                                    \
  do {                                                                           \
    watchdogWhere(#call);                                                        \
    ncclResult_t nccheckResult_ = (call);                                        \
    if (nccheckResult_ != ncclSuccess && nccheckResult_ != ncclInProgress)       \
      failCall(#call, __FILE__, __LINE__, nccheckResult_, (comm));               \
  } while (0)

/* Polls ncclCommGetAsyncError until it stops saying ncclInProgress, at most `seconds`; exits 1
 * on a timeout or on any result but ncclSuccess. */
void awaitReady(ncclComm_t comm, const char* what, double seconds);

/* Prints a message, counts a wrong result (the run goes on, so every wrong collective shows). */
void reportWrong(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
int wrongResults(void);
/* Prints and exits 1 (a broken precondition: nothing after it would mean anything). */
void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The classic exchange: one rank writes the id to DIR/TAG.id atomically (a temporary file, then
 * rename), the others poll for the file (at most `seconds`) and read its 128 bytes. */
void publishId(const char* dir, const char* tag, const ncclUniqueId* id);
void fetchId(const char* dir, const char* tag, ncclUniqueId* id, double seconds);
/* A flag file, for the few steps where one rank must wait for another outside NCCL. */
void publishFlag(const char* dir, const char* tag);
void awaitFlag(const char* dir, const char* tag, double seconds);

/* Prints "<who>: libnccl: <path>" for each mapped file whose basename starts with "libnccl"
 * (the runner checks it is Loom's, and only one). */
void printLoadedLibnccl(void);

/* Element access by datatype, so one check serves every type: values are small integers (or
 * quarters), exact in every type tested, fp16 and bf16 included. */
size_t typeSize(ncclDataType_t type);
const char* typeName(ncclDataType_t type);
int typeIsSigned(ncclDataType_t type);
int typeIsFloat(ncclDataType_t type);
void putValue(void* buf, ncclDataType_t type, size_t index, double value);
double getValue(const void* buf, ncclDataType_t type, size_t index);

/* Buffers with a guard after the data: a call that writes past its count shows. */
void* allocBuffer(size_t bytes);
int guardIntact(const void* buf);
void freeBuffer(void* buf);

/* The parts of nccl_program.c in files of their own. */
/* Every collective of nccl.h on `comm` over several odd counts and datatypes, in place and out
 * of place, each result checked exactly; a wrong one is counted (reportWrong), a failed call
 * exits. `label` names the communicator in messages. */
void runCollectives(ncclComm_t comm, const char* label);
/* One all-reduce of int32 whose result is checked (a quick proof that `comm` works). */
void checkAllReduce(ncclComm_t comm, const char* label, int blocking);
/* nccl_bad_input.c: the bad-input mode (2 ranks). */
void runBadInput(int rank, int nranks, const char* dir);
void runExtras(void);

#endif /* LOOM_TESTS_NCCL_PROGRAM_UTIL_H_ */
