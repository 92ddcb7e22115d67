// SPDX-License-Identifier: Apache-2.0
#include "perf/peers/mpi_backend.h"

#include <mpi.h>

#include <climits>
#include <cstring>
#include <string>

#include "perf/perf_data.h"
#include "perf/perf_options.h"

namespace loom::perf {
namespace {

MPI_Datatype mpiType(loomDataType_t type) {
  switch (type) {
    case loomInt8:
      return MPI_INT8_T;
    case loomUint8:
      return MPI_UINT8_T;
    case loomInt32:
      return MPI_INT32_T;
    case loomUint32:
      return MPI_UINT32_T;
    case loomInt64:
      return MPI_INT64_T;
    case loomUint64:
      return MPI_UINT64_T;
    case loomFloat32:
      return MPI_FLOAT;
    case loomFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

// avg runs as MPI_SUM; the caller divides afterwards.
MPI_Op mpiOp(loomRedOp_t op) {
  switch (op) {
    case loomProd:
      return MPI_PROD;
    case loomMax:
      return MPI_MAX;
    case loomMin:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

// "Open MPI v4.1.4, package: ..., ident: ..." -> "Open MPI v4.1.4".
std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  version = version.substr(0, version.find_first_of(",\n"));
  return version.empty() ? "MPI" : version;
}

// The tag of the benchmark's own messages (the driver's synchronisation uses collectives only).
constexpr int kSendRecvTag = 15;

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const char* tool) : tool_(tool) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) require(MPI_Init(nullptr, nullptr), "MPI_Init");
    // Errors come back as codes, so a failure names the call instead of aborting silently.
    require(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    require(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    require(MPI_Comm_size(MPI_COMM_WORLD, &nranks_), "MPI_Comm_size");
  }
  ~MpiBackend() override { require(MPI_Finalize(), "MPI_Finalize"); }

  BackendIdentity identity() const override {
    const std::string library = libraryVersion();
    return {"mpi", library, library,
            "avg = MPI_SUM then a division pass (timed); in-place reduce-scatter moves the "
            "rank's block from the buffer's start to sendbuff + rank * count (timed)"};
  }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const char* unsupportedType(loomDataType_t type) const override {
    return mpiType(type) == MPI_DATATYPE_NULL ? "MPI has no half or bfloat16 datatype" : nullptr;
  }

  void barrier() override { require(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  double allReduceDouble(double value, Combine how) override {
    const MPI_Op op = how == Combine::kMin ? MPI_MIN : how == Combine::kMax ? MPI_MAX : MPI_SUM;
    require(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, op, MPI_COMM_WORLD),
            "MPI_Allreduce(time)");
    return value;
  }
  uint64_t sumOverRanks(uint64_t value) override {
    require(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce(#wrong)");
    return value;
  }
  std::vector<RankPlace> gatherPlaces(const RankPlace& mine) override {
    std::vector<RankPlace> all(nranks_);
    require(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                          MPI_COMM_WORLD),
            "MPI_Allgather(rank places)");
    return all;
  }

  void allReduce(const void* send, void* recv, size_t count, loomDataType_t type,
                 loomRedOp_t op) override {
    const void* input = send == recv ? MPI_IN_PLACE : send;
    require(MPI_Allreduce(input, recv, intCount(count), mpiType(type), mpiOp(op), MPI_COMM_WORLD),
            "MPI_Allreduce");
    if (op == loomAvg) divideInPlace(recv, count, type, nranks_);
  }

  void allGather(const void* send, void* recv, size_t count, loomDataType_t type) override {
    const MPI_Datatype datatype = mpiType(type);
    const bool inPlace = send == byteOffset(recv, rank_ * count * typeSize(type));
    // In place, MPI reads the rank's block where NCCL puts it: recvbuff + rank * count.
    require(inPlace ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, intCount(count),
                                    datatype, MPI_COMM_WORLD)
                    : MPI_Allgather(send, intCount(count), datatype, recv, intCount(count),
                                    datatype, MPI_COMM_WORLD),
            "MPI_Allgather");
  }

  void reduceScatter(const void* send, void* recv, size_t count, loomDataType_t type,
                     loomRedOp_t op) override {
    const size_t blockBytes = count * typeSize(type);
    const bool inPlace = recv == byteOffset(const_cast<void*>(send), rank_ * blockBytes);
    void* result = inPlace ? const_cast<void*>(send) : recv;
    require(MPI_Reduce_scatter_block(inPlace ? MPI_IN_PLACE : send, result, intCount(count),
                                     mpiType(type), mpiOp(op), MPI_COMM_WORLD),
            "MPI_Reduce_scatter_block");
    if (inPlace && result != recv) std::memmove(recv, result, blockBytes);
    if (op == loomAvg) divideInPlace(recv, count, type, nranks_);
  }

  void sendRecv(const void* send, void* recv, size_t count, loomDataType_t type, int sendPeer,
                int recvPeer) override {
    const MPI_Datatype datatype = mpiType(type);
    require(
        MPI_Sendrecv(send, intCount(count), datatype, sendPeer, kSendRecvTag, recv, intCount(count),
                     datatype, recvPeer, kSendRecvTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  }

  void allToAll(const void* send, void* recv, size_t count, loomDataType_t type) override {
    const MPI_Datatype datatype = mpiType(type);
    require(MPI_Alltoall(send, intCount(count), datatype, recv, intCount(count), datatype,
                         MPI_COMM_WORLD),
            "MPI_Alltoall");
  }

  // In place on the root, MPI takes the root's block from recvbuff + root * count, where
  // NCCL's in-place form has it. Elsewhere recvbuff is ignored, as in NCCL.
  void gather(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    const MPI_Datatype datatype = mpiType(type);
    const bool inPlace =
        rank_ == root && send == byteOffset(recv, size_t(root) * count * typeSize(type));
    require(inPlace ? MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, intCount(count),
                                 datatype, root, MPI_COMM_WORLD)
                    : MPI_Gather(send, intCount(count), datatype, recv, intCount(count), datatype,
                                 root, MPI_COMM_WORLD),
            "MPI_Gather");
  }

  // In place on the root, MPI leaves the root's block in sendbuff + root * count, which is
  // NCCL's in-place recvbuff. Elsewhere sendbuff is ignored, as in NCCL.
  void scatter(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    const MPI_Datatype datatype = mpiType(type);
    const bool inPlace = rank_ == root && recv == byteOffset(const_cast<void*>(send),
                                                             size_t(root) * count * typeSize(type));
    require(MPI_Scatter(send, intCount(count), datatype, inPlace ? MPI_IN_PLACE : recv,
                        intCount(count), datatype, root, MPI_COMM_WORLD),
            "MPI_Scatter");
  }

 private:
  static void* byteOffset(void* base, size_t bytes) { return static_cast<char*>(base) + bytes; }

  int intCount(size_t count) const {
    if (count > size_t{INT_MAX}) {
      failFatally(tool_, "count " + std::to_string(count) + " exceeds MPI's int count");
    }
    return static_cast<int>(count);
  }

  void require(int code, const char* what) const {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    MPI_Error_string(code, text, &length);
    failFatally(tool_, std::string(what) + " failed: " + std::string(text, size_t(length)));
  }

  const char* tool_;
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace

std::vector<std::unique_ptr<Backend>> createMpiBackends(const Options& options, const char* tool) {
  if (options.threads > 1) {
    failUsage(tool, "-t " + std::to_string(options.threads) +
                        ": MPI ranks are processes; start them with mpirun -np N");
  }
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::make_unique<MpiBackend>(tool));
  return backends;
}

}  // namespace loom::perf
