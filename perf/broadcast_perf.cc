// SPDX-License-Identifier: Apache-2.0
// broadcast_perf: nccl-tests' broadcast benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kBroadcast, loom::perf::createLoomBackends);
}
