// SPDX-License-Identifier: Apache-2.0
#include "algorithms/call_spec.h"

#include <algorithm>
#include <cstring>

#include "base/datatype.h"
#include "base/error.h"
#include "kernels/host/host_reduce.h"

namespace loom::algo {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "allreduce";
    case Collective::AllGather: return "allgather";
    case Collective::ReduceScatter: return "reducescatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllToAll: return "alltoall";
    case Collective::AllToAllv: return "alltoallv";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
    case Collective::Barrier: return "barrier";
    case Collective::Send: return "send";
    case Collective::Recv: return "recv";
  }
  return "?";
}

namespace {
size_t sum(const std::vector<size_t>& values) {
  size_t total = 0;
  for (size_t value : values) total += value;
  return total;
}
}  // namespace

size_t CallSpec::inputBytes(int nranks) const {
  const size_t bytes = count * typeSize(type);
  switch (collective) {
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Scatter: return bytes * static_cast<size_t>(nranks);
    case Collective::AllToAllv: return layout ? sum(layout->sendCounts) * typeSize(type) : 0;
    case Collective::Barrier: return 0;
    default: return bytes;
  }
}

size_t CallSpec::messageBytes(int nranks) const {
  const bool oneBlock = collective == Collective::AllReduce || collective == Collective::Broadcast ||
                        collective == Collective::Reduce || isPointToPoint(collective);
  if (collective == Collective::AllToAllv) return inputBytes(nranks);
  if (collective == Collective::Barrier) return 0;
  return count * typeSize(type) * (oneBlock ? 1 : static_cast<size_t>(nranks));
}

std::string describeDescriptor(const transport::CallDescriptor& d) {
  const auto collective = static_cast<Collective>(d.collective);
  const char* name = collective == Collective::Send ? "send/recv" : collectiveName(collective);
  std::string text = std::string(name) + "(count " + std::to_string(d.count) + ", " +
                     typeName(static_cast<loomDataType_t>(d.type));
  if (hasOp(collective)) text += d.op == 0xff ? std::string(", premulsum") : std::string(", ") + opName(static_cast<loomRedOp_t>(d.op));
  if (hasRoot(collective)) text += ", root " + std::to_string(d.root);
  return text + ")";
}

namespace {

// In C++ an enum holding a value outside its enumerators is undefined behaviour to load, and a C
// caller may pass any int: read the raw bits, and use the enum only once it is valid.
template <class Enum>
int rawValue(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

void checkType(int raw, bool reduces) {
  if (raw < 0 || raw >= loomNumTypes) throwArgument("invalid datatype " + std::to_string(raw));
  if (reduces && !kernels::typeSupported(static_cast<loomDataType_t>(raw))) {
    throwArgument("invalid datatype " + std::to_string(raw));
  }
}

void checkOp(int raw, const PreMulSum& premul) {
  if (premul.active) return;  // the API resolved it against the communicator's operators
  if (raw < loomSum || raw >= loomNumOps) throwArgument("invalid reduction op " + std::to_string(raw));
}

// Elements per count unit a rank's largest buffer holds: nranks blocks for the collectives that
// move one block per rank.
size_t blocksPerCount(Collective collective, int nranks) {
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return static_cast<size_t>(nranks);
    default: return 1;
  }
}

// count * elements-per-count-unit * typeSize must fit in size_t (and in a signed offset). A
// multiplication with an overflow check, not the division by both (two divisions cost more
// than the rest of an 8 B call's checks).
void checkCount(size_t count, size_t multiplier, loomDataType_t type) {
  size_t bytes;
  if (__builtin_mul_overflow(count, multiplier * typeSize(type), &bytes) || bytes > static_cast<size_t>(INT64_MAX)) {
    throwArgument("count " + std::to_string(count) + " of " + typeName(type) + " overflows the addressable size");
  }
}

// How many elements an all-to-all-v buffer spans: the furthest displacement + count.
size_t extent(const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  size_t end = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (counts[j] > 0) end = std::max(end, displs[j] + counts[j]);
  }
  return end;
}

