// SPDX-License-Identifier: Apache-2.0
// reduce_scatter_perf: nccl-tests' reduce-scatter benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kReduceScatter,
                              loom::perf::createLoomBackends);
}
