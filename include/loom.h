// SPDX-License-Identifier: Apache-2.0
/*
 * loom.h — the public C API of Loom, a collective communication library.
 *
 * It mirrors nccl.h (2.28) one to one with the `loom` prefix: the same datatypes, reduction
 * ops and result codes with the same numbering, so code written for NCCL ports by renaming.
 * Buffers are host memory in this release; a stream is Loom's own ordered host stream
 * (NULL = run on the calling thread).
 *
 * C99-clean; usable from C and C++. Every function returns a loomResult_t; on failure
 * loomGetLastError() names what failed (rank, peer, op, size, errno).
 */
#ifndef LOOM_H_
#define LOOM_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define LOOM_MAJOR 0
#define LOOM_MINOR 1
#define LOOM_PATCH 0
#define LOOM_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define LOOM_VERSION_CODE LOOM_VERSION(LOOM_MAJOR, LOOM_MINOR, LOOM_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; only this API is exported. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Opaque handles. */
typedef struct loomComm* loomComm_t;
typedef struct loomStream* loomStream_t;
#define LOOM_COMM_NULL NULL

/* The rendezvous handle: the root's address and a 128-bit secret. Pass it to every rank. */
#define LOOM_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[LOOM_UNIQUE_ID_BYTES];
} loomUniqueId;

/* Result codes (same values as ncclResult_t). */
typedef enum {
  loomSuccess = 0,
  loomUnhandledCudaError = 1,
  loomSystemError = 2,
  loomInternalError = 3,
  loomInvalidArgument = 4,
  loomInvalidUsage = 5,
  loomRemoteError = 6,
  loomInProgress = 7,
  loomNumResults = 8
} loomResult_t;

#define LOOM_CONFIG_UNDEF_INT INT_MIN
#define LOOM_CONFIG_UNDEF_PTR NULL
#define LOOM_SPLIT_NOCOLOR -1
/* loomCommShrink flags (as nccl.h 2.28) */
#define LOOM_SHRINK_DEFAULT 0x00 /* the parent is idle: shrink it */
#define LOOM_SHRINK_ABORT 0x01   /* first stop the parent's calls in flight (after a failure) */
/* loomCommRevoke flags */
#define LOOM_REVOKE_DEFAULT 0x00 /* reserved; must be 0 */

/* Communicator configuration: initialise with LOOM_CONFIG_INITIALIZER, then set fields.
 * The first block matches ncclConfig_t field for field; the Loom block follows. */
typedef struct loomConfig_v100 {
  size_t size;           /* sizeof(loomConfig_t): lets the library accept older layouts */
  unsigned int magic;    /* LOOM_CONFIG_MAGIC */
  unsigned int version;  /* LOOM_VERSION_CODE of the header the caller compiled against */
  int blocking;          /* 1 (default): calls complete before returning; 0: may return loomInProgress */
  int cgaClusterSize;    /* accepted for NCCL compatibility; unused on host */
  int minCTAs;           /* accepted for NCCL compatibility; unused on host */
  int maxCTAs;           /* accepted for NCCL compatibility; unused on host */
  const char* netName;   /* the network transport between hosts, like LOOM_NET ("socket") */
  int splitShare;        /* accepted; resources are never shared in this release */
  int trafficClass;      /* accepted; unused */
  const char* commName;  /* shown in log lines and error messages */
  int collnetEnable;     /* accepted; unused */
  int CTAPolicy;         /* accepted; unused */
  int shrinkShare;       /* accepted; unused */
  int nvlsCTAs;          /* accepted; unused */
  int nChannelsPerNetPeer; /* sockets per TCP peer (LOOM_SOCKET_NSOCKS) */
  int nvlinkCentricSched;  /* accepted; unused */
  /* Loom additions. */
  int timeoutMs; /* bound on every wait; default LOOM_TIMEOUT_MS or 600000 (10 minutes) */
  int deterministic; /* 1: reductions bitwise reproducible (README); default LOOM_DETERMINISTIC or 0 */
} loomConfig_t;

#define LOOM_CONFIG_MAGIC 0x6c6f6f6du /* "loom" */

#define LOOM_CONFIG_INITIALIZER                                                              \
  {                                                                                          \
    sizeof(loomConfig_t), LOOM_CONFIG_MAGIC, LOOM_VERSION_CODE, LOOM_CONFIG_UNDEF_INT,       \
        LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT,                 \
        LOOM_CONFIG_UNDEF_PTR, LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT,                 \
        LOOM_CONFIG_UNDEF_PTR, LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT,                 \
        LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT,                 \
        LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT, LOOM_CONFIG_UNDEF_INT                  \
  }