// Per-peer counts and displacements: one per rank, and each block's end within reach.
void checkLayout(const CallSpec& call, int rank, int nranks) {
  const VectorLayout* layout = call.layout.get();
  if (layout == nullptr) throwInternal("alltoallv without its counts");
  const size_t n = static_cast<size_t>(nranks);
  if (layout->sendCounts.size() != n || layout->sendDispls.size() != n || layout->recvCounts.size() != n ||
      layout->recvDispls.size() != n) {
    throwInternal("alltoallv counts are not one per rank");
  }
  const size_t limit = static_cast<size_t>(INT64_MAX) / typeSize(call.type);
  for (const auto* pair : {&layout->sendCounts, &layout->recvCounts}) {
    const std::vector<size_t>& counts = *pair;
    const std::vector<size_t>& displs = pair == &layout->sendCounts ? layout->sendDispls : layout->recvDispls;
    const char* side = pair == &layout->sendCounts ? "send" : "recv";
    for (size_t j = 0; j < n; ++j) {
      if (counts[j] > limit || displs[j] > limit - counts[j]) {
        throwArgument("rank " + std::to_string(rank) + ": alltoallv " + side + "counts[" + std::to_string(j) +
                      "] = " + std::to_string(counts[j]) + " at displacement " + std::to_string(displs[j]) + " of " +
                      typeName(call.type) + " overflows the addressable size");
      }
    }
  }
  const bool sends = extent(layout->sendCounts, layout->sendDispls) > 0;
  const bool receives = extent(layout->recvCounts, layout->recvDispls) > 0;
  if (sends && call.send == nullptr) throwArgument("rank " + std::to_string(rank) + ": alltoallv sendbuff is NULL with sendcounts > 0");
  if (receives && call.recv == nullptr) throwArgument("rank " + std::to_string(rank) + ": alltoallv recvbuff is NULL with recvcounts > 0");
  if (layout->sendCounts[rank] != layout->recvCounts[rank]) {
    throwArgument("rank " + std::to_string(rank) + ": alltoallv sendcounts[" + std::to_string(rank) + "] = " +
                  std::to_string(layout->sendCounts[rank]) + " but recvcounts[" + std::to_string(rank) + "] = " +
                  std::to_string(layout->recvCounts[rank]) + ": this rank's block to itself must match");
  }
}

// Send and receive buffers must be disjoint or exactly the collective's in-place form (as
// nccl.h defines it); anything in between would have the call read what it already overwrote.
// Only the two pointers and sizes are compared: a few instructions, no allocation.
void checkOverlap(const CallSpec& call, int rank, int nranks) {
  const auto send = reinterpret_cast<uintptr_t>(call.send);
  const auto recv = reinterpret_cast<uintptr_t>(call.recv);
  const size_t block = call.count * typeSize(call.type);
  const size_t all = block * static_cast<size_t>(nranks);
  size_t sendBytes = block, recvBytes = block;
  bool inPlace = send == recv;
  if (call.collective == Collective::AllGather) {
    recvBytes = all;
    inPlace = send == recv + block * static_cast<size_t>(rank);
  } else if (call.collective == Collective::ReduceScatter) {
    sendBytes = all;
    inPlace = recv == send + block * static_cast<size_t>(rank);
  } else if (call.collective == Collective::AllToAll) {
    sendBytes = recvBytes = all;
    inPlace = false;  // nccl.h defines no in-place all-to-all
  } else if (call.collective == Collective::AllToAllv) {
    sendBytes = extent(call.layout->sendCounts, call.layout->sendDispls) * typeSize(call.type);
    recvBytes = extent(call.layout->recvCounts, call.layout->recvDispls) * typeSize(call.type);
    inPlace = false;
    if (sendBytes == 0 || recvBytes == 0) return;
  } else if (call.collective == Collective::Gather) {  // checked on the root only
    recvBytes = all;
    inPlace = send == recv + block * static_cast<size_t>(call.root);
  } else if (call.collective == Collective::Scatter) {  // checked on the root only
    sendBytes = all;
    inPlace = recv == send + block * static_cast<size_t>(call.root);
  }
  const bool disjoint = send + sendBytes <= recv || recv + recvBytes <= send;
  if (inPlace || disjoint) return;
  const long long offset = static_cast<long long>(recv - send);
  throwArgument("rank " + std::to_string(rank) + ": " + collectiveName(call.collective) + " of " +
                std::to_string(call.count) + " x " + typeName(call.type) +
                ": sendbuff and recvbuff overlap (recvbuff = sendbuff " + (offset < 0 ? "- " : "+ ") +
                std::to_string(offset < 0 ? -offset : offset) +
                " bytes) without being the in-place form; use disjoint buffers or the exact in-place pointers");
}

}  // namespace

