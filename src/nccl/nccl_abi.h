/* SPDX-License-Identifier: Apache-2.0 */
/* Loom's own declaration of the NCCL 2.28 application binary interface: the types, values and
 * functions that a program compiled against NVIDIA's nccl.h expects from libnccl.so.2. Loom's
 * NCCL library (libnccl-loom.so, soname libnccl.so.2) is built from this header, never from the
 * toolkit's, so it builds where no CUDA toolkit is installed.
 *
 * What must match nccl.h bit for bit, and is checked against it by the test nccl_abi when the
 * toolkit is present: the size and field offsets of every struct, every enum value, the config
 * initializer's values, and the name and parameters of every function. Nothing else here is
 * NCCL's: the comments say what Loom does.
 *
 * Plain C, so C and C++ programs (and the ABI test) can include it. It declares cudaStream_t as
 * the CUDA runtime does (a pointer to the opaque struct CUstream_st), so no CUDA header is needed.
 */
#ifndef LOOM_NCCL_ABI_H_
#define LOOM_NCCL_ABI_H_

#include <limits.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release whose ABI this is: 2.28.9, whose version code is major * 10000 + minor * 100 +
 * patch (releases before 2.9 used * 1000 + * 100, which NCCL_VERSION still computes). */
#define LOOM_NCCL_ABI_MAJOR 2
#define LOOM_NCCL_ABI_MINOR 28
#define LOOM_NCCL_ABI_PATCH 9
#define LOOM_NCCL_ABI_CODE 22809
#define LOOM_NCCL_VERSION(major, minor, patch) \
  (((major) <= 2 && (minor) <= 8) ? (major) * 1000 + (minor) * 100 + (patch) : (major) * 10000 + (minor) * 100 + (patch))

#ifndef LOOM_NCCL_ABI_NO_CUDA_TYPES
/* The CUDA runtime's stream handle. A program's cuda_runtime.h declares the same type; define
 * LOOM_NCCL_ABI_NO_CUDA_TYPES where that header is included first. */
typedef struct CUstream_st* cudaStream_t;
#endif

/* Opaque handles. A Loom communicator handle is a number, never a pointer Loom dereferences. */
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;

/* 128 bytes that every rank of a communicator is given (ncclGetUniqueId on one rank). */
typedef struct {
  char internal[128];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* Marks a config field the caller left to the library. */
#define LOOM_NCCL_CONFIG_UNDEF_INT INT_MIN
#define LOOM_NCCL_CONFIG_MAGIC 0xcafebeefu
#define LOOM_NCCL_SIM_INFO_MAGIC 0x74685283u

/* ncclConfig_t as of 2.28 (version tag 22800 in NCCL's name for it). A program built against an
 * older nccl.h passes a shorter struct: `size` tells the library how much of it there is. */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

/* The values nccl.h's NCCL_CONFIG_INITIALIZER gives, field by field. */
#define LOOM_NCCL_CONFIG_INITIALIZER                                                              \
  {                                                                                               \
    sizeof(ncclConfig_t), LOOM_NCCL_CONFIG_MAGIC,                                                 \
        LOOM_NCCL_VERSION(LOOM_NCCL_ABI_MAJOR, LOOM_NCCL_ABI_MINOR, LOOM_NCCL_ABI_PATCH),         \
        LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT,       \
        LOOM_NCCL_CONFIG_UNDEF_INT, NULL, LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT, \
        NULL, LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT, \
        LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT, LOOM_NCCL_CONFIG_UNDEF_INT        \
  }

/* ncclGroupSimulateEnd's answer (version tag 22200). */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define LOOM_NCCL_SIM_INFO_INITIALIZER                                                                  \
  {                                                                                                     \
    sizeof(ncclSimInfo_t), LOOM_NCCL_SIM_INFO_MAGIC,                                                    \
        LOOM_NCCL_VERSION(LOOM_NCCL_ABI_MAJOR, LOOM_NCCL_ABI_MINOR, LOOM_NCCL_ABI_PATCH), -1.0f         \
  }

/* Built-in reduction operators; PreMulSum operators are made per communicator from
 * ncclNumOps upwards. The enum is as wide as an int (ncclMaxRedOp makes it so). */
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where a PreMulSum scalar lives: read while the call runs (device), or at creation (host). */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Every function of nccl.h 2.28. Each has a p-prefixed twin (the profiling interface): the
 * library defines the pncclX functions and makes each ncclX a weak alias of its twin, as
 * NVIDIA's library does, so a profiler that defines ncclX itself can call pncclX. */
#define LOOM_NCCL_DECLARE(ret, name, params) \
  ret name params;                           \
  ret p##name params;

LOOM_NCCL_DECLARE(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))
LOOM_NCCL_DECLARE(ncclResult_t, ncclMemFree, (void* ptr))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGetVersion, (int* version))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommSplit,
                  (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommShrink,
                  (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                   ncclConfig_t* config, int shrinkFlags))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommInitRankScalable,
                  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config))
LOOM_NCCL_DECLARE(const char*, ncclGetErrorString, (ncclResult_t result))
LOOM_NCCL_DECLARE(const char*, ncclGetLastError, (ncclComm_t comm))
LOOM_NCCL_DECLARE(void, ncclResetDebugInit, (void))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * asyncError))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))
LOOM_NCCL_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))
LOOM_NCCL_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum,
                  (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                   ncclComm_t comm))
LOOM_NCCL_DECLARE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))
LOOM_NCCL_DECLARE(ncclResult_t, ncclReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   int root, ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclBcast,
                  (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclBroadcast,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclAllReduce,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclReduceScatter,
                  (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclAllGather,
                  (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclAlltoAll,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGather,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclScatter,
                  (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclSend,
                  (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclRecv,
                  (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void))
LOOM_NCCL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))

#ifdef __cplusplus
}
#endif

#endif /* LOOM_NCCL_ABI_H_ */