/* Reduction operations (same values as ncclRedOp_t). */
typedef enum {
  loomSum = 0,
  loomProd = 1,
  loomMax = 2,
  loomMin = 3,
  loomAvg = 4,
  loomNumOps = 5,
  loomMaxRedOp = 0x7fffffff
} loomRedOp_t;

/* Datatypes (same values as ncclDataType_t). fp8: e4m3 (bias 7, no infinities, max 448) and
 * e5m2 (bias 15, IEEE-like); reductions compute in float32 and round to nearest even, finite
 * overflow saturating at +-448 / +-57344 as CUDA's conversions do (README, "Numerics"). */
typedef enum {
  loomInt8 = 0,
  loomChar = 0,
  loomUint8 = 1,
  loomInt32 = 2,
  loomInt = 2,
  loomUint32 = 3,
  loomInt64 = 4,
  loomUint64 = 5,
  loomFloat16 = 6,
  loomHalf = 6,
  loomFloat32 = 7,
  loomFloat = 7,
  loomFloat64 = 8,
  loomDouble = 8,
  loomBfloat16 = 9,
  loomFloat8e4m3 = 10,
  loomFloat8e5m2 = 11,
  loomNumTypes = 12
} loomDataType_t;

/* Where the scalar of loomRedOpCreatePreMulSum lives (same values as ncclScalarResidence_t).
 * Host memory either way in this release: Immediate reads it once, at creation; Device reads
 * it when each call that uses the operator runs (so it may change between calls). */
typedef enum {
  loomScalarDevice = 0,
  loomScalarHostImmediate = 1
} loomScalarResidence_t;

/* ---- Version and errors ------------------------------------------------------------- */
loomResult_t loomGetVersion(int* version);
/* Loom's version as text, in PEP 440 form: the release ("0.1.0"), with the git revision when
 * the library was built from a git checkout ("0.1.0+g0123456789ab": 12 hex digits of the
 * commit; ".dirty" appended when tracked files had uncommitted changes). A static string,
 * never NULL; LOOM_DEBUG=INFO prints it at a process's first communicator init. */
const char* loomGetVersionString(void);
const char* loomGetErrorString(loomResult_t result);
/* The last error's message on this thread: what failed, on which rank, with which peer. */
const char* loomGetLastError(loomComm_t comm);

/* ---- Communicator lifecycle ----------------------------------------------------------- */
/* Opens the root's rendezvous listener in this process and returns its address + secret. */
loomResult_t loomGetUniqueId(loomUniqueId* uniqueId);
/* loomGetUniqueIdFlags flags. */
#define LOOM_UNIQUE_ID_DEFAULT 0x00 /* as loomGetUniqueId */
/* NCCL's meaning of a pinned address: where LOOM_COMM_ID is set (NCCL_COMM_ID, in a process
 * that honours NCCL_* variables), no root starts here; the id names that address, and rank 0
 * starts the root there when it inits, so every rank may make the same id itself. Without a
 * pinned address it is loomGetUniqueId. */
#define LOOM_UNIQUE_ID_ROOT_AT_INIT 0x01
loomResult_t loomGetUniqueIdFlags(loomUniqueId* uniqueId, int flags);
loomResult_t loomCommInitRank(loomComm_t* comm, int nranks, loomUniqueId commId, int rank);
loomResult_t loomCommInitRankConfig(loomComm_t* comm, int nranks, loomUniqueId commId, int rank,
                                    loomConfig_t* config);
/* A key-value store every rank of a communicator can reach, for rendezvous without a unique id
 * (the role of Gloo's IStore and PyTorch's c10d::Store, which its ranks already share). Keys
 * are NUL-terminated strings, values byte strings. Loom copies this struct; `context` and the
 * callbacks must stay valid until the init that uses them has completed. Each callback returns
 * loomSuccess or an error code; lastError, when given, says why the last one failed. */
