// SPDX-License-Identifier: Apache-2.0
// nccl_sendrecv_perf: nccl-tests' sendrecv benchmark through NCCL's API (nccl_backend.h).
#include "perf/peers/nccl_backend.h"
#include "perf/perf_collectives.h"

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kSendRecv, loom::perf::createNcclBackends, "nccl_");
}
