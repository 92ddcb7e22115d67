// SPDX-License-Identifier: Apache-2.0
// Communicators: unique ids, init in all its forms, split, shrink, teardown and queries.
#include "nccl/nccl_shim.h"

using namespace loom::nccl;

namespace {

// The config as Loom reads it, or null for none; false when the config was refused.
struct Config {
  loomConfig_t loom;
  loomConfig_t* pointer = nullptr;
};
ncclResult_t readConfig(ncclConfig_t* config, Config& out, const char* function) {
  if (config == nullptr) return ncclSuccess;
  const ncclResult_t read = toLoomConfig(config, &out.loom, function);
  if (read == ncclSuccess) out.pointer = &out.loom;
  return read;
}

loomUniqueId toLoom(const ncclUniqueId& id) {
  static_assert(sizeof(ncclUniqueId) == sizeof(loomUniqueId), "both ids are 128 bytes");
  loomUniqueId copy;
  __builtin_memcpy(&copy, &id, sizeof(copy));
  return copy;
}

}  // namespace

LOOM_NCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  // With NCCL_COMM_ID set, NCCL starts no root here: rank 0 of the init does, at that address.
  return forward(loomGetUniqueIdFlags(reinterpret_cast<loomUniqueId*>(uniqueId), LOOM_UNIQUE_ID_ROOT_AT_INIT));
}
LOOM_NCCL_WEAK_ALIAS(ncclGetUniqueId)

LOOM_NCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                     ncclConfig_t* config) {
  Config loomConfig;
  if (const ncclResult_t read = readConfig(config, loomConfig, "ncclCommInitRankConfig"); read != ncclSuccess) {
    return read;
  }
  return forward(loomCommInitRankConfig(reinterpret_cast<loomComm_t*>(comm), nranks, toLoom(commId), rank,
                                        loomConfig.pointer));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommInitRankConfig)

LOOM_NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return forward(loomCommInitRank(reinterpret_cast<loomComm_t*>(comm), nranks, toLoom(commId), rank));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommInitRank)

LOOM_NCCL_EXPORT ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                       ncclUniqueId* commIds, ncclConfig_t* config) {
  Config loomConfig;
  if (const ncclResult_t read = readConfig(config, loomConfig, "ncclCommInitRankScalable"); read != ncclSuccess) {
    return read;
  }
  return forward(loomCommInitRankScalable(reinterpret_cast<loomComm_t*>(newcomm), nranks, myrank, nId,
                                          reinterpret_cast<loomUniqueId*>(commIds), loomConfig.pointer));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommInitRankScalable)

LOOM_NCCL_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return forward(loomCommInitAll(reinterpret_cast<loomComm_t*>(comm), ndev, devlist));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommInitAll)

LOOM_NCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                            ncclConfig_t* config) {
  Config loomConfig;
  if (const ncclResult_t read = readConfig(config, loomConfig, "ncclCommSplit"); read != ncclSuccess) return read;
  return forward(loomCommSplit(toLoom(comm), color, key, reinterpret_cast<loomComm_t*>(newcomm), loomConfig.pointer));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommSplit)

LOOM_NCCL_EXPORT ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  Config loomConfig;
  if (const ncclResult_t read = readConfig(config, loomConfig, "ncclCommShrink"); read != ncclSuccess) return read;
  return forward(loomCommShrink(toLoom(comm), excludeRanksList, excludeRanksCount,
                                reinterpret_cast<loomComm_t*>(newcomm), loomConfig.pointer, shrinkFlags));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommShrink)

LOOM_NCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) { return forward(loomCommFinalize(toLoom(comm))); }
LOOM_NCCL_WEAK_ALIAS(ncclCommFinalize)

LOOM_NCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) { return forward(loomCommDestroy(toLoom(comm))); }
LOOM_NCCL_WEAK_ALIAS(ncclCommDestroy)

LOOM_NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) { return forward(loomCommAbort(toLoom(comm))); }
LOOM_NCCL_WEAK_ALIAS(ncclCommAbort)

LOOM_NCCL_EXPORT ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return forward(loomCommRevoke(toLoom(comm), revokeFlags));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommRevoke)

LOOM_NCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return forward(loomCommGetAsyncError(toLoom(comm), reinterpret_cast<loomResult_t*>(asyncError)));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommGetAsyncError)

LOOM_NCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  return forward(loomCommCount(toLoom(comm), count));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommCount)

LOOM_NCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  return forward(loomCommUserRank(toLoom(comm), rank));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommUserRank)

LOOM_NCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  return forward(loomCommDevice(toLoom(comm), device));
}
LOOM_NCCL_WEAK_ALIAS(ncclCommCuDevice)
