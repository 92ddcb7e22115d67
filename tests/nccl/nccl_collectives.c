// SPDX-License-Identifier: Apache-2.0
/* The collectives of the ordinary NCCL program: every collective of nccl.h 2.28 on host buffers
 * and stream 0, over odd counts (0 included) and several datatypes, in place and out of place
 * where NCCL has both forms. Every input is a small integer made from (rank, index), so every
 * sum, product, maximum, minimum and (where exact) average is known exactly in every datatype,
 * float16 and bfloat16 included; each result is compared element by element, the send buffer
 * must be unchanged after an out-of-place call, and nothing may be written past a buffer's end.
 *
 * Stream 0 with host buffers: the call has finished when it returns (a program with device
 * buffers would cudaStreamSynchronize here; this one needs no CUDA runtime at all). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_program_util.h"

typedef struct {
  ncclComm_t comm;
  int rank;
  int n;
  const char* label;
} Ctx;

static const size_t kCounts[] = {0, 1, 7, 97, 1031, 65539};
enum { kNumCounts = sizeof kCounts / sizeof kCounts[0] };
static const ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                           ncclUint64,  ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
enum { kNumTypes = sizeof kAllTypes / sizeof kAllTypes[0] };
/* The data-movement collectives copy bytes: element sizes 1, 2, 4 and 8 cover them. */
static const ncclDataType_t kCopyTypes[] = {ncclInt32, ncclFloat32, ncclUint8, ncclFloat64, ncclBfloat16};
enum { kNumCopyTypes = sizeof kCopyTypes / sizeof kCopyTypes[0] };
static const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};

/* Rank r's element j: in [-5, 5] (signed types) or [0, 10], so a sum over 8 ranks fits int8. */
static double value(int r, size_t j, ncclDataType_t type) {
  double v = (double)(((size_t)r * 7 + j * 3 + 1) % 11);
  return typeIsSigned(type) ? v - 5 : v;
}

/* Products stay small: 1 or 2 per rank. */
static double prodValue(int r, size_t j) { return ((size_t)r + j) % 3 == 0 ? 2 : 1; }

/* What rank `src` sends to rank `dst` (all-to-all, send/recv, scatter): every pair differs. */
static double pairValue(int src, int dst, size_t j) { return (double)(((size_t)src * 5 + (size_t)dst * 3 + j) % 13); }

static double input(ncclRedOp_t op, int r, size_t j, ncclDataType_t type) {
  return op == ncclProd ? prodValue(r, j) : value(r, j, type);
}

/* An average is exact for integers (NCCL: the sum, then one division truncating toward zero) and
 * for floats when the rank count is a power of two. */
static int avgExact(ncclDataType_t type, int n) { return !typeIsFloat(type) || (n & (n - 1)) == 0; }

static double expectReduce(ncclRedOp_t op, ncclDataType_t type, int n, size_t j) {
  double acc = input(op, 0, j, type);
  for (int r = 1; r < n; ++r) {
    double v = input(op, r, j, type);
    switch (op) {
      case ncclSum: case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = v > acc ? v : acc; break;
      case ncclMin: acc = v < acc ? v : acc; break;
      default: die("expectReduce: op %d", (int)op);
    }
  }
  if (op == ncclAvg) return typeIsFloat(type) ? acc / n : (double)((long long)acc / n);
  return acc;
}

static size_t g_calls = 0;

/* Compares `count` elements of `got` with `want`; reports the first few that differ. */
static void compare(const char* what, const void* got, ncclDataType_t type, const double* want, size_t count) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double g = getValue(got, type, i);
    if (g != want[i]) {
      if (bad < 3) reportWrong("%s: element %zu is %g, expected %g", what, i, g, want[i]);
      ++bad;
    }
  }
  if (bad > 3) reportWrong("%s: %zu of %zu elements wrong", what, bad, count);
}

