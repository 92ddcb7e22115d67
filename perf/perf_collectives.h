// SPDX-License-Identifier: Apache-2.0
// The measured collectives, as the driver sees them: which buffers each call reads and
// writes (NCCL's in-place conventions), how its input is written and its output checked, and
// its bus-bandwidth factor (nccl-tests' docs/PERFORMANCE.md). Shared by every backend, so Loom,
// MPI and Gloo run the same data through the same check.
#pragma once

#include "perf/perf_common.h"

namespace loom::perf {

extern const Collective kAllReduce;      // in place: sendbuff == recvbuff
extern const Collective kAllGather;      // in place: sendbuff == recvbuff + rank * count
extern const Collective kReduceScatter;  // in place: recvbuff == sendbuff + rank * count
extern const Collective kBroadcast;      // in place: sendbuff == recvbuff
extern const Collective kReduce;         // in place: sendbuff == recvbuff; only the root checks
extern const Collective kSendRecv;       // to rank + 1, from rank - 1; no in-place form
extern const Collective kAllToAll;       // count per peer; no in-place form
extern const Collective kGather;         // in place: sendbuff == recvbuff + rank * count
extern const Collective kScatter;        // in place: recvbuff == sendbuff + rank * count

}  // namespace loom::perf
