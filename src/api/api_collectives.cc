// The collective entry points: check every argument, then run now, queue in a group, or
// enqueue on a stream.
#include <cstdint>
#include <cstring>

#include "base/datatype.h"
#include "api/api_internal.h"
#include "core/group.h"
#include "kernels/host/host_reduce.h"
#include "core/stream.h"

using namespace loom;

namespace {

// A C caller may pass any int as an enum; in C++ a value outside the enum's range is UB to
// even load. So the checks read the raw bits first and use the enum only once it is valid.
template <class Enum>
int rawValue(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

void checkType(int raw) {
  if (raw < 0 || raw >= loomNumTypes) throwArgument("invalid datatype " + std::to_string(raw));
  const auto type = static_cast<loomDataType_t>(raw);
  if (type == loomFloat8e4m3 || type == loomFloat8e5m2) {
    throwArgument("datatype " + std::to_string(type) +
                  " (fp8 e4m3/e5m2) is not supported by host collectives in this release");
  }
  if (!kernels::typeSupported(type)) throwArgument("invalid datatype " + std::to_string(raw));
}

void checkOp(int raw) {
  if (raw < loomSum || raw >= loomNumOps) throwArgument("invalid reduction op " + std::to_string(raw));
}

// count * elements-per-count-unit * typeSize must fit in size_t (and in a signed offset).
void checkCount(size_t count, size_t multiplier, loomDataType_t type) {
  const size_t limit = static_cast<size_t>(INT64_MAX) / typeSize(type) / multiplier;
  if (count > limit) {
    throwArgument("count " + std::to_string(count) + " of " + typeName(type) +
                  " overflows the addressable size");
  }
}

void dispatch(std::shared_ptr<Communicator> comm, loomStream_t stream, const CollectiveCall& call) {
  group::issue(group::PendingCall{std::move(comm), stream, call});
}

std::string where(const Communicator& comm) {
  return "rank " + std::to_string(comm.rank()) + ": ";
}

}  // namespace

extern "C" {

loomResult_t loomAllReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype,
                           loomRedOp_t op, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAllReduce", [&] {
    auto comm_ = api::checkedComm(comm);
    Communicator& impl = *comm_;
    checkType(rawValue(datatype));
    checkOp(rawValue(op));
    checkCount(count, 1, datatype);
    if (count > 0 && (sendbuff == nullptr || recvbuff == nullptr)) throwArgument(where(impl) + "sendbuff or recvbuff is NULL");
    dispatch(comm_, stream, CollectiveCall{algo::Collective::AllReduce, sendbuff, recvbuff, count, datatype, op, 0});
  });
}

loomResult_t loomAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, loomDataType_t datatype,
                           loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomAllGather", [&] {
    auto comm_ = api::checkedComm(comm);
    Communicator& impl = *comm_;
    checkType(rawValue(datatype));
    checkCount(sendcount, impl.size(), datatype);
    if (sendcount > 0 && (sendbuff == nullptr || recvbuff == nullptr)) throwArgument(where(impl) + "sendbuff or recvbuff is NULL");
    dispatch(comm_, stream, CollectiveCall{algo::Collective::AllGather, sendbuff, recvbuff, sendcount, datatype, loomSum, 0});
  });
}

loomResult_t loomReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, loomDataType_t datatype,
                               loomRedOp_t op, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomReduceScatter", [&] {
    auto comm_ = api::checkedComm(comm);
    Communicator& impl = *comm_;
    checkType(rawValue(datatype));
    checkOp(rawValue(op));
    checkCount(recvcount, impl.size(), datatype);
    if (recvcount > 0 && (sendbuff == nullptr || recvbuff == nullptr)) throwArgument(where(impl) + "sendbuff or recvbuff is NULL");
    dispatch(comm_, stream, CollectiveCall{algo::Collective::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0});
  });
}

loomResult_t loomBroadcast(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, int root,
                           loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomBroadcast", [&] {
    auto comm_ = api::checkedComm(comm);
    Communicator& impl = *comm_;
    checkType(rawValue(datatype));
    checkCount(count, 1, datatype);
    if (root < 0 || root >= impl.size()) throwArgument(where(impl) + "root " + std::to_string(root) + " is not a rank of this communicator (size " + std::to_string(impl.size()) + ")");
    if (count > 0 && recvbuff == nullptr) throwArgument(where(impl) + "recvbuff is NULL");
    if (count > 0 && impl.rank() == root && sendbuff == nullptr) throwArgument(where(impl) + "sendbuff is NULL on the root");
    dispatch(comm_, stream, CollectiveCall{algo::Collective::Broadcast, sendbuff, recvbuff, count, datatype, loomSum, root});
  });
}

loomResult_t loomReduce(const void* sendbuff, void* recvbuff, size_t count, loomDataType_t datatype, loomRedOp_t op,
                        int root, loomComm_t comm, loomStream_t stream) {
  return api::guarded("loomReduce", [&] {
    auto comm_ = api::checkedComm(comm);
    Communicator& impl = *comm_;
    checkType(rawValue(datatype));
    checkOp(rawValue(op));
    checkCount(count, 1, datatype);
    if (root < 0 || root >= impl.size()) throwArgument(where(impl) + "root " + std::to_string(root) + " is not a rank of this communicator (size " + std::to_string(impl.size()) + ")");
    if (count > 0 && sendbuff == nullptr) throwArgument(where(impl) + "sendbuff is NULL");
    if (count > 0 && impl.rank() == root && recvbuff == nullptr) throwArgument(where(impl) + "recvbuff is NULL on the root");
    dispatch(comm_, stream, CollectiveCall{algo::Collective::Reduce, sendbuff, recvbuff, count, datatype, op, root});
  });
}

loomResult_t loomGroupStart(void) {
  return api::guarded("loomGroupStart", [] { group::start(); });
}

loomResult_t loomGroupEnd(void) {
  return api::guarded("loomGroupEnd", [] { group::end(); });
}

}  // extern "C"