static void checkGuard(const char* what, const void* buf) {
  if (buf != NULL && !guardIntact(buf)) reportWrong("%s: wrote past the end of a buffer", what);
}

static double* wantBuffer(size_t count) {
  double* want = malloc((count + 1) * sizeof(double));
  if (want == NULL) die("out of memory");
  return want;
}

#define DESCRIBE(what, ctx, coll, type, op, count, inPlace)                                             \
  snprintf(what, sizeof what, "%s %s %s%s%s count %zu %s", (ctx)->label, coll, typeName(type), (op) ? " " : "", \
           (op) ? (op) : "", count, (inPlace) ? "in place" : "out of place")

static void allReduce(const Ctx* c, ncclDataType_t type, int opIndex, size_t count, int inPlace) {
  char what[200];
  DESCRIBE(what, c, "ncclAllReduce", type, kOpNames[opIndex], count, inPlace);
  const ncclRedOp_t op = kOps[opIndex];
  const size_t bytes = count * typeSize(type);
  void* send = allocBuffer(bytes);
  void* recv = inPlace ? send : allocBuffer(bytes);
  double* want = wantBuffer(count);
  for (size_t i = 0; i < count; ++i) putValue(send, type, i, input(op, c->rank, i, type));
  NCHECK(ncclAllReduce(send, recv, count, type, op, c->comm, NULL), c->comm);
  for (size_t i = 0; i < count; ++i) want[i] = expectReduce(op, type, c->n, i);
  compare(what, recv, type, want, count);
  if (!inPlace) {  /* the input is untouched */
    for (size_t i = 0; i < count; ++i) want[i] = input(op, c->rank, i, type);
    compare(what, send, type, want, count);
    checkGuard(what, recv);
    freeBuffer(recv);
  }
  checkGuard(what, send);
  freeBuffer(send);
  free(want);
  ++g_calls;
}

static void reduceScatter(const Ctx* c, ncclDataType_t type, int opIndex, size_t count, int inPlace) {
  char what[200];
  DESCRIBE(what, c, "ncclReduceScatter", type, kOpNames[opIndex], count, inPlace);
  const ncclRedOp_t op = kOps[opIndex];
  const size_t es = typeSize(type), total = count * (size_t)c->n;
  void* send = allocBuffer(total * es);
  /* NCCL's in-place form: recvbuff == sendbuff + rank * recvcount */
  void* recv = inPlace ? (char*)send + (size_t)c->rank * count * es : allocBuffer(count * es);
  double* want = wantBuffer(total);
  for (size_t j = 0; j < total; ++j) putValue(send, type, j, input(op, c->rank, j, type));
  NCHECK(ncclReduceScatter(send, recv, count, type, op, c->comm, NULL), c->comm);
  for (size_t i = 0; i < count; ++i) want[i] = expectReduce(op, type, c->n, (size_t)c->rank * count + i);
  compare(what, recv, type, want, count);
  if (!inPlace) {
    for (size_t j = 0; j < total; ++j) want[j] = input(op, c->rank, j, type);
    compare(what, send, type, want, total);
    checkGuard(what, recv);
    freeBuffer(recv);
  }
  checkGuard(what, send);
  freeBuffer(send);
  free(want);
  ++g_calls;
}

static void reduce(const Ctx* c, ncclDataType_t type, int opIndex, size_t count, int inPlace, int root) {
  char what[200];
  DESCRIBE(what, c, "ncclReduce", type, kOpNames[opIndex], count, inPlace);
  snprintf(what + strlen(what), sizeof what - strlen(what), " root %d", root);
  const ncclRedOp_t op = kOps[opIndex];
  const size_t bytes = count * typeSize(type);
  void* send = allocBuffer(bytes);
  /* recvbuff may be NULL on every rank but the root */
  void* recv = inPlace ? send : (c->rank == root ? allocBuffer(bytes) : NULL);
  double* want = wantBuffer(count);
  for (size_t i = 0; i < count; ++i) putValue(send, type, i, input(op, c->rank, i, type));
  NCHECK(ncclReduce(send, recv, count, type, op, root, c->comm, NULL), c->comm);
  if (c->rank == root) {
    for (size_t i = 0; i < count; ++i) want[i] = expectReduce(op, type, c->n, i);
    compare(what, recv, type, want, count);
  }
  if (!inPlace) {
    for (size_t i = 0; i < count; ++i) want[i] = input(op, c->rank, i, type);
    compare(what, send, type, want, count);
    checkGuard(what, recv);
    freeBuffer(recv);
  }
  checkGuard(what, send);
  freeBuffer(send);
  free(want);
  ++g_calls;
}

