// SPDX-License-Identifier: Apache-2.0
// gather_perf: nccl-tests' gather benchmark on Loom.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kGather, loom::perf::createLoomBackends);
}
