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

LOOM_NCCL_EXPORT ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclAllReduce", loomAllReduce(sendbuff, recvbuff, count, toLoom(datatype), toLoom(op), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAllReduce)

LOOM_NCCL_EXPORT ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclAllGather", loomAllGather(sendbuff, recvbuff, sendcount, toLoom(datatype), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAllGather)

LOOM_NCCL_EXPORT ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclReduceScatter", loomReduceScatter(sendbuff, recvbuff, recvcount, toLoom(datatype), toLoom(op),
                                   loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclReduceScatter)

LOOM_NCCL_EXPORT ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                            int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclBroadcast", loomBroadcast(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclBroadcast)

// NCCL's legacy in-place broadcast: the same buffer is the root's source and everyone's target.
LOOM_NCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclBcast", loomBroadcast(buff, buff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclBcast)

LOOM_NCCL_EXPORT ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclReduce", loomReduce(sendbuff, recvbuff, count, toLoom(datatype), toLoom(op), root, loom::nccl::toLoom(comm),
                            nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclReduce)

LOOM_NCCL_EXPORT ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclAlltoAll", loomAlltoAll(sendbuff, recvbuff, count, toLoom(datatype), loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclAlltoAll)

LOOM_NCCL_EXPORT ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclGather", loomGather(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclGather)

LOOM_NCCL_EXPORT ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclScatter", loomScatter(sendbuff, recvbuff, count, toLoom(datatype), root, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclScatter)

LOOM_NCCL_EXPORT ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                       ncclComm_t comm, cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclSend", loomSend(sendbuff, count, toLoom(datatype), peer, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclSend)

LOOM_NCCL_EXPORT ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                       cudaStream_t stream) {
  LOOM_NCCL_CALL(stream, "ncclRecv", loomRecv(recvbuff, count, toLoom(datatype), peer, loom::nccl::toLoom(comm), nullptr));
}
LOOM_NCCL_WEAK_ALIAS(ncclRecv)

LOOM_NCCL_EXPORT ncclResult_t pncclGroupStart(void) {
  const ncclResult_t started = forward(loomGroupStart());
  if (started == ncclSuccess) ++groupDepth;
  return started;
}
LOOM_NCCL_WEAK_ALIAS(ncclGroupStart)

namespace {

// The outermost group ends after this library refused one of its calls: as when Loom refuses
// one, nothing of the group runs (Loom's group is ended without running) and End fails.
ncclResult_t endRefusedGroup(const char* function) {
  const ncclResult_t failure = groupFailure;
  groupFailure = ncclSuccess;
  float unused = 0;
  (void)loomGroupSimulateEnd(&unused);
  try {
    return refuse(failure, function, "a call in the group failed, so none of its calls ran: " + lastRefusal());
  } catch (...) {
    return refuseOutOfMemory(function);
  }
}

}  // namespace

LOOM_NCCL_EXPORT ncclResult_t pncclGroupEnd(void) {
  if (groupDepth == 0) return adoptLoomFailure(loomGroupEnd());  // Loom says there is no group
  --groupDepth;
  if (groupDepth == 0 && groupFailure != ncclSuccess) [[unlikely]] return endRefusedGroup("ncclGroupEnd");
  return forward(loomGroupEnd());
}
LOOM_NCCL_WEAK_ALIAS(ncclGroupEnd)

LOOM_NCCL_EXPORT ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo == nullptr) return pncclGroupEnd();  // as NCCL: a plain ncclGroupEnd
  // The group ends first, whatever else is wrong, and without running anything.
  if (groupDepth > 0) --groupDepth;
  if (groupDepth == 0) groupFailure = ncclSuccess;
  float estimate = -1.0f;
  const loomResult_t ended = loomGroupSimulateEnd(&estimate);
  if (simInfo->magic != LOOM_NCCL_SIM_INFO_MAGIC) {
    return refuse(ncclInvalidArgument, "ncclGroupSimulateEnd",
                  "ncclSimInfo_t has a bad magic: initialise it with NCCL_SIM_INFO_INITIALIZER (the group ended, "
                  "none of its calls ran)");
  }
  // Loom has no performance model to estimate a group with: estimatedTime stays unknown (-1)
  // and the result says so (ncclInvalidUsage, with Loom's message).
  simInfo->estimatedTime = estimate;
  return adoptLoomFailure(ended);
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
