#include "perf/perf_collectives.h"

namespace loom::perf {
namespace {

void* at(void* base, size_t elements, const CallContext& call) {
  return CallContext::offset(base, elements, typeSize(call.type));
}

// ---- all-reduce: in place, sendbuff == recvbuff.
void* allReduceSend(const CallContext& call) {
  return call.inPlace ? call.recvBase : call.sendBase;
}

void allReducePrepare(const CallContext& call, const Pattern& pattern) {
  fillInput(allReduceSend(call), call.count, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

void allReduceRun(const CallContext& call) {
  call.backend->allReduce(allReduceSend(call), call.recvBase, call.count, call.type, call.op);
}

size_t allReduceWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongReduced(call.recvBase, call.count, pattern, 0);
}

// Each rank sends and receives 2(n-1)/n of the data in a ring all-reduce.
double allReduceBus(int n) { return 2.0 * (n - 1) / n; }

// ---- all-gather: `count` is per rank; in place, sendbuff == recvbuff + rank * count.
void* allGatherSend(const CallContext& call) {
  return call.inPlace ? at(call.recvBase, call.rank * call.count, call) : call.sendBase;
}

void allGatherPrepare(const CallContext& call, const Pattern& pattern) {
  // The whole output is poisoned first: every block must be written by the collective (in place,
  // the rank's own block is then rewritten with its input).
  poison(call.recvBase, call.bytes(call.count * call.nranks));
  fillInput(allGatherSend(call), call.count, pattern, call.rank, call.rank * call.count);
}

void allGatherRun(const CallContext& call) {
  call.backend->allGather(allGatherSend(call), call.recvBase, call.count, call.type);
}

size_t allGatherWrong(const CallContext& call, const Pattern& pattern) {
  size_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const size_t first = source * call.count;
    wrong += countWrongCopied(at(call.recvBase, first, call), call.count, pattern, source, first);
  }
  return wrong;
}

// Each rank receives the n-1 blocks it does not own (reduce-scatter: sends them).
double gatherScatterBus(int n) { return double(n - 1) / n; }

// ---- reduce-scatter: `count` is the per-rank result; in place, recvbuff == sendbuff +
// rank * count.
void* reduceScatterRecv(const CallContext& call) {
  return call.inPlace ? at(call.sendBase, call.rank * call.count, call) : call.recvBase;
}

void reduceScatterPrepare(const CallContext& call, const Pattern& pattern) {
  fillInput(call.sendBase, call.count * call.nranks, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

void reduceScatterRun(const CallContext& call) {
  call.backend->reduceScatter(call.sendBase, reduceScatterRecv(call), call.count, call.type,
                              call.op);
}

size_t reduceScatterWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongReduced(reduceScatterRecv(call), call.count, pattern, call.rank * call.count);
}

// ---- broadcast: in place, sendbuff == recvbuff.
void* rootedSend(const CallContext& call) { return call.inPlace ? call.recvBase : call.sendBase; }

void broadcastPrepare(const CallContext& call, const Pattern& pattern) {
  // Non-roots fill their (unread) send buffer with their own data, which differs from the
  // root's, and start with a poisoned output, so any data not from the root is caught.
  fillInput(call.sendBase, call.count, pattern, call.rank, 0);
  poison(call.recvBase, call.bytes(call.count));
  if (call.inPlace && call.rank == call.root)
    fillInput(call.recvBase, call.count, pattern, call.rank, 0);
}

void broadcastRun(const CallContext& call) {
  call.backend->broadcast(rootedSend(call), call.recvBase, call.count, call.type, call.root);
}

size_t broadcastWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongCopied(call.recvBase, call.count, pattern, call.root, 0);
}

double rootedBus(int) { return 1.0; }

// ---- reduce: in place, sendbuff == recvbuff. Only the root's output is defined.
void reducePrepare(const CallContext& call, const Pattern& pattern) {
  fillInput(rootedSend(call), call.count, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

void reduceRun(const CallContext& call) {
  call.backend->reduce(rootedSend(call), call.recvBase, call.count, call.type, call.op, call.root);
}

size_t reduceWrong(const CallContext& call, const Pattern& pattern) {
  return call.rank == call.root ? countWrongReduced(call.recvBase, call.count, pattern, 0) : 0;
}

}  // namespace

const Collective kAllReduce{"all_reduce",     true,         false,         false, allReduceBus,
                            allReducePrepare, allReduceRun, allReduceWrong};
const Collective kAllGather{"all_gather",     false,        false,         true, gatherScatterBus,
                            allGatherPrepare, allGatherRun, allGatherWrong};
const Collective kReduceScatter{
    "reduce_scatter",  true, false, true, gatherScatterBus, reduceScatterPrepare, reduceScatterRun,
    reduceScatterWrong};
const Collective kBroadcast{"broadcast",      false,        true,          false, rootedBus,
                            broadcastPrepare, broadcastRun, broadcastWrong};
const Collective kReduce{"reduce",  true,          true,      false,
                         rootedBus, reducePrepare, reduceRun, reduceWrong};

}  // namespace loom::perf