typedef struct loomStore_v1 {
  size_t size;   /* sizeof(loomStore_t): lets the library accept older layouts */
  void* context; /* passed to every callback */
  /* Stores `bytes` bytes of `value` under `key`, replacing any earlier value (`value` may be
   * NULL when `bytes` is 0: an empty value). */
  loomResult_t (*set)(void* context, const char* key, const void* value, size_t bytes);
  /* Waits up to timeoutMs for `key` to be set, copies min(capacity, length) bytes of its
   * value into `value` and sets *length to the value's whole length. Returns loomInProgress
   * when the key is still missing after timeoutMs (Loom asks again, in slices of at most a
   * second, until its own timeout, and stops early on loomCommAbort). timeoutMs 0 means do not
   * wait: answer at once, with the value or loomInProgress (Loom looks up that way which ranks
   * have arrived, to name them while it waits). */
  loomResult_t (*get)(void* context, const char* key, void* value, size_t capacity,
                      size_t* length, int timeoutMs);
  /* Adds delta to the integer stored under `key` (a missing key counts as 0) and sets *result
   * to the new value. */
  loomResult_t (*add)(void* context, const char* key, int64_t delta, int64_t* result);
  /* Optional (may be NULL): why the last failed callback on this thread failed. */
  const char* (*lastError)(void* context);
} loomStore_t;

/* As loomCommInitRankConfig, with the ranks finding each other through `store` instead of a
 * unique id: every rank calls it with the same nranks and keyPrefix (NULL: ""). Loom writes
 * only keys under keyPrefix + "loom/", so one store serves many communicators, each with a
 * prefix of its own that no earlier communicator used (a reused prefix is an error). */
loomResult_t loomCommInitRankStore(loomComm_t* comm, int nranks, int rank, const loomStore_t* store,
                                   const char* keyPrefix, loomConfig_t* config);
/* ndev ranks as threads of this process. With a device runtime, rank i is bound to device
 * devlist[i] (NULL: device i); without one, devlist is not used (host communicators). */
loomResult_t loomCommInitAll(loomComm_t* comms, int ndev, const int* devlist);
/* Rank, size and rendezvous from the environment: loomrun's LOOM_RANK/LOOM_WORLD_SIZE/
 * LOOM_COMM_ID, torchrun's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, OpenMPI's
 * OMPI_COMM_WORLD_RANK/SIZE or Slurm's SLURM_PROCID/SLURM_NTASKS with LOOM_COMM_ID. */
loomResult_t loomCommInitFromEnv(loomComm_t* comm);
/* Ranks with the same color form a new communicator, ordered by key then parent rank.
 * color LOOM_SPLIT_NOCOLOR: take part, get *newcomm = NULL. */
loomResult_t loomCommSplit(loomComm_t comm, int color, int key, loomComm_t* newcomm,
                           loomConfig_t* config);
/* The survivors of comm form a new communicator: every rank not in excludeRanksList calls
 * this with the same list (excluded ranks do not call it; they may be dead), and gets a
 * communicator of nranks - excludeRanksCount ranks, numbered in parent order. It never waits
 * on an excluded rank. Flag LOOM_SHRINK_ABORT first stops calls still running on comm (use it
 * after a failure). config NULL: inherit comm's. comm must still be destroyed afterwards. */
loomResult_t loomCommShrink(loomComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            loomComm_t* newcomm, loomConfig_t* config, int shrinkFlags);
/* Stops calls in flight on comm (they fail) and refuses new ones; destroy, split and shrink
 * still work. loomCommGetAsyncError says loomInProgress until the calls in flight have
 * returned, then loomSuccess. revokeFlags must be LOOM_REVOKE_DEFAULT. */
loomResult_t loomCommRevoke(loomComm_t comm, int revokeFlags);
loomResult_t loomCommFinalize(loomComm_t comm);
loomResult_t loomCommDestroy(loomComm_t comm);
loomResult_t loomCommAbort(loomComm_t comm);
loomResult_t loomCommGetAsyncError(loomComm_t comm, loomResult_t* asyncError);
loomResult_t loomCommCount(const loomComm_t comm, int* count);
loomResult_t loomCommUserRank(const loomComm_t comm, int* rank);

/* As loomCommInitRankConfig, with nId unique ids, as ncclCommInitRankScalable: every rank
 * passes the same nId ids in the same order (NCCL spreads its rendezvous over them). Loom's
 * rendezvous is one root with a bounded cost per rank, so every rank meets at commIds[0], and
 * each process stops the roots of commIds[1..nId-1] that it started (loomGetUniqueId), so they
 * hold no port. nId must be >= 1. */
loomResult_t loomCommInitRankScalable(loomComm_t* newcomm, int nranks, int myrank, int nId,
                                      loomUniqueId* commIds, loomConfig_t* config);
/* The device comm is bound to (ncclCommCuDevice): the one current when it was made, or
 * devlist's entry for loomCommInitAll. A host communicator (no device runtime) has none:
 * loomInvalidUsage. */
loomResult_t loomCommDevice(const loomComm_t comm, int* device);