static void allGather(const Ctx* c, ncclDataType_t type, size_t count, int inPlace) {
  char what[200];
  DESCRIBE(what, c, "ncclAllGather", type, NULL, count, inPlace);
  const size_t es = typeSize(type), total = count * (size_t)c->n;
  void* recv = allocBuffer(total * es);
  /* NCCL's in-place form: sendbuff == recvbuff + rank * sendcount */
  void* send = inPlace ? (char*)recv + (size_t)c->rank * count * es : allocBuffer(count * es);
  double* want = wantBuffer(total);
  for (size_t i = 0; i < count; ++i) putValue(send, type, i, value(c->rank, i, type));
  NCHECK(ncclAllGather(send, recv, count, type, c->comm, NULL), c->comm);
  for (int r = 0; r < c->n; ++r)
    for (size_t i = 0; i < count; ++i) want[(size_t)r * count + i] = value(r, i, type);
  compare(what, recv, type, want, total);
  if (!inPlace) {
    compare(what, send, type, want + (size_t)c->rank * count, count);
    checkGuard(what, send);
    freeBuffer(send);
  }
  checkGuard(what, recv);
  freeBuffer(recv);
  free(want);
  ++g_calls;
}

/* ncclBroadcast (out of place, or sendbuff == recvbuff) and the in-place-only ncclBcast. */
static void broadcast(const Ctx* c, ncclDataType_t type, size_t count, int form, int root) {
  static const char* const forms[] = {"out of place", "in place", "ncclBcast"};
  char what[200];
  snprintf(what, sizeof what, "%s ncclBroadcast %s count %zu %s root %d", c->label, typeName(type), count,
           forms[form], root);
  const size_t bytes = count * typeSize(type);
  void* recv = allocBuffer(bytes);
  /* out of place, a rank other than the root passes a send buffer full of junk: NCCL reads only
   * the root's */
  void* send = form == 0 ? allocBuffer(bytes) : recv;
  double* want = wantBuffer(count);
  if (c->rank == root)
    for (size_t i = 0; i < count; ++i) putValue(send, type, i, value(root, i, type));
  if (form == 2)
    NCHECK(ncclBcast(recv, count, type, root, c->comm, NULL), c->comm);
  else
    NCHECK(ncclBroadcast(send, recv, count, type, root, c->comm, NULL), c->comm);
  for (size_t i = 0; i < count; ++i) want[i] = value(root, i, type);
  compare(what, recv, type, want, count);
  if (form == 0) {
    if (c->rank == root) compare(what, send, type, want, count);
    checkGuard(what, send);
    freeBuffer(send);
  }
  checkGuard(what, recv);
  freeBuffer(recv);
  free(want);
  ++g_calls;
}

