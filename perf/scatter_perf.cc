// SPDX-License-Identifier: Apache-2.0
// scatter_perf: nccl-tests' scatter benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kScatter, loom::perf::createLoomBackends);
}
