// SPDX-License-Identifier: Apache-2.0
#include "perf/peers/nccl_backend.h"

#include <cstdlib>
#include <string>

#include "nccl/nccl_abi.h"
#include "perf/perf_options.h"

namespace loom::perf {
namespace {

// The datatypes and ops have NCCL's values in loom.h: the driver's enums pass as they are.
ncclDataType_t nccl(loomDataType_t type) { return static_cast<ncclDataType_t>(type); }
ncclRedOp_t nccl(loomRedOp_t op) { return static_cast<ncclRedOp_t>(op); }

int envInt(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : -1;
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(ncclComm_t comm, const char* tool) : comm_(comm), tool_(tool) {
    require(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    require(ncclCommCount(comm_, &nranks_), "ncclCommCount");
  }
  ~NcclBackend() override { require(ncclCommDestroy(comm_), "ncclCommDestroy"); }

  BackendIdentity identity() const override {
    int version = 0;
    require(ncclGetVersion(&version), "ncclGetVersion");
    const std::string text = "NCCL ABI " + std::to_string(version);
    return {"nccl", text, text + " (Loom's libnccl.so.2)", ""};
  }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  void barrier() override {
    int32_t token = 0;
    require(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, comm_, nullptr), "ncclAllReduce(barrier)");
  }
  double allReduceDouble(double value, Combine how) override {
    const ncclRedOp_t op = how == Combine::kMin ? ncclMin : how == Combine::kMax ? ncclMax : ncclSum;
    require(ncclAllReduce(&value, &value, 1, ncclFloat64, op, comm_, nullptr), "ncclAllReduce(time)");
    return value;
  }
  uint64_t sumOverRanks(uint64_t value) override {
    require(ncclAllReduce(&value, &value, 1, ncclUint64, ncclSum, comm_, nullptr), "ncclAllReduce(#wrong)");
    return value;
  }
  std::vector<RankPlace> gatherPlaces(const RankPlace& mine) override {
    std::vector<RankPlace> all(nranks_);
    require(ncclAllGather(&mine, all.data(), sizeof(RankPlace), ncclInt8, comm_, nullptr), "ncclAllGather(places)");
    return all;
  }

  void aggregateStart() override { require(ncclGroupStart(), "ncclGroupStart"); }
  void aggregateEnd() override { require(ncclGroupEnd(), "ncclGroupEnd"); }

  void allReduce(const void* send, void* recv, size_t count, loomDataType_t type, loomRedOp_t op) override {
    require(ncclAllReduce(send, recv, count, nccl(type), nccl(op), comm_, nullptr), "ncclAllReduce");
  }
  void allGather(const void* send, void* recv, size_t count, loomDataType_t type) override {
    require(ncclAllGather(send, recv, count, nccl(type), comm_, nullptr), "ncclAllGather");
  }
  void reduceScatter(const void* send, void* recv, size_t count, loomDataType_t type, loomRedOp_t op) override {
    require(ncclReduceScatter(send, recv, count, nccl(type), nccl(op), comm_, nullptr), "ncclReduceScatter");
  }
  void broadcast(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    require(ncclBroadcast(send, recv, count, nccl(type), root, comm_, nullptr), "ncclBroadcast");
  }
  void reduce(const void* send, void* recv, size_t count, loomDataType_t type, loomRedOp_t op, int root) override {
    require(ncclReduce(send, recv, count, nccl(type), nccl(op), root, comm_, nullptr), "ncclReduce");
  }
  void sendRecv(const void* send, void* recv, size_t count, loomDataType_t type, int sendPeer,
                int recvPeer) override {
    require(ncclGroupStart(), "ncclGroupStart");
    require(ncclSend(send, count, nccl(type), sendPeer, comm_, nullptr), "ncclSend");
    require(ncclRecv(recv, count, nccl(type), recvPeer, comm_, nullptr), "ncclRecv");
    require(ncclGroupEnd(), "ncclGroupEnd(send/recv)");
  }
  void allToAll(const void* send, void* recv, size_t count, loomDataType_t type) override {
    require(ncclAlltoAll(send, recv, count, nccl(type), comm_, nullptr), "ncclAlltoAll");
  }
  void gather(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    require(ncclGather(send, recv, count, nccl(type), root, comm_, nullptr), "ncclGather");
  }
  void scatter(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    require(ncclScatter(send, recv, count, nccl(type), root, comm_, nullptr), "ncclScatter");
  }

 private:
  void require(ncclResult_t result, const char* what) const {
    if (result == ncclSuccess) return;
    failFatally(tool_, std::string(what) + " failed: " + ncclGetErrorString(result) + ": " + ncclGetLastError(comm_));
  }

  ncclComm_t comm_;
  const char* tool_;
  int rank_ = 0;
  int nranks_ = 1;
};

[[noreturn]] void failInit(const char* tool, const char* what, ncclResult_t result) {
  failFatally(tool, std::string(what) + " failed: " + ncclGetErrorString(result) + ": " + ncclGetLastError(nullptr));
}

}  // namespace

std::vector<std::unique_ptr<Backend>> createNcclBackends(const Options& options, const char* tool) {
  std::vector<std::unique_ptr<Backend>> backends;
  const int rank = envInt("LOOM_RANK");
  const int nranks = envInt("LOOM_WORLD_SIZE");
  if (rank >= 0 && nranks > 0) {
    if (options.threads > 1) failUsage(tool, "-t cannot be combined with a launcher (one process per rank there)");
    ncclUniqueId id;
    if (const ncclResult_t result = ncclGetUniqueId(&id); result != ncclSuccess) failInit(tool, "ncclGetUniqueId", result);
    ncclComm_t comm = nullptr;
    if (const ncclResult_t result = ncclCommInitRank(&comm, nranks, id, rank); result != ncclSuccess) {
      failInit(tool, "ncclCommInitRank", result);
    }
    backends.push_back(std::make_unique<NcclBackend>(comm, tool));
    return backends;
  }
  std::vector<ncclComm_t> comms(options.threads, nullptr);
  if (const ncclResult_t result = ncclCommInitAll(comms.data(), options.threads, nullptr); result != ncclSuccess) {
    failInit(tool, "ncclCommInitAll", result);
  }
  for (ncclComm_t comm : comms) backends.push_back(std::make_unique<NcclBackend>(comm, tool));
  return backends;
}

}  // namespace loom::perf
