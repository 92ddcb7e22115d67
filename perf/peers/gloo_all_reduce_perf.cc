// SPDX-License-Identifier: Apache-2.0
// gloo_all_reduce_perf: nccl-tests' all-reduce benchmark on Gloo (gloo_backend.h).
#include "perf/peers/gloo_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kAllReduce, loom::perf::createGlooBackends,
                              "gloo_");
}
