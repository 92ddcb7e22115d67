// SPDX-License-Identifier: Apache-2.0
// The perf tools' Loom backend: the public API only (libloom), NULL stream, so every call
// completes before it returns.
#include <cstdlib>
#include <string>

#include "perf/perf_backend.h"
#include "perf/perf_options.h"

namespace loom::perf {
namespace {

bool launchedByLauncher() {
  for (const char* name : {"LOOM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

class LoomBackend final : public Backend {
 public:
  LoomBackend(loomComm_t comm, const char* tool) : comm_(comm), tool_(tool) {
    require(loomCommUserRank(comm_, &rank_), "loomCommUserRank");
    require(loomCommCount(comm_, &nranks_), "loomCommCount");
  }
  ~LoomBackend() override { require(loomCommDestroy(comm_), "loomCommDestroy"); }

  BackendIdentity identity() const override {
    const std::string version = std::to_string(LOOM_MAJOR) + "." + std::to_string(LOOM_MINOR) +
                                "." + std::to_string(LOOM_PATCH);
    return {"loom", "loom " + version, "Loom " + version, ""};
  }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }

  void barrier() override {
    int32_t token = 0;
    require(loomAllReduce(&token, &token, 1, loomInt32, loomSum, comm_, nullptr),
            "loomAllReduce(barrier)");
  }
  double allReduceDouble(double value, Combine how) override {
    const loomRedOp_t op = how == Combine::kMin   ? loomMin
                           : how == Combine::kMax ? loomMax
                                                  : loomSum;
    require(loomAllReduce(&value, &value, 1, loomFloat64, op, comm_, nullptr),
            "loomAllReduce(time)");
    return value;
  }
  uint64_t sumOverRanks(uint64_t value) override {
    require(loomAllReduce(&value, &value, 1, loomUint64, loomSum, comm_, nullptr),
            "loomAllReduce(#wrong)");
    return value;
  }
  std::vector<RankPlace> gatherPlaces(const RankPlace& mine) override {
    std::vector<RankPlace> all(nranks_);
    require(loomAllGather(&mine, all.data(), sizeof(RankPlace), loomInt8, comm_, nullptr),
            "loomAllGather(rank places)");
    return all;
  }

  void aggregateStart() override { require(loomGroupStart(), "loomGroupStart"); }
  void aggregateEnd() override { require(loomGroupEnd(), "loomGroupEnd"); }

  void allReduce(const void* send, void* recv, size_t count, loomDataType_t type,
                 loomRedOp_t op) override {
    require(loomAllReduce(send, recv, count, type, op, comm_, nullptr), "loomAllReduce");
  }
  void allGather(const void* send, void* recv, size_t count, loomDataType_t type) override {
    require(loomAllGather(send, recv, count, type, comm_, nullptr), "loomAllGather");
  }
  void reduceScatter(const void* send, void* recv, size_t count, loomDataType_t type,
                     loomRedOp_t op) override {
    require(loomReduceScatter(send, recv, count, type, op, comm_, nullptr), "loomReduceScatter");
  }
  void broadcast(const void* send, void* recv, size_t count, loomDataType_t type,
                 int root) override {
    require(loomBroadcast(send, recv, count, type, root, comm_, nullptr), "loomBroadcast");
  }
  void reduce(const void* send, void* recv, size_t count, loomDataType_t type, loomRedOp_t op,
              int root) override {
    require(loomReduce(send, recv, count, type, op, root, comm_, nullptr), "loomReduce");
  }
  // nccl-tests' sendrecv: the send and the receive in one group, so neither waits for the
  // other (every rank sends first). Under -m the driver's group encloses this one (groups nest).
  void sendRecv(const void* send, void* recv, size_t count, loomDataType_t type, int sendPeer,
                int recvPeer) override {
    require(loomGroupStart(), "loomGroupStart");
    require(loomSend(send, count, type, sendPeer, comm_, nullptr), "loomSend");
    require(loomRecv(recv, count, type, recvPeer, comm_, nullptr), "loomRecv");
    require(loomGroupEnd(), "loomGroupEnd(send/recv)");
  }
  void allToAll(const void* send, void* recv, size_t count, loomDataType_t type) override {
    require(loomAlltoAll(send, recv, count, type, comm_, nullptr), "loomAlltoAll");
  }
  void gather(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    require(loomGather(send, recv, count, type, root, comm_, nullptr), "loomGather");
  }
  void scatter(const void* send, void* recv, size_t count, loomDataType_t type, int root) override {
    require(loomScatter(send, recv, count, type, root, comm_, nullptr), "loomScatter");
  }

 private:
  void require(loomResult_t result, const char* what) const {
    if (result == loomSuccess) return;
    failFatally(tool_, std::string(what) + " failed: " + loomGetErrorString(result) + ": " +
                           loomGetLastError(comm_));
  }

  loomComm_t comm_;
  const char* tool_;
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace

std::vector<std::unique_ptr<Backend>> createLoomBackends(const Options& options, const char* tool) {
  if (options.timeoutSeconds > 0) {
    setenv("LOOM_TIMEOUT_MS", std::to_string(options.timeoutSeconds * 1000LL).c_str(), 1);
  }
  std::vector<std::unique_ptr<Backend>> backends;
  if (launchedByLauncher()) {
    if (options.threads > 1) {
      failUsage(tool, "-t " + std::to_string(options.threads) +
                          " cannot be combined with a launcher (one process per rank there)");
    }
    loomComm_t comm = nullptr;
    if (const loomResult_t result = loomCommInitFromEnv(&comm); result != loomSuccess) {
      failFatally(tool, std::string("loomCommInitFromEnv failed: ") + loomGetErrorString(result) +
                            ": " + loomGetLastError(nullptr));
    }
    backends.push_back(std::make_unique<LoomBackend>(comm, tool));
    return backends;
  }
  // -t N (or a plain start without a launcher: one rank): N ranks as threads of this process.
  std::vector<loomComm_t> comms(options.threads, nullptr);
  if (const loomResult_t result = loomCommInitAll(comms.data(), options.threads, nullptr);
      result != loomSuccess) {
    failFatally(tool, std::string("loomCommInitAll failed: ") + loomGetErrorString(result) + ": " +
                          loomGetLastError(nullptr));
  }
  for (loomComm_t comm : comms) backends.push_back(std::make_unique<LoomBackend>(comm, tool));
  return backends;
}

}  // namespace loom::perf
