// SPDX-License-Identifier: Apache-2.0
// Collectives as schedules: for one rank, the list of steps that move and combine data —
// send a range to a peer, receive a range from a peer (copying it or reducing it into a
// local range), copy locally, divide for avg. A schedule names buffers, not pointers, and
// knows nothing of transports, so the same schedule runs for real (executor.cc), in tests,
// and in the symbolic simulator (simulator.cc).
//
// Ordering contract: the k-th Send from rank a to rank b matches the k-th Recv/RecvReduce
// on rank b from rank a, with the same byte count. Steps of zero bytes are never emitted.
// A step may depend on one earlier step of the same rank (it starts after that one is done);
// that is how a ring forwards a chunk only after reducing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/call_spec.h"
#include "algorithms/host_layout.h"

namespace loom::algo {

// The call's buffers, plus (point-to-point batches) one buffer per operation of the batch:
// userBuffer(k) is the k-th operation's memory (ExecutionBuffers::extra[k]).
enum class Buffer : uint32_t { Send, Recv, Scratch };
constexpr uint32_t kFirstUserBuffer = 3;
constexpr Buffer userBuffer(size_t k) { return static_cast<Buffer>(kFirstUserBuffer + k); }
constexpr bool isUserBuffer(Buffer buffer) { return static_cast<uint32_t>(buffer) >= kFirstUserBuffer; }
constexpr size_t userBufferIndex(Buffer buffer) { return static_cast<uint32_t>(buffer) - kFirstUserBuffer; }

struct Range {
  Buffer buffer = Buffer::Send;
  size_t offset = 0;  // bytes
  size_t bytes = 0;
};

enum class StepKind : uint8_t {
  Send,        // send `src` to `peer`
  Recv,        // receive from `peer` into `dst`
  RecvReduce,  // receive from `peer`, dst = src (local operand) op incoming
  Copy,        // dst = src, locally (skipped when they are the same memory)
  Divide,      // avg's final step: dst = dst / nranks (integers), / averageDivisor (floats)
  // Deterministic mode: dst = the canonical reduction of `blocks` ranges, src + j * stride
  // holding rank j's input (kernels/host/canonical_reduce.h), avg included.
  ReduceRanks,
};

struct Step {
  StepKind kind;
  int peer = -1;       // Send, Recv, RecvReduce
  Range dst;           // Recv, RecvReduce, Copy, Divide
  Range src;           // Send, RecvReduce (local operand), Copy
  int dependsOn = -1;  // index of an earlier step of this schedule, or -1
  int alsoDependsOn = -1;  // a second one (deterministic mode reuses its scratch)
  // RecvReduce of avg: the incoming data is a peer's raw input, not a partial sum, so it is
  // scaled like the local operand (reduce_ops.h, "avg").
  bool rawIncoming = false;
  // RecvReduce of avg: the local operand is a partial sum (already scaled), not this rank's raw
  // input, so the two are summed plainly (the hierarchical schedules' steps between hosts).
  bool partialLocal = false;
  size_t stride = 0;  // ReduceRanks: bytes from one rank's block to the next
  int blocks = 0;     // ReduceRanks: how many (the rank count)
  // Point-to-point batches: the message's own place among the pair's messages in its direction
  // (1, 2, ...; 0 for collectives, whose messages carry the call's tag). Its tag on the wire.
  uint64_t message = 0;
};

struct Schedule {
  std::vector<Step> steps;
  size_t scratchBytes = 0;
  // How far the steps reach into each buffer (by Buffer): what a transport registers. Kept up
  // to date by measure(), which ScheduleBuilder::finish and buildSchedule call.
  size_t reach[3] = {0, 0, 0};
  void measure();
};


// What a schedule generator needs to know; everything is identical on every rank but `rank`.
struct CollectiveShape {
  Collective collective = Collective::AllReduce;
  int rank = 0;
  int nranks = 1;
  // Elements: all-reduce/broadcast/reduce: count; all-gather: sendcount; reduce-scatter: recvcount.
  size_t count = 0;
  size_t elementBytes = 4;
  int root = 0;             // broadcast, reduce
  bool average = false;     // op is avg: append Divide steps
  size_t pieceBytes = 256 * 1024;  // pipelining granularity (rounded down to whole elements)
  // Deterministic mode: all-reduce, reduce-scatter and reduce gather every rank's raw input
  // and reduce it in rank order (deterministicReduce).
  bool deterministic = false;
  // Ring position -> rank (a permutation chosen from the topology); null means rank order.
  // Generators work on positions; buildSchedule maps peers and rank-indexed blocks back.
  const std::vector<int>* ringOrder = nullptr;
  // The hosts' ranks (host_layout.h), set where the core chose the hierarchical forms
  // (chooseHierarchy): all-reduce, all-gather, reduce-scatter, broadcast and reduce then run
  // within hosts and between them (hierarchical_*.cc) when the layout is uniform with at least
  // 2 hosts and 2 ranks a host; otherwise, and when null, the flat ring in ringOrder. Deterministic
  // reductions keep deterministicReduce under every layout.
  const HostLayout* hosts = nullptr;
  // All-to-all-v: per-peer counts and displacements (elements), this rank's view.
  const VectorLayout* layout = nullptr;
};

// Builds this rank's schedule for `shape` (ring or chain, as documented per generator), in
// ring order when shape.ringOrder is set.
Schedule buildSchedule(const CollectiveShape& shape);

// Generators, one per file.
Schedule ringAllReduce(const CollectiveShape& shape);
Schedule ringAllGather(const CollectiveShape& shape);
Schedule ringReduceScatter(const CollectiveShape& shape);
Schedule chainBroadcast(const CollectiveShape& shape);
Schedule chainReduce(const CollectiveShape& shape);
Schedule deterministicReduce(const CollectiveShape& shape);  // follows shape.ringOrder itself
// The hierarchical forms over shape.hosts (uniform, >= 2 hosts of >= 2 ranks; shape.ringOrder
// is not used): within each host, and between the ranks of one local index on every host.
Schedule hierarchicalAllReduce(const CollectiveShape& shape);
Schedule hierarchicalAllGather(const CollectiveShape& shape);
Schedule hierarchicalReduceScatter(const CollectiveShape& shape);
Schedule hierarchicalBroadcast(const CollectiveShape& shape);
Schedule hierarchicalReduce(const CollectiveShape& shape);
// Whether buildSchedule takes the hierarchical form for `shape`.
bool usesHierarchy(const CollectiveShape& shape);
// Rank-to-rank collectives over the full mesh (rank order; shape.ringOrder is not used):
Schedule meshAllToAll(const CollectiveShape& shape);   // all-to-all and all-to-all-v
Schedule meshGather(const CollectiveShape& shape);     // root receives from every rank at once
Schedule meshScatter(const CollectiveShape& shape);    // root sends to every rank at once
Schedule disseminationBarrier(const CollectiveShape& shape);  // ceil(log2 n) rounds of 1 byte

// One point-to-point operation of a batch (a group's sends and receives on one communicator,
// or a lone send or receive): `bytes` to or from `peer`, in userBuffer(index in the batch).
// `message` is its place among the messages of its pair and direction (1, 2, ...).
struct PeerOperation {
  bool send = true;
  int peer = 0;
  size_t bytes = 0;
  uint64_t message = 0;
};
// All of a batch's operations as one schedule: each peer's sends in order on one lane and its
// receives on another, every lane progressing at once, so no order of posting can deadlock. A
// send to this rank itself is matched with this rank's receive from itself (a local copy);
// throws loomInvalidUsage naming the operation when one has no partner.
Schedule pointToPointBatch(int rank, const std::vector<PeerOperation>& operations);
// The same into `schedule`, whose memory is reused (a rank exchanging small messages in a loop
// allocates nothing per exchange).
void pointToPointBatch(int rank, const std::vector<PeerOperation>& operations, Schedule& schedule);
// The two rules the functions below are made of, inline for a caller that reads a batch in one
// pass (core/peer_ops.cc): operations of the same shape (message numbers may differ), and
// whether an operation is a message, one Send or Recv step of the batch's schedule, in order.
inline bool samePeerOperationShape(const PeerOperation& a, const PeerOperation& b) {
  return a.send == b.send && a.peer == b.peer && a.bytes == b.bytes;
}
inline bool isMessageStep(int rank, const PeerOperation& operation) {
  return operation.bytes > 0 && operation.peer != rank;
}
// Whether `schedule`, built by pointToPointBatch for `rank` and `built`, serves `operations` too:
// the same directions, peers and sizes in the same order (message numbers may differ). The
// schedule is a function of exactly those, so a rank repeating an exchange reuses it.
bool samePointToPointShape(const std::vector<PeerOperation>& built, const std::vector<PeerOperation>& operations);
// Gives a batch schedule of the same shape `operations`' message numbers (the only field of a
// step that changes between repetitions of an exchange).
void renumberPointToPointBatch(int rank, const std::vector<PeerOperation>& operations, Schedule& schedule);
// Only the check of the batch's messages to itself (before it takes a turn).
void checkSelfMessages(int rank, const std::vector<PeerOperation>& operations);

// Helpers shared by the generators (schedule.cc).

// Splits `count` elements into `parts` nearly equal contiguous blocks: the first count % parts
// blocks get one extra element. Returns block `index` as [first, first + size).
struct Block {
  size_t first = 0;
  size_t size = 0;
};
Block splitBlock(size_t count, int parts, int index);

// Where this rank sits on a chain that starts at shape.root and runs root, root+1, ... (mod n).
struct ChainPlace {
  int position;  // 0 at the root, n-1 at the far end
  int next;      // the rank after this one (away from the root)
  int previous;  // the rank before it (toward the root)
  size_t bytes;  // the whole message
};
ChainPlace chainPlace(const CollectiveShape& shape);

// A ring of n ranks that move one block per rank (all-gather, reduce-scatter): this rank's
// neighbours, and where block `index` (any integer, taken mod n) sits in a buffer of n blocks.
struct RingBlocks {
  int n;
  int left;   // receives from
  int right;  // sends to
  size_t blockBytes;
  size_t offset(int index) const { return static_cast<size_t>(((index % n) + n) % n) * blockBytes; }
};
RingBlocks ringBlocks(const CollectiveShape& shape);

// Appends steps while cutting every range into pipeline pieces of at most pieceBytes.
class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(const CollectiveShape& shape);
  size_t pieceCount(size_t bytes) const;
  // The piece `index` of a `bytes`-long range starting at `offset` in `buffer`.
  Range piece(Buffer buffer, size_t offset, size_t bytes, size_t index) const;
  // Appends a step unless it moves zero bytes; returns its index, or -1 when skipped.
  int add(Step step);
  Schedule finish(size_t scratchBytes = 0);

 private:
  size_t pieceBytes_;
  Schedule schedule_;
};

std::string describe(const Step& step);

}  // namespace loom::algo
