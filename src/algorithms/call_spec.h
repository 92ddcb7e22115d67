// One call, one value. The API builds a CallSpec from the caller's arguments and validate()
// checks it once; from then on the same value travels through the group queue, the stream
// queue, the choice of schedule or direct engine, the executor and the cross-rank mismatch
// check (its descriptor() goes on the wire). Point-to-point, all-to-all(v), gather and
// scatter will add fields here, not new types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom.h"
#include "transport/transport.h"

namespace loom::algo {

enum class Collective : uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce };
const char* collectiveName(Collective collective);  // "allreduce", ...
bool hasOp(Collective collective);    // reduces with an op
bool hasRoot(Collective collective);  // has a root rank

struct CallSpec {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // As in the API call: sendcount for all-gather, recvcount for reduce-scatter, else count.
  size_t count = 0;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;    // collectives that reduce
  int root = 0;                // broadcast, reduce
  int peer = -1;               // point-to-point (none yet)
  loomComm_t comm = nullptr;   // the handle the caller passed
  loomStream_t stream = nullptr;  // NULL: complete on the calling thread
  // The call's place among its communicator's calls, 1, 2, ...: the same on every rank for the
  // same call. 0 until the call takes its turn (core/call_order.h).
  uint64_t sequence = 0;

  // Bytes one rank contributes: count elements, or nranks blocks of count for reduce-scatter.
  size_t inputBytes(int nranks) const;
  // Bytes of the whole message a ring moves: one block (all-reduce, broadcast, reduce) or nranks.
  size_t messageBytes(int nranks) const;
  // What every rank must agree on, as it travels on the wire (LOOM_CHECK).
  transport::CallDescriptor descriptor() const;
};

// Throws loomInvalidArgument naming what is wrong with a call on rank `rank` of `nranks`
// (datatype, op, count overflow, root, NULL buffers), in the order the API always checked them.
// The datatype and op are read as raw integers first: a C caller may pass any int.
void validate(const CallSpec& call, int rank, int nranks);

// "allreduce(count 4096, float32, sum)": a descriptor in error messages.
std::string describeDescriptor(const transport::CallDescriptor& descriptor);

}  // namespace loom::algo
