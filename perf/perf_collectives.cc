// SPDX-License-Identifier: Apache-2.0
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

// ---- sendrecv (nccl-tests' sendrecv.cu): in one group each rank sends `count` elements to
// rank + 1 and receives as many from rank - 1 (mod n). No in-place form.
int nextRank(const CallContext& call) { return (call.rank + 1) % call.nranks; }
int previousRank(const CallContext& call) { return (call.rank - 1 + call.nranks) % call.nranks; }

void sendRecvPrepare(const CallContext& call, const Pattern& pattern) {
  fillInput(call.sendBase, call.count, pattern, call.rank, call.rank * call.count);
  poison(call.recvBase, call.bytes(call.count));
}

void sendRecvRun(const CallContext& call) {
  call.backend->sendRecv(call.sendBase, call.recvBase, call.count, call.type, nextRank(call),
                         previousRank(call));
}

size_t sendRecvWrong(const CallContext& call, const Pattern& pattern) {
  const int from = previousRank(call);
  return countWrongCopied(call.recvBase, call.count, pattern, from, from * call.count);
}

// One message crosses one link: busbw = algbw (nccl-tests' SendRecvGetBw).
double pointToPointBus(int) { return 1.0; }

// ---- all-to-all: `count` per peer. Rank s's block for rank d holds value(s, d * stride + k),
// stride = count | 1: odd, so a block delivered to the wrong rank differs from the right one
// even when count is a multiple of the pattern's power-of-two modulus (with stride = count
// the blocks of one sender would repeat each other exactly there).
size_t allToAllStride(const CallContext& call) { return call.count | 1; }

void allToAllPrepare(const CallContext& call, const Pattern& pattern) {
  for (int dest = 0; dest < call.nranks; ++dest) {
    fillInput(at(call.sendBase, dest * call.count, call), call.count, pattern, call.rank,
              dest * allToAllStride(call));
  }
  poison(call.recvBase, call.bytes(call.count * call.nranks));
}

void allToAllRun(const CallContext& call) {
  call.backend->allToAll(call.sendBase, call.recvBase, call.count, call.type);
}

size_t allToAllWrong(const CallContext& call, const Pattern& pattern) {
  size_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    wrong += countWrongCopied(at(call.recvBase, source * call.count, call), call.count, pattern,
                              source, call.rank * allToAllStride(call));
  }
  return wrong;
}

// ---- gather: `count` per rank; in place (nccl-tests' convention on every rank; loom.h's on
// the root): sendbuff == recvbuff + rank * count. Only the root's output is defined.
void gatherPrepare(const CallContext& call, const Pattern& pattern) {
  // As all-gather: the whole output poisoned, then the rank's input written where it is read.
  allGatherPrepare(call, pattern);
}

void gatherRun(const CallContext& call) {
  call.backend->gather(allGatherSend(call), call.recvBase, call.count, call.type, call.root);
}

size_t gatherWrong(const CallContext& call, const Pattern& pattern) {
  return call.rank == call.root ? allGatherWrong(call, pattern) : 0;
}

// ---- scatter: `count` per rank; in place: recvbuff == sendbuff + rank * count.
void* scatterRecv(const CallContext& call) {
  return call.inPlace ? at(call.sendBase, call.rank * call.count, call) : call.recvBase;
}

void scatterPrepare(const CallContext& call, const Pattern& pattern) {
  // Every rank fills its send buffer with its own data (only the root's is read), so a block
  // not from the root is caught; the output starts poisoned, except the root's own block in
  // place, which the call leaves where it is.
  fillInput(call.sendBase, call.count * call.nranks, pattern, call.rank, 0);
  if (!(call.inPlace && call.rank == call.root)) poison(scatterRecv(call), call.bytes(call.count));
}

void scatterRun(const CallContext& call) {
  call.backend->scatter(call.sendBase, scatterRecv(call), call.count, call.type, call.root);
}

size_t scatterWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongCopied(scatterRecv(call), call.count, pattern, call.root,
                          call.rank * call.count);
}

}  // namespace

