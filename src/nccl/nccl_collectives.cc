// SPDX-License-Identifier: Apache-2.0
// Collectives, point-to-point, groups and reduction operators: each call settles its stream
// (nccl_shim.h) and goes to Loom's function of the same meaning with its arguments as they
// are. The values of datatypes, ops and results are NCCL's in both APIs (loom.h says so, and
// the test nccl_abi checks it), so nothing is converted: the cost over libloom is one call.
#include "nccl/nccl_shim.h"

using namespace loom::nccl;

namespace {

loomDataType_t toLoom(ncclDataType_t type) { return static_cast<loomDataType_t>(type); }
loomRedOp_t toLoom(ncclRedOp_t op) { return static_cast<loomRedOp_t>(op); }

}  // namespace

// A NULL stream's call completes before it returns (Loom's NULL stream is the calling thread).
#define LOOM_NCCL_SETTLE(stream, function)                                               \
  if (const ncclResult_t settled = settleStream(stream, function); settled != ncclSuccess) \
  return settled

LOOM_NCCL_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclAllReduce");
  return forward(loomAllReduce(sendbuff, recvbuff, count, toLoom(datatype), toLoom(op), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAllReduce)

LOOM_NCCL_EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclAllGather");
  return forward(loomAllGather(sendbuff, recvbuff, sendcount, toLoom(datatype), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAllGather)

LOOM_NCCL_EXPORT ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclReduceScatter");
  return forward(loomReduceScatter(sendbuff, recvbuff, recvcount, toLoom(datatype), toLoom(op),
                                   loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclReduceScatter)

LOOM_NCCL_EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                            int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclBroadcast");
  return forward(loomBroadcast(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclBroadcast)

// NCCL's legacy in-place broadcast: the same buffer is the root's source and everyone's target.
LOOM_NCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclBcast");
  return forward(loomBroadcast(buff, buff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclBcast)

LOOM_NCCL_EXPORT ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclReduce");
  return forward(loomReduce(sendbuff, recvbuff, count, toLoom(datatype), toLoom(op), root, loom::nccl::toLoom(comm),
                            nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclReduce)

LOOM_NCCL_EXPORT ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclAlltoAll");
  return forward(loomAlltoAll(sendbuff, recvbuff, count, toLoom(datatype), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAlltoAll)

LOOM_NCCL_EXPORT ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclGather");
  return forward(loomGather(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclGather)

LOOM_NCCL_EXPORT ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclScatter");
  return forward(loomScatter(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclScatter)

LOOM_NCCL_EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                       ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclSend");
  return forward(loomSend(sendbuff, count, toLoom(datatype), peer, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclSend)

LOOM_NCCL_EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                       cudaStream_t stream) {
  LOOM_NCCL_SETTLE(stream, "ncclRecv");
  return forward(loomRecv(recvbuff, count, toLoom(datatype), peer, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclRecv)

LOOM_NCCL_EXPORT ncclResult_t pncclGroupStart(void) { return forward(loomGroupStart()); }
LOOM_NCCL_WEAK_ALIAS(ncclGroupStart)

LOOM_NCCL_EXPORT ncclResult_t pncclGroupEnd(void) { return forward(loomGroupEnd()); }
LOOM_NCCL_WEAK_ALIAS(ncclGroupEnd)

LOOM_NCCL_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo == nullptr) return refuse(ncclInvalidArgument, "ncclGroupSimulateEnd", "simInfo is NULL");
  if (simInfo->magic != LOOM_NCCL_SIM_INFO_MAGIC) {
    return refuse(ncclInvalidArgument, "ncclGroupSimulateEnd",
                  "ncclSimInfo_t has a bad magic: initialise it with NCCL_SIM_INFO_INITIALIZER");
  }
  // Loom has no performance model to estimate a group with; the group ends (as NCCL's simulated
  // one does, without running anything) and the caller is told so.
  return forward(loomGroupSimulateEnd(&simInfo->estimatedTime));
}
LOOM_NCCL_WEAK_ALIAS(ncclGroupSimulateEnd)

LOOM_NCCL_EXPORT ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  return forward(loomRedOpCreatePreMulSum(reinterpret_cast<loomRedOp_t*>(op), scalar, toLoom(datatype),
                                          static_cast<loomScalarResidence_t>(residence), loom::nccl::toLoom(comm)));
}
LOOM_NCCL_WEAK_ALIAS(ncclRedOpCreatePreMulSum)

LOOM_NCCL_EXPORT ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return forward(loomRedOpDestroy(toLoom(op), loom::nccl::toLoom(comm)));
}
LOOM_NCCL_WEAK_ALIAS(ncclRedOpDestroy)
