// SPDX-License-Identifier: Apache-2.0
// gloo_reduce_scatter_perf: nccl-tests' reduce-scatter benchmark on Gloo (gloo_backend.h).
#include "perf/peers/gloo_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kReduceScatter,
                              loom::perf::createGlooBackends, "gloo_");
}
