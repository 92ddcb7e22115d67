// SPDX-License-Identifier: Apache-2.0
// The shared driver of the perf tools (all_reduce_perf, all_gather_perf, ..., and the MPI and
// Gloo peers in perf/peers/): each tool is a Collective (perf_collectives.h) plus a backend
// (perf_backend.h): `return perfMain(argc, argv, kAllReduce, createLoomBackends);`.
//
// The method is nccl-tests' (src/common.cu). For each datatype x op x root, on every rank:
//   1. warm-up: -w calls out of place at every size from -b to -e, doubling;
//   2. per size, out of place then in place: write the input (perf_data.h), one untimed call,
//      barrier, time -n iterations of -m calls each: t = wall / (n * m);
//   3. combine the ranks' t as -a says (0: rank 0's, 1: mean, 2: min, 3: max over ranks);
//   4. -c N: up to N times, rewrite the input, poison the output, run once and count elements
//      that differ from the exact expected value; #wrong is the sum over ranks (stop at the
//      first non-zero).
// Buffers are allocated once at the largest size and touched before any timing. Calls are
// blocking, so wall time is completion time; -z 1 adds a barrier after every call (timed), as
// nccl-tests' blocking mode does. LOOM_PERF_INJECT_FAULT=1 makes rank 0's input of the checked
// run one too large (the tools' own test proves that the check counts it).
#pragma once

#include <loom.h>

#include <cstddef>

#include "perf/perf_backend.h"
#include "perf/perf_data.h"

namespace loom::perf {

// One call's arguments. `sendBase`/`recvBase` are the rank's two buffers (allocated once at the
// largest size); each collective picks from them the pointers its in-place convention needs.
struct CallContext {
  Backend* backend;
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
  const char* name;   // "all_reduce": the tool prints "all_reduce_perf" (with its prefix)
  bool hasOp;         // prints the op, runs -o's list; otherwise "none", one pass
  bool hasRoot;       // prints the root, runs -r's root(s); otherwise -1
  bool countPerRank;  // the call's count is per rank: rows show n * count elements (nccl-tests)
  double (*busFactor)(int nranks);  // busbw = algbw * busFactor
  // Writes this rank's input where the call will read it (and poisons what must be written).
  void (*prepare)(const CallContext& call, const Pattern& pattern);
  void (*run)(const CallContext& call);
  // Elements of this rank's output that differ from the exact result.
  size_t (*countWrong)(const CallContext& call, const Pattern& pattern);
  // nullptr when the call has an in-place form; otherwise why not, and the in-place columns
  // print N/A (nccl-tests times alltoall and sendrecv on one buffer but leaves them unchecked;
  // loom.h defines no such form, and Loom refuses an overlapping all-to-all).
  const char* noInPlaceForm;
};

// Parses options, creates the backend(s), runs the sweep, prints nccl-tests' table. `toolPrefix`
// names the peers ("mpi_" makes "mpi_all_reduce_perf"). Returns the process exit status: 0, 1
// when any element was wrong (or the JSON file could not be written), 2 for a bad request.
int perfMain(int argc, char** argv, const Collective& collective, BackendFactory createBackends,
             const char* toolPrefix = "");

}  // namespace loom::perf