/* ---- Memory and registration ------------------------------------------------------------ */
/* size bytes that any Loom call accepts, as ncclMemAlloc: with the CUDA runtime, device memory
 * of the current device made with cuMemCreate and a POSIX file-descriptor handle type (so it
 * can be exported to another process); with the emulated runtime, its device memory; without
 * a device runtime, page-aligned host pages, already faulted in. Free with loomMemFree. size 0
 * is loomInvalidArgument; loomMemFree(NULL) does nothing; freeing a pointer loomMemAlloc did not
 * return, or freed already, is loomInvalidArgument. */
loomResult_t loomMemAlloc(void** ptr, size_t size);
loomResult_t loomMemFree(void* ptr);
/* Registers [buff, buff + size) with comm (ncclCommRegister) and returns a handle for
 * loomCommDeregister. Not collective. In this release a registration is checked (device memory
 * must be of comm's device and lie inside one mapped range where the runtime knows one) and
 * recorded; no call is faster for it yet (docs/devices.md). Deregister before freeing the
 * buffer; destroy drops what is left. Deregistering a handle that is not one of comm's live
 * registrations is loomInvalidArgument. */
loomResult_t loomCommRegister(const loomComm_t comm, void* buff, size_t size, void** handle);
loomResult_t loomCommDeregister(const loomComm_t comm, void* handle);

/* ---- NCCL compatibility ------------------------------------------------------------------ */
/* From now on this process also honours the NCCL_* spelling of the variables whose meaning
 * Loom shares (docs/nccl.md lists them); the LOOM_* spelling wins where both are set. Loom's
 * libnccl.so.2 calls it as it loads; a program that links libloom alone never reads NCCL_*
 * variables, so an NCCL environment left in place does not change what it does. */
loomResult_t loomHonourNcclVariables(void);
/* Reads LOOM_DEBUG and LOOM_DEBUG_SUBSYS again (ncclResetDebugInit): logging reads them once. */
loomResult_t loomResetDebugInit(void);
/* The device runtime of this process: "cuda", "emulated" or "none" (LOOM_DEVICE chooses it
 * once, at its first use). A static string. */
const char* loomDeviceRuntime(void);
/* Waits, up to LOOM_TIMEOUT_MS, for the work queued on an application's device stream: under
 * CUDA a cudaStream_t / CUstream, NULL meaning the legacy default stream. Without a runtime
 * that has such streams ("none", or "emulated", whose streams are its own) it is
 * loomInvalidUsage. */
loomResult_t loomDeviceStreamSynchronize(void* deviceStream);

/* ---- Streams: ordered host work queues -------------------------------------------------- */
/* Work enqueued on a stream runs in order on a background thread; Synchronize waits for it,
 * Query returns loomSuccess when idle or loomInProgress while work remains. An error of
 * stream work is reported by Synchronize and by loomCommGetAsyncError. */
loomResult_t loomStreamCreate(loomStream_t* stream);
loomResult_t loomStreamDestroy(loomStream_t stream);
loomResult_t loomStreamSynchronize(loomStream_t stream);
loomResult_t loomStreamQuery(loomStream_t stream);
/* Runs fn(userData) on the stream's thread once all work enqueued on it before has run, as
 * cudaLaunchHostFunc does (NULL stream: now, on the calling thread). It runs whether that work
 * succeeded or not: loomCommGetAsyncError tells. fn must not synchronize its own stream
 * (that returns loomInvalidUsage) and should be short, since the stream waits for it; it may
 * enqueue more work. Not allowed inside loomGroupStart/End (loomInvalidUsage). */
typedef void (*loomHostFn_t)(void* userData);
loomResult_t loomLaunchHostFunc(loomStream_t stream, loomHostFn_t fn, void* userData);

/* ---- Collectives ------------------------------------------------------------------------ */
loomResult_t loomAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                           loomStream_t stream);
/* recvbuff holds nranks*sendcount; in place when sendbuff == recvbuff + rank*sendcount. */
loomResult_t loomAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           loomDataType_t datatype, loomComm_t comm, loomStream_t stream);
/* sendbuff holds nranks*recvcount; in place when recvbuff == sendbuff + rank*recvcount. */
loomResult_t loomReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               loomDataType_t datatype, loomRedOp_t op, loomComm_t comm,
                               loomStream_t stream);
/* sendbuff is read on root only; recvbuff is written on every rank. */
loomResult_t loomBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           loomDataType_t datatype, int root, loomComm_t comm,
                           loomStream_t stream);
/* recvbuff is written on root only (may be NULL elsewhere). */
loomResult_t loomReduce(const void* sendbuff, void* recvbuff, size_t count,
                        loomDataType_t datatype, loomRedOp_t op, int root, loomComm_t comm,
                        loomStream_t stream);

