#include "algorithms/call_spec.h"

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
  }
  return "?";
}

bool hasOp(Collective collective) {
  return collective == Collective::AllReduce || collective == Collective::ReduceScatter ||
         collective == Collective::Reduce;
}

bool hasRoot(Collective collective) {
  return collective == Collective::Broadcast || collective == Collective::Reduce;
}

size_t CallSpec::inputBytes(int nranks) const {
  const size_t bytes = count * typeSize(type);
  return collective == Collective::ReduceScatter ? bytes * static_cast<size_t>(nranks) : bytes;
}

size_t CallSpec::messageBytes(int nranks) const {
  const bool oneBlock = collective == Collective::AllReduce || collective == Collective::Broadcast ||
                        collective == Collective::Reduce;
  return count * typeSize(type) * (oneBlock ? 1 : static_cast<size_t>(nranks));
}

// What must agree across ranks. The in-place flag may differ (it is each rank's own business).
transport::CallDescriptor CallSpec::descriptor() const {
  transport::CallDescriptor descriptor{};
  descriptor.collective = static_cast<uint8_t>(collective);
  descriptor.type = static_cast<uint8_t>(type);
  descriptor.op = hasOp(collective) ? static_cast<uint8_t>(op) : 0;
  descriptor.root = hasRoot(collective) ? root : 0;
  descriptor.count = count;
  return descriptor;
}

std::string describeDescriptor(const transport::CallDescriptor& d) {
  const auto collective = static_cast<Collective>(d.collective);
  std::string text = std::string(collectiveName(collective)) + "(count " + std::to_string(d.count) + ", " +
                     typeName(static_cast<loomDataType_t>(d.type));
  if (hasOp(collective)) text += std::string(", ") + opName(static_cast<loomRedOp_t>(d.op));
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

void checkType(int raw) {
  if (raw < 0 || raw >= loomNumTypes) throwArgument("invalid datatype " + std::to_string(raw));
  const auto type = static_cast<loomDataType_t>(raw);
  if (type == loomFloat8e4m3 || type == loomFloat8e5m2) {
    throwArgument("datatype " + std::to_string(type) +
                  " (fp8 e4m3/e5m2) is not supported by host collectives in this release");
  }
  if (!kernels::typeSupported(type)) throwArgument("invalid datatype " + std::to_string(raw));
}

void checkOp(int raw) {
  if (raw < loomSum || raw >= loomNumOps) throwArgument("invalid reduction op " + std::to_string(raw));
}

// count * elements-per-count-unit * typeSize must fit in size_t (and in a signed offset).
void checkCount(size_t count, size_t multiplier, loomDataType_t type) {
  const size_t limit = static_cast<size_t>(INT64_MAX) / typeSize(type) / multiplier;
  if (count > limit) {
    throwArgument("count " + std::to_string(count) + " of " + typeName(type) + " overflows the addressable size");
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

void validate(const CallSpec& call, int rank, int nranks) {
  // Built only on the way to an error: the common path allocates nothing.
  auto where = [rank] { return "rank " + std::to_string(rank) + ": "; };
  checkType(rawValue(call.type));
  if (hasOp(call.collective)) checkOp(rawValue(call.op));
  const bool perRank = call.collective == Collective::AllGather || call.collective == Collective::ReduceScatter;
  checkCount(call.count, perRank ? static_cast<size_t>(nranks) : 1, call.type);
  if (hasRoot(call.collective) && (call.root < 0 || call.root >= nranks)) {
    throwArgument(where() + "root " + std::to_string(call.root) + " is not a rank of this communicator (size " +
                  std::to_string(nranks) + ")");
  }
  if (call.count == 0) return;
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
  }
  throwInternal("validate: unknown collective");
}

}  // namespace loom::algo