static void gather(const Ctx* c, ncclDataType_t type, size_t count, int inPlace, int root) {
  char what[200];
  DESCRIBE(what, c, "ncclGather", type, NULL, count, inPlace);
  snprintf(what + strlen(what), sizeof what - strlen(what), " root %d", root);
  const size_t es = typeSize(type), total = count * (size_t)c->n;
  const int isRoot = c->rank == root;
  void* recv = isRoot ? allocBuffer(total * es) : NULL;  /* unused off the root */
  /* NCCL's in-place form (root): sendbuff == recvbuff + root * count */
  void* send = inPlace && isRoot ? (char*)recv + (size_t)root * count * es : allocBuffer(count * es);
  double* want = wantBuffer(total);
  for (size_t i = 0; i < count; ++i) putValue(send, type, i, value(c->rank, i, type));
  NCHECK(ncclGather(send, recv, count, type, root, c->comm, NULL), c->comm);
  for (int r = 0; r < c->n; ++r)
    for (size_t i = 0; i < count; ++i) want[(size_t)r * count + i] = value(r, i, type);
  if (isRoot) compare(what, recv, type, want, total);
  if (!(inPlace && isRoot)) {
    compare(what, send, type, want + (size_t)c->rank * count, count);
    checkGuard(what, send);
    freeBuffer(send);
  }
  checkGuard(what, recv);
  freeBuffer(recv);
  free(want);
  ++g_calls;
}

static void scatter(const Ctx* c, ncclDataType_t type, size_t count, int inPlace, int root) {
  char what[200];
  DESCRIBE(what, c, "ncclScatter", type, NULL, count, inPlace);
  snprintf(what + strlen(what), sizeof what - strlen(what), " root %d", root);
  const size_t es = typeSize(type), total = count * (size_t)c->n;
  const int isRoot = c->rank == root;
  void* send = isRoot ? allocBuffer(total * es) : NULL;  /* unused off the root */
  /* NCCL's in-place form (root): recvbuff == sendbuff + root * count */
  void* recv = inPlace && isRoot ? (char*)send + (size_t)root * count * es : allocBuffer(count * es);
  double* want = wantBuffer(total);
  if (isRoot)
    for (int r = 0; r < c->n; ++r)
      for (size_t i = 0; i < count; ++i) putValue(send, type, (size_t)r * count + i, pairValue(root, r, i));
  NCHECK(ncclScatter(send, recv, count, type, root, c->comm, NULL), c->comm);
  for (size_t i = 0; i < count; ++i) want[i] = pairValue(root, c->rank, i);
  compare(what, recv, type, want, count);
  if (!(inPlace && isRoot)) {
    checkGuard(what, recv);
    freeBuffer(recv);
  }
  checkGuard(what, send);
  freeBuffer(send);
  free(want);
  ++g_calls;
}

/* ncclAlltoAll, or the same exchange as ncclSend/ncclRecv to and from every rank (itself
 * included) inside one group, the receives issued before the sends on odd ranks. */
static void allToAll(const Ctx* c, ncclDataType_t type, size_t count, int pointToPoint) {
  char what[200];
  snprintf(what, sizeof what, "%s %s %s count %zu", c->label,
           pointToPoint ? "grouped ncclSend/ncclRecv all pairs" : "ncclAlltoAll", typeName(type), count);
  const size_t es = typeSize(type), total = count * (size_t)c->n;
  void* send = allocBuffer(total * es);
  void* recv = allocBuffer(total * es);
  double* want = wantBuffer(total);
  for (int r = 0; r < c->n; ++r)
    for (size_t i = 0; i < count; ++i) putValue(send, type, (size_t)r * count + i, pairValue(c->rank, r, i));
  if (pointToPoint) {
    NCHECK(ncclGroupStart(), c->comm);
    for (int k = 0; k < c->n; ++k) {
      const int to = (c->rank + k) % c->n, from = (c->rank - k + c->n) % c->n;
      char* sendAt = (char*)send + (size_t)to * count * es;
      char* recvAt = (char*)recv + (size_t)from * count * es;
      if (c->rank % 2 == 1) NCHECK(ncclRecv(recvAt, count, type, from, c->comm, NULL), c->comm);
      NCHECK(ncclSend(sendAt, count, type, to, c->comm, NULL), c->comm);
      if (c->rank % 2 == 0) NCHECK(ncclRecv(recvAt, count, type, from, c->comm, NULL), c->comm);
    }
    NCHECK(ncclGroupEnd(), c->comm);
  } else {
    NCHECK(ncclAlltoAll(send, recv, count, type, c->comm, NULL), c->comm);
  }
  for (int r = 0; r < c->n; ++r)
    for (size_t i = 0; i < count; ++i) want[(size_t)r * count + i] = pairValue(r, c->rank, i);
  compare(what, recv, type, want, total);
  checkGuard(what, send);
  checkGuard(what, recv);
  freeBuffer(send);
  freeBuffer(recv);
  free(want);
  ++g_calls;
}