/* Every rank sends count elements to every rank: block j of sendbuff (sendbuff + j*count)
 * goes to rank j, and block i of recvbuff receives rank i's block for this rank. No in-place
 * form (as nccl.h): the buffers must not overlap. */
loomResult_t loomAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          loomDataType_t datatype, loomComm_t comm, loomStream_t stream);
/* All-to-all with per-peer counts and displacements, in elements (MPI_Alltoallv's layout):
 * sendcounts[j] elements at sendbuff + sdispls[j] go to rank j; recvcounts[i] elements from
 * rank i land at recvbuff + rdispls[i]. sendcounts[j] on this rank must equal recvcounts[i]
 * on rank j for i = this rank. The arrays are copied before the call returns. */
loomResult_t loomAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           loomDataType_t datatype, loomComm_t comm, loomStream_t stream);
/* Every rank sends count elements to root, which places rank i's at recvbuff + i*count
 * (recvbuff is unused elsewhere, may be NULL). In place when sendbuff == recvbuff + root*count
 * on the root. */
loomResult_t loomGather(const void* sendbuff, void* recvbuff, size_t count,
                        loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream);
/* Root sends sendbuff + i*count to rank i (sendbuff is unused elsewhere, may be NULL); every
 * rank receives count elements. In place when recvbuff == sendbuff + root*count on the root. */
loomResult_t loomScatter(const void* sendbuff, void* recvbuff, size_t count,
                         loomDataType_t datatype, int root, loomComm_t comm, loomStream_t stream);
/* Returns (NULL stream) or completes on the stream once every rank has entered it. */
loomResult_t loomBarrier(loomComm_t comm, loomStream_t stream);

/* ---- Point-to-point ---------------------------------------------------------------------- */
/* Sends count elements to rank peer, which must post a loomRecv of the same count and
 * datatype from this rank. Messages between one pair of ranks match in issue order. Outside a
 * group a send completes (or its stream item does) when the peer has received it; sends and
 * receives that must progress together (every rank sends before it receives) go in a group. */
loomResult_t loomSend(const void* sendbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream);
loomResult_t loomRecv(void* recvbuff, size_t count, loomDataType_t datatype, int peer,
                      loomComm_t comm, loomStream_t stream);

/* ---- Reduction operators ----------------------------------------------------------------- */
/* A sum whose inputs are first multiplied by *scalar (of `datatype`), each rank's own scalar
 * multiplying its own input (ranks may pass different scalars), for collectives on comm with
 * that datatype only. The returned op is a value >= loomNumOps; destroy it with
 * loomRedOpDestroy once the last call using it has returned. */
loomResult_t loomRedOpCreatePreMulSum(loomRedOp_t* op, void* scalar, loomDataType_t datatype,
                                      loomScalarResidence_t residence, loomComm_t comm);
loomResult_t loomRedOpDestroy(loomRedOp_t op, loomComm_t comm);

/* ---- Groups ------------------------------------------------------------------------------ */
/* Start/End nest; everything issued inside the outermost pair runs as one deadlock-free unit
 * when the outermost End is called: per communicator its collectives in issue order, then all
 * of its sends and receives together (so every rank may send to all others before receiving).
 * With a stream the unit is enqueued on it when End returns; with the NULL stream End returns
 * when it is done. A call that fails its checks inside a group fails the whole group at End,
 * and nothing of it runs. Also drives several communicators from one thread.
 * Inits (loomCommInitRank, ...Config, ...Store, ...Scalable, loomCommSplit) may be grouped too,
 * as in NCCL, so one thread can make several ranks of one communicator: each returns its
 * handle at once and End connects them all together. With blocking configs End returns when
 * all are ready (or the first failure); with non-blocking ones it returns loomInProgress and
 * loomCommGetAsyncError tells when each is ready. A group may not mix inits with other calls,
 * nor blocking with non-blocking configs (loomInvalidUsage at End, and the inits fail). */
loomResult_t loomGroupStart(void);
loomResult_t loomGroupEnd(void);
/* Ends the outermost group without running any of its calls, as ncclGroupSimulateEnd does,
 * and sets *estimatedTime (microseconds) to an estimate of what the group would take. Loom has
 * no performance model yet: it sets -1 and returns loomInvalidUsage saying so; the group is
 * over either way, and none of its calls ran. Inside a nested group it only leaves that level. */
loomResult_t loomGroupSimulateEnd(float* estimatedTime);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_H_ */
