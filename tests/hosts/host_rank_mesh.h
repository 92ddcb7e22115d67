// SPDX-License-Identifier: Apache-2.0
// The rank-to-rank half of host_rank's check: all-to-all, all-to-all-v, gather, scatter,
// send/recv (a ring, and all pairs at once in one group) and a barrier, on int32 values that
// say who sent them and where they belong, so a message that crossed to the wrong rank or
// offset shows. Returns how many results were wrong (each printed as "FAIL <what>"); a call
// that fails throws std::runtime_error.
#pragma once

#include "loom.h"

namespace loom::test {

int checkMeshCollectives(loomComm_t comm, int rank, int n);

}  // namespace loom::test