BufferExtents bufferExtents(const CallSpec& call, int rank, int nranks) {
  const size_t block = call.count * typeSize(call.type);
  const size_t all = block * static_cast<size_t>(nranks);
  const bool isRoot = rank == call.root;
  switch (call.collective) {
    case Collective::AllReduce: return {block, block};
    case Collective::AllGather: return {block, all};
    case Collective::ReduceScatter: return {all, block};
    case Collective::Broadcast: return {isRoot ? block : 0, block};
    case Collective::Reduce: return {block, isRoot ? block : 0};
    case Collective::AllToAll: return {all, all};
    case Collective::AllToAllv:
      if (call.layout == nullptr) return {};
      return {extent(call.layout->sendCounts, call.layout->sendDispls) * typeSize(call.type),
              extent(call.layout->recvCounts, call.layout->recvDispls) * typeSize(call.type)};
    case Collective::Gather: return {block, isRoot ? all : 0};
    case Collective::Scatter: return {isRoot ? all : 0, block};
    case Collective::Barrier: return {};
    case Collective::Send: return {block, 0};
    case Collective::Recv: return {0, block};
  }
  return {};
}

// validate()'s checks of a send or receive, in the same order, run again to say which failed.
void throwBadPeerOp(const CallSpec& call, int rank, int nranks) {
  checkType(rawValue(call.type), false);
  checkCount(call.count, 1, call.type);
  if (call.peer < 0 || call.peer >= nranks) {
    throwArgument("rank " + std::to_string(rank) + ": " + collectiveName(call.collective) + ": peer " +
                  std::to_string(call.peer) + " is not a rank of this communicator (size " + std::to_string(nranks) +
                  ")");
  }
  throwArgument("rank " + std::to_string(rank) + ": " +
                (call.collective == Collective::Send ? "send: sendbuff is NULL with count > 0"
                                                     : "recv: recvbuff is NULL with count > 0"));
}

void validateCollective(const CallSpec& call, int rank, int nranks) {
  // Built only on the way to an error: the common path allocates nothing.
  auto where = [rank] { return "rank " + std::to_string(rank) + ": "; };
  checkType(rawValue(call.type), hasOp(call.collective));
  if (hasOp(call.collective)) checkOp(rawValue(call.op), call.premul);
  checkCount(call.count, blocksPerCount(call.collective, nranks), call.type);
  if (hasRoot(call.collective) && (call.root < 0 || call.root >= nranks)) {
    throwArgument(where() + "root " + std::to_string(call.root) + " is not a rank of this communicator (size " +
                  std::to_string(nranks) + ")");
  }
  if (call.collective == Collective::AllToAllv) {
    checkLayout(call, rank, nranks);
    checkOverlap(call, rank, nranks);
    return;
  }
  if (call.count == 0 || call.collective == Collective::Barrier) return;
  const bool isRoot = rank == call.root;
  switch (call.collective) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::ReduceScatter:
      if (call.send == nullptr || call.recv == nullptr) throwArgument(where() + "sendbuff or recvbuff is NULL");
      checkOverlap(call, rank, nranks);
      return;
    case Collective::Broadcast:
      if (call.recv == nullptr) throwArgument(where() + "recvbuff is NULL");
      if (isRoot && call.send == nullptr) throwArgument(where() + "sendbuff is NULL on the root");
      if (isRoot) checkOverlap(call, rank, nranks);  // only the root reads sendbuff
      return;
    case Collective::Reduce:
      if (call.send == nullptr) throwArgument(where() + "sendbuff is NULL");
      if (isRoot && call.recv == nullptr) throwArgument(where() + "recvbuff is NULL on the root");
      if (isRoot) checkOverlap(call, rank, nranks);  // only the root writes recvbuff
      return;
    case Collective::AllToAll:
      if (call.send == nullptr || call.recv == nullptr) throwArgument(where() + "sendbuff or recvbuff is NULL");
      checkOverlap(call, rank, nranks);
      return;
    case Collective::Gather:
      if (call.send == nullptr) throwArgument(where() + "sendbuff is NULL");
      if (isRoot && call.recv == nullptr) throwArgument(where() + "recvbuff is NULL on the root");
      if (isRoot) checkOverlap(call, rank, nranks);
      return;
    case Collective::Scatter:
      if (call.recv == nullptr) throwArgument(where() + "recvbuff is NULL");
      if (isRoot && call.send == nullptr) throwArgument(where() + "sendbuff is NULL on the root");
      if (isRoot) checkOverlap(call, rank, nranks);
      return;
    case Collective::Send:
    case Collective::Recv:  // validatePeerOp's
    case Collective::AllToAllv:
    case Collective::Barrier: return;
  }
  throwInternal("validate: unknown collective");
}

}  // namespace loom::algo
