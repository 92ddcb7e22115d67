#include "perf/perf_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perf/perf_options.h"
#include "perf/perf_report.h"

namespace loom::perf {
namespace {

// A failed library call ends the process: a benchmark cannot go on with a broken communicator,
// and under loomrun the launcher then stops the other ranks. _Exit, because in -t mode other
// threads are still inside collectives and must not see static destructors run.
void require(loomResult_t result, const char* what, loomComm_t comm, const char* tool) {
  if (result == loomSuccess) return;
  std::fprintf(stderr, "%s: %s failed: %s: %s\n", tool, what, loomGetErrorString(result),
               loomGetLastError(comm));
  std::fflush(nullptr);
  std::_Exit(3);
}

// Page-aligned host buffer, touched once so page faults are not timed.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, const char* tool) {
    bytes = std::max<size_t>(bytes, 64);
    void* memory = nullptr;
    if (posix_memalign(&memory, 4096, bytes) != 0) {
      std::fprintf(stderr, "%s: cannot allocate %zu bytes (-e too large?)\n", tool, bytes);
      std::fflush(nullptr);
      std::_Exit(3);
    }
    memory_.reset(memory);
    std::memset(memory, 0, bytes);
  }
  void* data() const { return memory_.get(); }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> memory_;
};

bool launchedByLauncher() {
  for (const char* name : {"LOOM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

class RankRunner {
 public:
  RankRunner(loomComm_t comm, const Options& options, const Collective& collective)
      : comm_(comm),
        options_(options),
        collective_(collective),
        tool_(std::string(collective.name) + "_perf") {
    require(loomCommUserRank(comm, &rank_), "loomCommUserRank", comm, tool_.c_str());
    require(loomCommCount(comm, &nranks_), "loomCommCount", comm, tool_.c_str());
  }

  // Runs the whole sweep; returns the exit status (same on every rank).
  int run() {
    std::vector<int> roots{0};
    if (collective_.hasRoot) {
      roots.clear();
      if (options_.allRoots) {
        for (int r = 0; r < nranks_; ++r) roots.push_back(r);
      } else if (options_.root < nranks_) {
        roots.push_back(options_.root);
      } else {
        if (rank_ == 0) {
          std::fprintf(stderr, "%s: root %d is not a rank (%d ranks)\n", tool_.c_str(),
                       options_.root, nranks_);
        }
        return 2;
      }
    }
    // Both buffers at the largest size: no collective here needs more than maxBytes per buffer.
    HostBuffer send(options_.maxBytes, tool_.c_str()), recv(options_.maxBytes, tool_.c_str());
    Report report(collective_, options_, nranks_, rank_ == 0);
    report.header(gatherPlaces());
    const std::vector<loomRedOp_t> ops =
        collective_.hasOp ? options_.ops : std::vector<loomRedOp_t>{loomSum};
    const std::vector<size_t> sizes = sweepSizes(options_);
    for (int cycle = 0; options_.cycles == 0 || cycle < options_.cycles; ++cycle) {
      for (loomDataType_t type : options_.types) {
        for (loomRedOp_t op : ops) {
          for (int root : roots) {
            for (size_t bytes : sizes) {
              report.row(measureRow(bytes, type, op, root, send.data(), recv.data()));
            }
          }
        }
      }
    }
    const uint64_t wrong = report.finish();
    // Rank 0 has printed the footers: only now may a rank exit (non-zero), which makes loomrun
    // stop the others, rank 0 included.
    barrier();
    return wrong != 0 || report.failed() ? 1 : 0;
  }

 private:
  Row measureRow(size_t bytes, loomDataType_t type, loomRedOp_t op, int root, void* send,
                 void* recv) {
    const size_t elementSize = typeSize(type);
    size_t count = bytes / elementSize;
    if (collective_.countPerRank) count /= static_cast<size_t>(nranks_);
    const size_t rowCount = collective_.countPerRank ? count * nranks_ : count;

    Row row;
    row.bytes = rowCount * elementSize;
    row.count = rowCount;
    row.type = type;
    row.op = collective_.hasOp ? opName(op) : "none";
    row.root = collective_.hasRoot ? root : -1;
    CallContext call{comm_, rank_, nranks_, type, op, root, count, false, send, recv};
    row.outOfPlace = measure(call, row.bytes);
    call.inPlace = true;
    row.inPlace = measure(call, row.bytes);
    return row;
  }

  PlaceResult measure(const CallContext& call, size_t rowBytes) {
    const Pattern pattern(call.type, collective_.hasOp ? call.op : loomSum, nranks_);
    collective_.prepare(call, pattern);
    for (int i = 0; i < options_.warmupIters; ++i) runOnce(call);
    barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.iters; ++i) runOnce(call);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        options_.iters;

    PlaceResult result;
    const double combined = combineTime(seconds);
    result.timeUs = combined * 1e6;
    result.algbw = combined > 0 ? double(rowBytes) / combined / 1e9 : 0.0;
    result.busbw = result.algbw * collective_.busFactor(nranks_);
    if (options_.check) {
      // Fresh input: the timed iterations (in place especially) have overwritten it.
      // LOOM_PERF_INJECT_FAULT=1 feeds rank 0 a wrong input, to prove the check catches it.
      collective_.prepare(call, injectFault_ ? pattern.skewedRank0() : pattern);
      runOnce(call);
      uint64_t wrong = collective_.countWrong(call, pattern);
      require(loomAllReduce(&wrong, &wrong, 1, loomUint64, loomSum, comm_, nullptr),
              "loomAllReduce(#wrong)", comm_, tool_.c_str());
      result.wrong = wrong;
      result.checked = true;
    }
    return result;
  }

  void runOnce(const CallContext& call) {
    require(collective_.run(call), collective_.name, comm_, tool_.c_str());
  }

  void barrier() {
    int32_t token = 0;
    require(loomAllReduce(&token, &token, 1, loomInt32, loomSum, comm_, nullptr),
            "loomAllReduce(barrier)", comm_, tool_.c_str());
  }

  // -a: every rank contributes its own time; all ranks learn the same combined value.
  double combineTime(double seconds) {
    double value = seconds;
    loomRedOp_t op = loomSum;
    switch (options_.average) {
      case TimeAverage::kRank0:
        value = rank_ == 0 ? seconds : 0.0;
        break;
      case TimeAverage::kMean:
        break;
      case TimeAverage::kMin:
        op = loomMin;
        break;
      case TimeAverage::kMax:
        op = loomMax;
        break;
    }
    require(loomAllReduce(&value, &value, 1, loomFloat64, op, comm_, nullptr),
            "loomAllReduce(time)", comm_, tool_.c_str());
    return options_.average == TimeAverage::kMean ? value / nranks_ : value;
  }

  std::vector<RankPlace> gatherPlaces() {
    RankPlace mine{};
    mine.rank = rank_;
    mine.pid = static_cast<int32_t>(getpid());
    gethostname(mine.host, sizeof mine.host - 1);
    std::vector<RankPlace> all(nranks_);
    require(loomAllGather(&mine, all.data(), sizeof(RankPlace), loomInt8, comm_, nullptr),
            "loomAllGather(rank places)", comm_, tool_.c_str());
    return all;
  }

  loomComm_t comm_;
  const Options& options_;
  const Collective& collective_;
  std::string tool_;
  int rank_ = 0;
  int nranks_ = 1;
  const bool injectFault_ = std::getenv("LOOM_PERF_INJECT_FAULT") != nullptr &&
                            std::string(std::getenv("LOOM_PERF_INJECT_FAULT")) == "1";
};

}  // namespace

int perfMain(int argc, char** argv, const Collective& collective) {
  const std::string tool = std::string(collective.name) + "_perf";
  const Options options = parseOptions(argc, argv, tool.c_str());
  if (options.timeoutSeconds > 0) {
    setenv("LOOM_TIMEOUT_MS", std::to_string(options.timeoutSeconds * 1000LL).c_str(), 1);
  }

  if (options.threads > 1 || !launchedByLauncher()) {
    // -t N (or a plain start without a launcher: one rank): N ranks as threads of this process,
    // one thread driving each communicator.
    if (launchedByLauncher()) {
      std::fprintf(stderr,
                   "%s: -t %d cannot be combined with a launcher (one process per rank "
                   "there)\n",
                   tool.c_str(), options.threads);
      return 2;
    }
    std::vector<loomComm_t> comms(options.threads, nullptr);
    require(loomCommInitAll(comms.data(), options.threads, nullptr), "loomCommInitAll", nullptr,
            tool.c_str());
    std::vector<int> status(options.threads, 0);
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < options.threads; ++t) {
        threads.emplace_back(
            [&, t] { status[t] = RankRunner(comms[t], options, collective).run(); });
      }
    }
    for (loomComm_t comm : comms)
      require(loomCommDestroy(comm), "loomCommDestroy", comm, tool.c_str());
    return status[0];
  }

  loomComm_t comm = nullptr;
  require(loomCommInitFromEnv(&comm), "loomCommInitFromEnv", nullptr, tool.c_str());
  const int status = RankRunner(comm, options, collective).run();
  require(loomCommDestroy(comm), "loomCommDestroy", comm, tool.c_str());
  return status;
}

}  // namespace loom::perf