const Collective kAllReduce{.name = "all_reduce",
                            .hasOp = true,
                            .hasRoot = false,
                            .countPerRank = false,
                            .busFactor = allReduceBus,
                            .prepare = allReducePrepare,
                            .run = allReduceRun,
                            .countWrong = allReduceWrong,
                            .noInPlaceForm = nullptr};
const Collective kAllGather{.name = "all_gather",
                            .hasOp = false,
                            .hasRoot = false,
                            .countPerRank = true,
                            .busFactor = gatherScatterBus,
                            .prepare = allGatherPrepare,
                            .run = allGatherRun,
                            .countWrong = allGatherWrong,
                            .noInPlaceForm = nullptr};
const Collective kReduceScatter{.name = "reduce_scatter",
                                .hasOp = true,
                                .hasRoot = false,
                                .countPerRank = true,
                                .busFactor = gatherScatterBus,
                                .prepare = reduceScatterPrepare,
                                .run = reduceScatterRun,
                                .countWrong = reduceScatterWrong,
                                .noInPlaceForm = nullptr};
const Collective kBroadcast{.name = "broadcast",
                            .hasOp = false,
                            .hasRoot = true,
                            .countPerRank = false,
                            .busFactor = rootedBus,
                            .prepare = broadcastPrepare,
                            .run = broadcastRun,
                            .countWrong = broadcastWrong,
                            .noInPlaceForm = nullptr};
const Collective kReduce{.name = "reduce",
                         .hasOp = true,
                         .hasRoot = true,
                         .countPerRank = false,
                         .busFactor = rootedBus,
                         .prepare = reducePrepare,
                         .run = reduceRun,
                         .countWrong = reduceWrong,
                         .noInPlaceForm = nullptr};
// nccl-tests' names (sendrecv_perf, alltoall_perf, gather_perf, scatter_perf) and bus factors
// (src/sendrecv.cu, alltoall.cu, gather.cu, scatter.cu: *GetBw): all-to-all, gather and
// scatter move n - 1 of the n blocks of `n * count` over links, (n - 1) / n; sendrecv 1.
// Their sizes too: -b/-e is one rank's whole buffer (all-to-all: count per peer = size / type
// size / n), as this driver's all-gather does it. nccl-tests also rounds that count down to a
// multiple of 16 bytes, for its GPU vector loads; host buffers need no such rounding, and at
// power-of-two sizes from 16 * n bytes up the counts are the same.
const Collective kSendRecv{
    .name = "sendrecv",
    .hasOp = false,
    .hasRoot = false,
    .countPerRank = false,
    .busFactor = pointToPointBus,
    .prepare = sendRecvPrepare,
    .run = sendRecvRun,
    .countWrong = sendRecvWrong,
    .noInPlaceForm = "a send and a receive on one buffer have no defined order"};
const Collective kAllToAll{.name = "alltoall",
                           .hasOp = false,
                           .hasRoot = false,
                           .countPerRank = true,
                           .busFactor = gatherScatterBus,
                           .prepare = allToAllPrepare,
                           .run = allToAllRun,
                           .countWrong = allToAllWrong,
                           .noInPlaceForm = "loom.h and nccl.h define no in-place all-to-all"};
const Collective kGather{.name = "gather",
                         .hasOp = false,
                         .hasRoot = true,
                         .countPerRank = true,
                         .busFactor = gatherScatterBus,
                         .prepare = gatherPrepare,
                         .run = gatherRun,
                         .countWrong = gatherWrong,
                         .noInPlaceForm = nullptr};
const Collective kScatter{.name = "scatter",
                          .hasOp = false,
                          .hasRoot = true,
                          .countPerRank = true,
                          .busFactor = gatherScatterBus,
                          .prepare = scatterPrepare,
                          .run = scatterRun,
                          .countWrong = scatterWrong,
                          .noInPlaceForm = nullptr};

}  // namespace loom::perf
