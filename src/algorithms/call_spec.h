// SPDX-License-Identifier: Apache-2.0
// One call, one value. The API builds a CallSpec from the caller's arguments and validate()
// checks it once; from then on the same value travels through the group queue, the stream
// queue, the choice of schedule or direct engine, the executor and the cross-rank mismatch
// check (its descriptor() goes on the wire). Point-to-point, all-to-all(v), gather, scatter
// and barrier are fields and collective kinds here, not new types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "loom.h"
#include "transport/transport.h"

namespace loom::algo {

enum class Collective : uint8_t {
  AllReduce, AllGather, ReduceScatter, Broadcast, Reduce,
  AllToAll, AllToAllv, Gather, Scatter, Barrier,
  Send, Recv,  // point-to-point: run in batches (core/p2p_batch.h), not as collectives
};
const char* collectiveName(Collective collective);  // "allreduce", ...
// Inline: every call asks these several times on its way (validate, descriptor, the engines).
inline bool hasOp(Collective collective) {  // reduces with an op
  return collective == Collective::AllReduce || collective == Collective::ReduceScatter ||
         collective == Collective::Reduce;
}
inline bool hasRoot(Collective collective) {  // has a root rank
  return collective == Collective::Broadcast || collective == Collective::Reduce ||
         collective == Collective::Gather || collective == Collective::Scatter;
}
inline bool isPointToPoint(Collective collective) {  // Send or Recv
  return collective == Collective::Send || collective == Collective::Recv;
}

// loomAlltoAllv's per-peer counts and displacements, in elements, indexed by rank. Copied from
// the caller's arrays at the API: a queued call must not read memory the caller has freed.
struct VectorLayout {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
};

// A PreMulSum operator resolved by the API (op >= loomNumOps names one of the communicator's):
// inputs are multiplied by the scalar, then summed. The scalar is `bits` (residence
// HostImmediate: read at creation) or read from `memory` when the call runs (residence Device).
struct PreMulSum {
  bool active = false;
  const void* memory = nullptr;
  uint64_t bits = 0;  // the scalar's bytes, little-endian, typeSize(type) of them
};

struct CallSpec {
  Collective collective = Collective::AllReduce;
  // Which of this rank's buffers are device memory (kDeviceSend | kDeviceRecv | kDeviceScalar),
  // found once when the call is issued (core/buffer_domains.h); 0 (the host path) for most.
  // Beside `collective`, in what would be padding: the spec every call copies does not grow.
  uint8_t deviceBuffers = 0;
  static constexpr uint8_t kDeviceSend = 1, kDeviceRecv = 2, kDeviceScalar = 4;
  const void* send = nullptr;
  void* recv = nullptr;
  // As in the API call: sendcount for all-gather, recvcount for reduce-scatter, else count.
  size_t count = 0;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;    // collectives that reduce
  int root = 0;                // broadcast, reduce, gather, scatter
  int peer = -1;               // send, recv
  std::shared_ptr<const VectorLayout> layout;  // all-to-all-v only
  PreMulSum premul;            // op is a PreMulSum operator
  loomComm_t comm = nullptr;   // the handle the caller passed
  loomStream_t stream = nullptr;  // NULL: complete on the calling thread
  // The call's place among its communicator's calls, 1, 2, ...: the same on every rank for the
  // same call. 0 until the call takes its turn (core/call_order.h).
  uint64_t sequence = 0;

  // Bytes one rank contributes: count elements, or nranks blocks of count for reduce-scatter
  // and all-to-all (scatter: on the root; all-to-all-v: the sum of its send counts).
  size_t inputBytes(int nranks) const;
  // Bytes of the whole message a ring moves: one block (all-reduce, broadcast, reduce) or nranks.
  size_t messageBytes(int nranks) const;
  // What every rank must agree on, as it travels on the wire (LOOM_CHECK). A send and the
  // receive it matches have the same descriptor.
  // Inline: the direct engine builds it twice on every call (post and check).
  transport::CallDescriptor descriptor() const;
};

// The bytes a call reads from send and writes to recv on `rank`, counted from each pointer:
// 0 for a buffer the rank does not use (a non-root's recvbuff of reduce, ...). All-to-all-v:
// the furthest displacement + count. A validated call's extents fit in size_t.
struct BufferExtents {
  size_t send = 0, recv = 0;
};
BufferExtents bufferExtents(const CallSpec& call, int rank, int nranks);

// What must agree across ranks. The in-place flag may differ (it is each rank's own business).
// All-to-all-v counts differ by rank (each pair's sizes are checked by the transports); a
// send and its receive share the code of Send.
inline transport::CallDescriptor CallSpec::descriptor() const {
  transport::CallDescriptor descriptor{};
  descriptor.collective = static_cast<uint8_t>(collective == Collective::Recv ? Collective::Send : collective);
  descriptor.type = static_cast<uint8_t>(type);
  descriptor.op = hasOp(collective) && !premul.active ? static_cast<uint8_t>(op) : hasOp(collective) ? 0xff : 0;
  descriptor.root = hasRoot(collective) ? root : 0;
  descriptor.count = collective == Collective::AllToAllv || collective == Collective::Barrier ? 0 : count;
  return descriptor;
}

// Throws loomInvalidArgument naming what is wrong with a call on rank `rank` of `nranks`
// (datatype, op, count overflow, root, peer, NULL buffers, overlap), in the order the API always
// checked them.
// The datatype and op are read as raw integers first: a C caller may pass any int. A send or
// receive (a rank's exchange is mostly these) is checked inline with a few compares, type,
// count, peer, buffer, and what failed is said out of line (throwBadPeerOp), so the common path
// saves no registers for building messages; a collective is checked by validateCollective.
void validateCollective(const CallSpec& call, int rank, int nranks);
[[noreturn, gnu::noinline, gnu::cold]] void throwBadPeerOp(const CallSpec& call, int rank, int nranks);
inline void validate(const CallSpec& call, int rank, int nranks) {
  if (!isPointToPoint(call.collective)) {
    validateCollective(call, rank, nranks);
    return;
  }
  int type;
  std::memcpy(&type, &call.type, sizeof(type));  // raw: a C caller may pass any int
  const void* buffer = call.collective == Collective::Send ? call.send : call.recv;
  size_t bytes;
  const bool valid = type >= 0 && type < loomNumTypes &&
                     !__builtin_mul_overflow(call.count, typeSize(call.type), &bytes) &&
                     bytes <= static_cast<size_t>(INT64_MAX) && call.peer >= 0 && call.peer < nranks &&
                     (call.count == 0 || buffer != nullptr);
  if (!valid) [[unlikely]] throwBadPeerOp(call, rank, nranks);
}

// "allreduce(count 4096, float32, sum)": a descriptor in error messages.
std::string describeDescriptor(const transport::CallDescriptor& descriptor);

}  // namespace loom::algo
