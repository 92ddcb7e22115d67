// The shared driver of the perf tools (all_reduce_perf, all_gather_perf, ...): each tool is a
// Collective description plus `return loom::perf::perfMain(argc, argv, kMyCollective);`.
//
// Per row (size x datatype x op x root) the driver, on every rank:
//   1. writes the input (perf_data.h), runs the warm-up iterations,
//   2. barriers (a 1-element all-reduce), times `iters` back-to-back calls: t = wall / iters,
//   3. combines the ranks' t as -a says (0: rank 0's, 1: mean, 2: min, 3: max over ranks),
//   4. with -c 1, rewrites the input, poisons the output, runs once more and counts elements
//      that differ from the exact expected value; #wrong is the sum over ranks.
// out-of-place first, then in-place, as nccl-tests prints them. Calls are blocking (stream
// NULL), so wall time is completion time. LOOM_PERF_INJECT_FAULT=1 makes rank 0's input of the
// checked run one too large (the tools' own test proves that the check counts it).
#pragma once

#include <loom.h>

#include <cstddef>

#include "perf/perf_data.h"

namespace loom::perf {

// One call's arguments. `sendBase`/`recvBase` are the rank's two buffers (allocated once at the
// largest size); each collective picks from them the pointers its in-place convention needs.
struct CallContext {
  loomComm_t comm;
  int rank;
  int nranks;
  loomDataType_t type;
  loomRedOp_t op;  // loomSum for collectives without an op
  int root;        // 0 for collectives without a root
  size_t count;    // the call's count argument (per rank for all-gather / reduce-scatter)
  bool inPlace;
  void* sendBase;
  void* recvBase;

  size_t bytes(size_t elements) const { return elements * typeSize(type); }
  // base + elements of this datatype, as a byte address.
  static void* offset(void* base, size_t elements, size_t elementSize) {
    return static_cast<char*>(base) + elements * elementSize;
  }
};

struct Collective {
  const char* name;   // "all_reduce": the tool prints "all_reduce_perf"
  bool hasOp;         // prints the op, runs -o's list; otherwise "none", one pass
  bool hasRoot;       // prints the root, runs -r's root(s); otherwise -1
  bool countPerRank;  // the call's count is per rank: rows show n * count elements (nccl-tests)
  double (*busFactor)(int nranks);  // busbw = algbw * busFactor
  // Writes this rank's input where the call will read it (and poisons what must be written).
  void (*prepare)(const CallContext& call, const Pattern& pattern);
  loomResult_t (*run)(const CallContext& call);
  // Elements of this rank's output that differ from the exact result.
  size_t (*countWrong)(const CallContext& call, const Pattern& pattern);
};

// Parses options, creates the communicator(s), runs the sweep, prints nccl-tests' table.
// Returns the process exit status: 0, or 1 when any element was wrong.
int perfMain(int argc, char** argv, const Collective& collective);

}  // namespace loom::perf
