// SPDX-License-Identifier: Apache-2.0
// reduce_perf: nccl-tests' reduce benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kReduce, loom::perf::createLoomBackends);
}
