// SPDX-License-Identifier: Apache-2.0
// alltoall_perf: nccl-tests' all-to-all benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllToAll, loom::perf::createLoomBackends);
}
