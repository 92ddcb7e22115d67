// SPDX-License-Identifier: Apache-2.0
// sendrecv_perf: nccl-tests' sendrecv benchmark on Loom: in one group each rank sends to
// rank + 1 and receives from rank - 1.
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kSendRecv, loom::perf::createLoomBackends);
}