/* Several collectives and a ring of sends and receives in one group, as a framework that
 * coalesces its calls issues them: all of them complete at ncclGroupEnd. */
static void groupedMix(const Ctx* c, size_t count) {
  char what[200];
  snprintf(what, sizeof what, "%s one group of ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast, "
           "ring ncclSend/ncclRecv, count %zu", c->label, count);
  const size_t total = count * (size_t)c->n;
  const int next = (c->rank + 1) % c->n, prev = (c->rank - 1 + c->n) % c->n, root = c->n - 1;
  int32_t* sum = allocBuffer(count * sizeof(int32_t));
  float* mine = allocBuffer(count * sizeof(float));
  float* gathered = allocBuffer(total * sizeof(float));
  float* rsIn = allocBuffer(total * sizeof(float));
  float* rsOut = allocBuffer(count * sizeof(float));
  double* bcast = allocBuffer(count * sizeof(double));
  int32_t* ringOut = allocBuffer(count * sizeof(int32_t));
  int32_t* ringIn = allocBuffer(count * sizeof(int32_t));
  double* want = wantBuffer(total);
  for (size_t i = 0; i < count; ++i) {
    sum[i] = (int32_t)value(c->rank, i, ncclInt32);
    mine[i] = (float)value(c->rank, i, ncclFloat32);
    bcast[i] = c->rank == root ? value(root, i, ncclFloat64) : -99;
    ringOut[i] = (int32_t)pairValue(c->rank, next, i);
  }
  for (size_t j = 0; j < total; ++j) rsIn[j] = (float)value(c->rank, j, ncclFloat32);
  NCHECK(ncclGroupStart(), c->comm);
  NCHECK(ncclAllReduce(sum, sum, count, ncclInt32, ncclSum, c->comm, NULL), c->comm);
  NCHECK(ncclAllGather(mine, gathered, count, ncclFloat32, c->comm, NULL), c->comm);
  NCHECK(ncclReduceScatter(rsIn, rsOut, count, ncclFloat32, ncclSum, c->comm, NULL), c->comm);
  NCHECK(ncclBroadcast(bcast, bcast, count, ncclFloat64, root, c->comm, NULL), c->comm);
  NCHECK(ncclSend(ringOut, count, ncclInt32, next, c->comm, NULL), c->comm);
  NCHECK(ncclRecv(ringIn, count, ncclInt32, prev, c->comm, NULL), c->comm);
  NCHECK(ncclGroupEnd(), c->comm);
  for (size_t i = 0; i < count; ++i) want[i] = expectReduce(ncclSum, ncclInt32, c->n, i);
  compare(what, sum, ncclInt32, want, count);
  for (int r = 0; r < c->n; ++r)
    for (size_t i = 0; i < count; ++i) want[(size_t)r * count + i] = value(r, i, ncclFloat32);
  compare(what, gathered, ncclFloat32, want, total);
  for (size_t i = 0; i < count; ++i) want[i] = expectReduce(ncclSum, ncclFloat32, c->n, (size_t)c->rank * count + i);
  compare(what, rsOut, ncclFloat32, want, count);
  for (size_t i = 0; i < count; ++i) want[i] = value(root, i, ncclFloat64);
  compare(what, bcast, ncclFloat64, want, count);
  for (size_t i = 0; i < count; ++i) want[i] = pairValue(prev, c->rank, i);
  compare(what, ringIn, ncclInt32, want, count);
  void* buffers[] = {sum, mine, gathered, rsIn, rsOut, bcast, ringOut, ringIn};
  for (size_t b = 0; b < sizeof buffers / sizeof buffers[0]; ++b) {
    checkGuard(what, buffers[b]);
    freeBuffer(buffers[b]);
  }
  free(want);
  g_calls += 6;
}

