// SPDX-License-Identifier: Apache-2.0
// The communication library a perf tool measures, behind one small interface, so that one driver
// (perf_common), one table (perf_report) and one data generator and checker (perf_data) serve
// Loom, MPI and Gloo alike: the numbers differ only by the library that moved the bytes.
//
// A Backend is one rank's handle: constructing it joins the job (init), destroying it leaves
// (finalize). Its collectives have NCCL's semantics and in-place conventions (all-gather in
// place: send == recv + rank * count; reduce-scatter in place: recv == send + rank * count);
// a library that lays data out differently adapts inside its backend and says so in notes().
// Every call is blocking: it returns when this rank's part is complete. A failing call ends
// the process with a message (exit status 3): a benchmark cannot go on with a broken
// communicator, and the launcher then stops the other ranks.
#pragma once

#include <loom.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::perf {

struct Options;

// Where one rank runs; gathered to rank 0 for the "# Using devices" block.
struct RankPlace {
  int32_t rank;
  int32_t pid;
  char host[56];
};
static_assert(sizeof(RankPlace) == 64, "gathered as 64 bytes");

// How the driver's own small all-reduces (times, #wrong) combine values.
enum class Combine { kSum, kMin, kMax };

struct BackendIdentity {
  std::string name;     // "loom", "mpi", "gloo": the "# Backend:" line and the JSON "backend"
  std::string library;  // the JSON "library": "loom 0.1.0", "Open MPI v4.1.4", "gloo 0.5.0"
  std::string banner;   // starts the header's summary line: "Loom 0.1.0", "Open MPI v4.1.4"
  std::string notes;    // how this backend maps NCCL semantics, "" when it needs no words
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual BackendIdentity identity() const = 0;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // nullptr when the library reduces and moves `type`; otherwise why not ("MPI has no ...").
  virtual const char* unsupportedType(loomDataType_t type) const {
    (void)type;
    return nullptr;
  }

  // The driver's synchronisation: not timed except under -z 1, as in nccl-tests.
  virtual void barrier() = 0;
  virtual double allReduceDouble(double value, Combine how) = 0;
  virtual uint64_t sumOverRanks(uint64_t value) = 0;
  virtual std::vector<RankPlace> gatherPlaces(const RankPlace& mine) = 0;

  // -m N: the N calls of one iteration are issued between these (Loom: one group).
  virtual void aggregateStart() {}
  virtual void aggregateEnd() {}

  // The measured calls. A backend without one of them is never paired with that collective
  // (the build decides which tools exist); reaching the default is a programming error.
  virtual void allReduce(const void* send, void* recv, size_t count, loomDataType_t type,
                         loomRedOp_t op);
  virtual void allGather(const void* send, void* recv, size_t count, loomDataType_t type);
  virtual void reduceScatter(const void* send, void* recv, size_t count, loomDataType_t type,
                             loomRedOp_t op);
  virtual void broadcast(const void* send, void* recv, size_t count, loomDataType_t type, int root);
  virtual void reduce(const void* send, void* recv, size_t count, loomDataType_t type,
                      loomRedOp_t op, int root);
  // Sends `count` elements to sendPeer and receives as many from recvPeer, both progressing
  // together (Loom: one group; MPI: MPI_Sendrecv). send and recv never overlap.
  virtual void sendRecv(const void* send, void* recv, size_t count, loomDataType_t type,
                        int sendPeer, int recvPeer);
  // `count` elements per peer: block j of send goes to rank j, block i of recv comes from
  // rank i. Never in place (loom.h and nccl.h define no in-place all-to-all).
  virtual void allToAll(const void* send, void* recv, size_t count, loomDataType_t type);
  // `count` elements per rank to the root, which stores rank i's at recv + i * count; in place
  // on the root: send == recv + root * count. recv is not read or written elsewhere.
  virtual void gather(const void* send, void* recv, size_t count, loomDataType_t type, int root);
  // The root sends send + i * count to rank i; every rank receives `count` elements; in place
  // on the root: recv == send + root * count. send is not read elsewhere.
  virtual void scatter(const void* send, void* recv, size_t count, loomDataType_t type, int root);

 protected:
  [[noreturn]] void notOffered(const char* collective) const;
};

// How a tool creates its backends: the ranks this process hosts, in rank order (one, or -t N).
// On a failure it prints the reason and exits (3; 2 for an option the library cannot honour).
using BackendFactory = std::vector<std::unique_ptr<Backend>> (*)(const Options& options,
                                                                 const char* tool);

// Loom's backend (perf_backend_loom.cc): loomCommInitFromEnv under a launcher (loomrun, mpirun,
// srun, torchrun), loomCommInitAll for -t N or a plain start.
std::vector<std::unique_ptr<Backend>> createLoomBackends(const Options& options, const char* tool);

// Ends the process after a library failure, flushing what was printed (exit status 3). _Exit:
// with -t, other threads are still inside collectives and must not see destructors run.
[[noreturn]] void failFatally(const char* tool, const std::string& message);
// Ends the process for a request this tool cannot honour (exit status 2, as a bad option).
[[noreturn]] void failUsage(const char* tool, const std::string& message);

}  // namespace loom::perf
