// SPDX-License-Identifier: Apache-2.0
// Command-line options of the perf tools, spelled and defaulted as nccl-tests spells them, so
// scripts written for all_reduce_perf & co. run unchanged against Loom.
#pragma once

#include <loom.h>

#include <cstddef>
#include <string>
#include <vector>

namespace loom::perf {

// How the per-rank times of one row become the printed time (-a, nccl-tests' --average).
enum class TimeAverage { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

struct Options {
  size_t minBytes = size_t{32} << 20;
  size_t maxBytes = size_t{32} << 20;
  size_t stepBytes = size_t{1} << 20;  // used when stepFactor <= 1 (nccl-tests: factor "disabled")
  size_t stepFactor = 1;
  int iters = 20;
  int aggIters = 1;     // -m: calls per timed iteration (Loom: issued as one group)
  int warmupIters = 1;  // -w: per size of the doubling warm-up sweep
  int check = 1;        // -c: checked runs per row (stops at the first wrong one); 0 = none
  std::vector<loomRedOp_t> ops{loomSum};
  std::vector<loomDataType_t> types{loomFloat32};
  bool allTypes = false;  // -d all: a backend without some type skips it instead of refusing
  bool allRoots = false;  // -r all (or -1, as nccl-tests spells it): every rank in turn
  int root = 0;
  TimeAverage average = TimeAverage::kMean;
  int blocking = 0;          // -z 1: a barrier after every call, timed (nccl-tests' blocking mode)
  int cycles = 1;            // -N: 0 = run until killed, as in nccl-tests
  int timeoutSeconds = 0;    // -T: 0 = library default
  int reportCpuTime = 0;     // -C: accepted; calls are blocking, so CPU time is the wall time
  int reportTimestamps = 0;  // -S 1: each row ends with the time it finished
  int parallelInit = 0;      // -p: accepted; init is as parallel as the launcher makes it
  std::string jsonPath;      // -J
  int threads = 1;           // -t: ranks as threads of this process
};

// Parses argv. On -h prints the help to stdout and exits 0; on --version prints
// "<toolName> (Loom) <version>" and exits 0, whatever else is given; on a bad option prints the
// reason and the help to stderr and exits 2 (as a getopt tool does).
Options parseOptions(int argc, char** argv, const char* toolName);

// "32M" -> 33554432: nccl-tests' size syntax (K/M/G are powers of 1024, either case).
// Returns false on anything else.
bool parseSize(const std::string& text, size_t* bytes);

// The sizes of one sweep, minBytes first, never past maxBytes.
std::vector<size_t> sweepSizes(const Options& options);

}  // namespace loom::perf