void checkAllReduce(ncclComm_t comm, const char* label, int blocking) {
  int rank = -1, n = 0;
  NCHECK(ncclCommUserRank(comm, &rank), comm);
  NCHECK(ncclCommCount(comm, &n), comm);
  enum { kCount = 1031 };
  char what[200];
  snprintf(what, sizeof what, "%s ncclAllReduce int32 sum count %d", label, kCount);
  int32_t* buf = allocBuffer(kCount * sizeof(int32_t));
  double want[kCount];
  for (size_t i = 0; i < kCount; ++i) buf[i] = (int32_t)value(rank, i, ncclInt32);
  if (blocking) {
    NCHECK(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, NULL), comm);
  } else {  /* a non-blocking communicator's call may return ncclInProgress: poll until done */
    NCHECK_NB(ncclAllReduce(buf, buf, kCount, ncclInt32, ncclSum, comm, NULL), comm);
    awaitReady(comm, what, 30);
  }
  for (size_t i = 0; i < kCount; ++i) want[i] = expectReduce(ncclSum, ncclInt32, n, i);
  compare(what, buf, ncclInt32, want, kCount);
  checkGuard(what, buf);
  freeBuffer(buf);
}

void runCollectives(ncclComm_t comm, const char* label) {
  Ctx c = {comm, -1, 0, label};
  NCHECK(ncclCommUserRank(comm, &c.rank), comm);
  NCHECK(ncclCommCount(comm, &c.n), comm);
  const double start = nowSeconds();
  g_calls = 0;
  const int wrongBefore = wrongResults();
  for (int ci = 0; ci < kNumCounts; ++ci) {
    const size_t count = kCounts[ci];
    const int root = (int)(count % (size_t)c.n), otherRoot = (int)((count + 1) % (size_t)c.n);
    /* int32 and float32 with every op in both forms; the other types with sum and one op that
     * changes with the count, in the form that changes with it */
    for (int ti = 0; ti < kNumTypes; ++ti) {
      const ncclDataType_t type = kAllTypes[ti];
      const int full = type == ncclInt32 || type == ncclFloat32;
      for (int oi = 0; oi < 5; ++oi) {
        if (!full && oi != 0 && oi != (ti + ci) % 5) continue;
        if (kOps[oi] == ncclAvg && !avgExact(type, c.n)) continue;
        for (int inPlace = 0; inPlace < 2; ++inPlace) {
          if (!full && inPlace != (ti + ci + oi) % 2) continue;
          allReduce(&c, type, oi, count, inPlace);
          if (full || oi == 0) {
            reduceScatter(&c, type, oi, count, inPlace);
            reduce(&c, type, oi, count, inPlace, inPlace ? otherRoot : root);
          }
        }
      }
    }
    for (int ti = 0; ti < kNumCopyTypes; ++ti) {
      const ncclDataType_t type = kCopyTypes[ti];
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        allGather(&c, type, count, inPlace);
        gather(&c, type, count, inPlace, inPlace ? root : otherRoot);
        scatter(&c, type, count, inPlace, inPlace ? otherRoot : root);
      }
      for (int form = 0; form < 3; ++form) broadcast(&c, type, count, form, (root + form) % c.n);
      allToAll(&c, type, count, 0);
      allToAll(&c, type, count, 1);
    }
    groupedMix(&c, count);
  }
  printf("%s: %s: %zu collective calls on %d ranks, %d wrong, %.2f s\n", g_who, label, g_calls, c.n,
         wrongResults() - wrongBefore, nowSeconds() - start);
  fflush(stdout);
}
