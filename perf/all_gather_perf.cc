// SPDX-License-Identifier: Apache-2.0
// all_gather_perf: nccl-tests' all-gather benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllGather, loom::perf::createLoomBackends);
}
