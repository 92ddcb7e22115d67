// SPDX-License-Identifier: Apache-2.0
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

// Page-aligned host buffer, touched once so page faults are not timed.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, const char* tool) {
    bytes = std::max<size_t>(bytes, 64);
    void* memory = nullptr;
    if (posix_memalign(&memory, 4096, bytes) != 0) {
      failFatally(tool, "cannot allocate " + std::to_string(bytes) + " bytes (-e too large?)");
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

// The sizes of the warm-up sweep: -b to -e, doubling (nccl-tests' TimeTest), -e included even
// when the doubling steps over it, so the largest buffers are warm too.
std::vector<size_t> warmupSizes(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t size = options.minBytes; size < options.maxBytes;) {
    sizes.push_back(size);
    const size_t next = size == 0 ? 1 : size * 2;
    if (next <= size) break;  // wrap-around
    size = next;
  }
  sizes.push_back(options.maxBytes);
  return sizes;
}

class RankRunner {
 public:
  RankRunner(Backend& backend, const Options& options, const Collective& collective,
             const std::string& tool)
      : backend_(backend),
        options_(options),
        collective_(collective),
        tool_(tool),
        rank_(backend.rank()),
        nranks_(backend.nranks()) {}

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
    std::vector<loomDataType_t> types;
    std::string skipped;
    for (loomDataType_t type : options_.types) {
      if (const char* why = backend_.unsupportedType(type)) {
        // -d all runs what the library has; a type asked for by name must not vanish silently.
        if (!options_.allTypes) {
          if (rank_ == 0)
            std::fprintf(stderr, "%s: -d %s: %s\n", tool_.c_str(), typeName(type), why);
          return 2;
        }
        skipped += std::string(skipped.empty() ? "" : ", ") + typeName(type);
      } else {
        types.push_back(type);
      }
    }
    // Both buffers at the largest size: no collective here needs more than maxBytes per buffer.
    HostBuffer send(options_.maxBytes, tool_.c_str()), recv(options_.maxBytes, tool_.c_str());
    Report report(tool_, backend_.identity(), options_, nranks_, rank_ == 0);
    std::string note =
        skipped.empty() ? "" : "-d all: " + skipped + " skipped (not offered by the library)";
    if (collective_.noInPlaceForm != nullptr) {
      note += std::string(note.empty() ? "" : "\n# ") +
              "in-place columns N/A: " + collective_.noInPlaceForm;
    }
    report.header(gatherPlaces(), note);
    const std::vector<loomRedOp_t> ops =
        collective_.hasOp ? options_.ops : std::vector<loomRedOp_t>{loomSum};
    const std::vector<size_t> sizes = sweepSizes(options_);
    for (loomDataType_t type : types) {
      for (loomRedOp_t op : ops) {
        for (int root : roots) {
          warmUp(type, op, root, send.data(), recv.data());
          for (int cycle = 0; options_.cycles == 0 || cycle < options_.cycles; ++cycle) {
            for (size_t bytes : sizes) {
              report.row(measureRow(bytes, type, op, root, send.data(), recv.data()));
            }
          }
        }
      }
    }
    const uint64_t wrong = report.finish();
    // Rank 0 has printed the footers: only now may a rank exit (non-zero), which makes the
    // launcher stop the others, rank 0 included.
    backend_.barrier();
    return wrong != 0 || report.failed() ? 1 : 0;
  }

 private:
  CallContext callFor(size_t bytes, loomDataType_t type, loomRedOp_t op, int root, bool inPlace,
                      void* send, void* recv) const {
    size_t count = bytes / typeSize(type);
    if (collective_.countPerRank) count /= static_cast<size_t>(nranks_);
    return CallContext{&backend_, rank_, nranks_, type, op, root, count, inPlace, send, recv};
  }

  void warmUp(loomDataType_t type, loomRedOp_t op, int root, void* send, void* recv) {
    if (options_.warmupIters == 0) return;
    for (size_t bytes : warmupSizes(options_)) {
      const CallContext call = callFor(bytes, type, op, root, false, send, recv);
      for (int i = 0; i < options_.warmupIters; ++i) runOnce(call);
    }
  }

  Row measureRow(size_t bytes, loomDataType_t type, loomRedOp_t op, int root, void* send,
                 void* recv) {
    CallContext call = callFor(bytes, type, op, root, false, send, recv);
    const size_t rowCount = collective_.countPerRank ? call.count * nranks_ : call.count;
    Row row;
    row.bytes = rowCount * typeSize(type);
    row.count = rowCount;
    row.type = type;
    row.op = collective_.hasOp ? opName(op) : "none";
    row.root = collective_.hasRoot ? root : -1;
    row.outOfPlace = measure(call, row.bytes);
    if (collective_.noInPlaceForm == nullptr) {
      call.inPlace = true;
      row.inPlace = measure(call, row.bytes);
    } else {
      row.inPlace.measured = false;
    }
    return row;
  }

  PlaceResult measure(const CallContext& call, size_t rowBytes) {
    const Pattern pattern(call.type, collective_.hasOp ? call.op : loomSum, nranks_);
    collective_.prepare(call, pattern);
    runOnce(call);  // nccl-tests' untimed "sync" call of every row
    backend_.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.iters; ++i) {
      if (options_.aggIters == 1) {
        runOnce(call);
        continue;
      }
      // -m: the calls of one iteration go out together; -z's barrier follows the whole group
      // (a barrier inside it would only be queued behind them).
      backend_.aggregateStart();
      for (int a = 0; a < options_.aggIters; ++a) collective_.run(call);
      backend_.aggregateEnd();
      if (options_.blocking) backend_.barrier();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        (double(options_.iters) * options_.aggIters);

    PlaceResult result;
    const double combined = combineTime(seconds);
    result.timeUs = combined * 1e6;
    result.algbw = combined > 0 ? double(rowBytes) / combined / 1e9 : 0.0;
    result.busbw = result.algbw * collective_.busFactor(nranks_);
    for (int c = 0; c < options_.check; ++c) {
      // Fresh input: the timed iterations (in place especially) have overwritten it.
      // LOOM_PERF_INJECT_FAULT=1 feeds rank 0 a wrong input, to prove the check catches it.
      collective_.prepare(call, injectFault_ ? pattern.skewedRank0() : pattern);
      runOnce(call);
      result.wrong = backend_.sumOverRanks(collective_.countWrong(call, pattern));
      result.checked = true;
      if (result.wrong != 0) break;
    }
    return result;
  }

  void runOnce(const CallContext& call) {
    collective_.run(call);
    if (options_.blocking) backend_.barrier();
  }

  // -a: every rank contributes its own time; all ranks learn the same combined value.
  double combineTime(double seconds) {
    switch (options_.average) {
      case TimeAverage::kRank0:
        return backend_.allReduceDouble(rank_ == 0 ? seconds : 0.0, Combine::kSum);
      case TimeAverage::kMean:
        return backend_.allReduceDouble(seconds, Combine::kSum) / nranks_;
      case TimeAverage::kMin:
        return backend_.allReduceDouble(seconds, Combine::kMin);
      case TimeAverage::kMax:
        return backend_.allReduceDouble(seconds, Combine::kMax);
    }
    return seconds;
  }

  std::vector<RankPlace> gatherPlaces() {
    RankPlace mine{};
    mine.rank = rank_;
    mine.pid = static_cast<int32_t>(getpid());
    gethostname(mine.host, sizeof mine.host - 1);
    return backend_.gatherPlaces(mine);
  }

  Backend& backend_;
  const Options& options_;
  const Collective& collective_;
  const std::string& tool_;
  const int rank_;
  const int nranks_;
  const bool injectFault_ = std::getenv("LOOM_PERF_INJECT_FAULT") != nullptr &&
                            std::string(std::getenv("LOOM_PERF_INJECT_FAULT")) == "1";
};

}  // namespace

int perfMain(int argc, char** argv, const Collective& collective, BackendFactory createBackends,
             const char* toolPrefix) {
  const std::string tool = std::string(toolPrefix) + collective.name + "_perf";
  const Options options = parseOptions(argc, argv, tool.c_str());
  // Finalized (destroyed) after every rank's thread has finished.
  std::vector<std::unique_ptr<Backend>> backends = createBackends(options, tool.c_str());
  if (backends.size() == 1) return RankRunner(*backends[0], options, collective, tool).run();

  // -t N: one thread drives each rank of this process.
  std::vector<int> status(backends.size(), 0);
  {
    std::vector<std::jthread> threads;
    for (size_t t = 0; t < backends.size(); ++t) {
      threads.emplace_back(
          [&, t] { status[t] = RankRunner(*backends[t], options, collective, tool).run(); });
    }
  }
  return status[0];
}

}  // namespace loom::perf
