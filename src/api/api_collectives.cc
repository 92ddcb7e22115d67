// SPDX-License-Identifier: Apache-2.0
// The collective and point-to-point entry points: each builds the call's descriptor (algorithms/call_spec.h) once
// from its arguments, checks it with the one validate(), and issues it: now, queued in a group,
// or enqueued on a stream.
#include <cstring>

#include "algorithms/call_spec.h"
#include "api/api_internal.h"
#include "api/red_op_table.h"
#include "base/error.h"
#include "core/group.h"

using namespace loom;

namespace {

// The datatype and op are copied as raw bits: a C caller may pass any int, which validate()
// reads as such before anything uses them as enums.
algo::CallSpec describe(algo::Collective collective, const void* sendbuff, void* recvbuff, size_t count,
                        const loomDataType_t& datatype, const loomRedOp_t& op, int root, loomComm_t comm,
                        loomStream_t stream) {
  algo::CallSpec call;
  call.collective = collective;
  call.send = sendbuff;
  call.recv = recvbuff;
  call.count = count;
  std::memcpy(&call.type, &datatype, sizeof(call.type));
  std::memcpy(&call.op, &op, sizeof(call.op));
  call.root = root;
  call.comm = comm;
  call.stream = stream;
  return call;
}

void issue(algo::CallSpec call) {
  // Inside a group, a call on the communicator of the call before it (a rank's sends and
  // receives of one exchange) takes no reference of its own: the group holds one.
  if (Communicator* pinned = group::pinned(); pinned != nullptr && api::namesPinnedComm(call.comm, pinned)) {
    std::shared_ptr<Stream> stream = api::checkedStream(call.stream);
    api::resolvePreMulSum(call, pinned->name());
    algo::validate(call, pinned->rank(), pinned->size());
    pinned->findDeviceBuffers(call);
    group::issuePinned(std::move(call), std::move(stream));
    return;
  }
  std::shared_ptr<Communicator> comm = api::checkedComm(call.comm);
  std::shared_ptr<Stream> stream = api::checkedStream(call.stream);
  api::resolvePreMulSum(call, comm->name());  // op >= loomNumOps: a PreMulSum operator (api_redop.cc)
  algo::validate(call, comm->rank(), comm->size());
  comm->findDeviceBuffers(call);  // which buffers are device memory (core/buffer_domains.h)
  group::issue(call, std::move(comm), std::move(stream));
}

constexpr loomRedOp_t kNoOp = loomSum;  // collectives that do not reduce
constexpr int kNoRoot = 0;
constexpr loomDataType_t kBarrierType = loomUint8;  // the barrier moves single bytes

}  // namespace

extern "C" {

loomResult_t loomAllReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype,
                           loomRedOp_t op, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAllReduce", [&] {
    issue(describe(algo::Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, kNoRoot, comm, stream));
  });
}

loomResult_t loomAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, loomDataType_t datatype,
                           loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAllGather", [&] {
    issue(describe(algo::Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, kNoOp, kNoRoot, comm,
                   stream));
  });
}

loomResult_t loomReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, loomDataType_t datatype,
                               loomRedOp_t op, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomReduceScatter", [&] {
    issue(describe(algo::Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, kNoRoot, comm,
                   stream));
  });
}

loomResult_t loomBroadcast(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, int root,
                           loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomBroadcast", [&] {
    issue(describe(algo::Collective::Broadcast, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream));
  });
}

loomResult_t loomReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, loomRedOp_t op,
                        int root, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomReduce", [&] {
    issue(describe(algo::Collective::Reduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream));
  });
}

loomResult_t loomAlltoAll(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype,
                          loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAlltoAll", [&] {
    issue(describe(algo::Collective::AllToAll, sendbuff, recvbuff, count, datatype, kNoOp, kNoRoot, comm, stream));
  });
}

loomResult_t loomAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                           const size_t recvcounts[], const size_t rdispls[], loomDataType_t datatype,
                           loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAlltoAllv", [&] {
    algo::CallSpec call =
        describe(algo::Collective::AllToAllv, sendbuff, recvbuff, 0, datatype, kNoOp, kNoRoot, comm, stream);
    // The arrays are copied now: a call queued in a group or on a stream must not read them later.
    std::shared_ptr<Communicator> communicator = api::checkedComm(comm);
    if (sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr || rdispls == nullptr) {
      throwArgument("rank " + std::to_string(communicator->rank()) +
                    ": alltoallv: sendcounts, sdispls, recvcounts and rdispls must not be NULL");
    }
    const size_t n = static_cast<size_t>(communicator->size());
    auto layout = std::make_shared<algo::VectorLayout>();
    layout->sendCounts.assign(sendcounts, sendcounts + n);
    layout->sendDispls.assign(sdispls, sdispls + n);
    layout->recvCounts.assign(recvcounts, recvcounts + n);
    layout->recvDispls.assign(rdispls, rdispls + n);
    call.layout = std::move(layout);
    issue(std::move(call));
  });
}

loomResult_t loomGather(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, int root,
                        loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomGather", [&] {
    issue(describe(algo::Collective::Gather, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream));
  });
}

loomResult_t loomScatter(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, int root,
                         loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomScatter", [&] {
    issue(describe(algo::Collective::Scatter, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream));
  });
}

loomResult_t loomBarrier(loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomBarrier", [&] {
    issue(describe(algo::Collective::Barrier, nullptr, nullptr, 0, kBarrierType, kNoOp, kNoRoot, comm, stream));
  });
}

loomResult_t loomSend(const void* sendbuff, size_t count, loomDataType_t datatype, int peer, loomComm_t comm,
                      loomStream_t stream) {
  return api::guarded("loomSend", [&] {
    algo::CallSpec call = describe(algo::Collective::Send, sendbuff, nullptr, count, datatype, kNoOp, kNoRoot, comm, stream);
    call.peer = peer;
    issue(std::move(call));
  });
}

loomResult_t loomRecv(void* recvbuff, size_t count, loomDataType_t datatype, int peer, loomComm_t comm,
                      loomStream_t stream) {
  return api::guarded("loomRecv", [&] {
    algo::CallSpec call = describe(algo::Collective::Recv, nullptr, recvbuff, count, datatype, kNoOp, kNoRoot, comm, stream);
    call.peer = peer;
    issue(std::move(call));
  });
}

loomResult_t loomGroupStart(void) {
  return api::guarded("loomGroupStart", [] { group::start(); });
}

loomResult_t loomGroupEnd(void) {
  loomResult_t state = loomSuccess;  // loomInProgress: non-blocking inits are still connecting
  const loomResult_t result = api::guarded("loomGroupEnd", [&state] { state = group::end(); });
  return result != loomSuccess ? result : state;
}

loomResult_t loomGroupSimulateEnd(float* estimatedTime) {
  return api::guarded("loomGroupSimulateEnd", [&] {
    group::endWithoutRunning();  // first: whatever else is wrong, the group is over
    if (estimatedTime == nullptr) throwArgument("estimatedTime is NULL");
    *estimatedTime = -1.0f;
    throwUsage("Loom has no performance model to estimate a group with yet; the group ended and none of its calls ran");
  });
}

}  // extern "C"
