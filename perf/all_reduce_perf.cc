// SPDX-License-Identifier: Apache-2.0
// all_reduce_perf: nccl-tests' all-reduce benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllReduce, loom::perf::createLoomBackends);
}
