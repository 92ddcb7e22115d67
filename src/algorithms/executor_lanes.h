// SPDX-License-Identifier: Apache-2.0
// What the executor (executor.cc) keeps per peer while it runs one call: the sink that takes
// each received piece (a copy or a reduction), each direction's queue of steps, and the table
// of the peers the call talks to. Kept per thread between calls, so a small call allocates
// nothing. Also what its general run and its quick exchange (executor_quick.h) share: message
// tags, buffer addresses and regions. Internal to the executor (and its staged_copies.cc).
#pragma once

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/call_spec.h"
#include "algorithms/executor.h"
#include "algorithms/schedule.h"
#include "base/error.h"
#include "base/small_copy.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/stream_copy.h"
#include "transport/transport.h"

namespace loom::algo::executor_detail {

// Idle spin rounds after which the executor wakes peers about what it moved (about 1 us: long
// after the pushed lines left, long before a sleeping peer would notice on its own).
constexpr int kFlushAfterIdleRounds = 16;

// Per thread, grown to the largest piece seen and kept: no allocation or page fault per call.
inline char* stagingBuffer(size_t bytes) {
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffer;
  if (buffer.size < bytes) {
    buffer.data = std::make_unique<char[]>(bytes);
    std::memset(buffer.data.get(), 0, bytes);
    buffer.size = bytes;
  }
  return buffer.data.get();
}

// What a receive does with each arriving piece: copy it, or reduce it with a local operand.
class StepSink final : public transport::RecvSink {
 public:
  StepSink(char* dst, const char* local, const CallSpec& call, const ExecutionContext& context, size_t elementBytes,
           bool rawIncoming, bool partialLocal = false)
      : dst_(dst), local_(local), call_(call), context_(context), elementBytes_(elementBytes),
        rawIncoming_(rawIncoming), partialLocal_(partialLocal) {}

  char* destination() override {
    return local_ == nullptr && !context_.streamCopies ? dst_ : nullptr;
  }

  void deliver(size_t offset, const void* data, size_t bytes) override {
    if (local_ == nullptr) {
      if (context_.streamCopies) {
        kernels::streamCopy(dst_ + offset, data, bytes);
      } else {
        copyBytes(dst_ + offset, data, bytes);
      }
    } else if (context_.streamReductions) {
      // Reduce into a cache-resident buffer, then write the output once, around the cache.
      char* staged = stagingBuffer(bytes);
      combine(staged, local_ + offset, data, bytes / elementBytes_);
      kernels::streamCopy(dst_ + offset, staged, bytes);
    } else {
      combine(dst_ + offset, local_ + offset, data, bytes / elementBytes_);
    }
  }

 private:
  // avg scales the inputs as they enter the sum (kernels/host/canonical_reduce.h); one branch
  // per piece, not per element. Two partial sums (Step::partialLocal) are both scaled already:
  // kernels::reduce sums them (avg reduces as sum).
  void combine(char* out, const char* local, const void* data, size_t count) const {
    if (call_.op == loomAvg && !partialLocal_) {
      kernels::reduceAverage(call_.type, out, local, data, count, context_.nranks, rawIncoming_);
    } else {
      kernels::reduce(call_.type, call_.op, out, local, data, count);
    }
  }

  char* dst_;
  const char* local_;
  const CallSpec& call_;
  const ExecutionContext& context_;
  size_t elementBytes_;
  bool rawIncoming_;
  bool partialLocal_;
};

// Step indices in order: a vector read from `head` (kept, with its capacity, for the thread's
// next call, where a deque would allocate on every call).
class StepQueue {
 public:
  bool empty() const { return head_ == steps_.size(); }
  int front() const { return steps_[head_]; }
  void pop_front() { ++head_; }
  void push_back(int step) { steps_.push_back(step); }
  void clear() {
    steps_.clear();
    head_ = 0;
  }

 private:
  std::vector<int> steps_;
  size_t head_ = 0;
};

// One direction of one peer: its steps in order, and the one in flight.
struct Lane {
  StepQueue pending;
  int active = -1;
  std::optional<StepSink> sink;  // in place: no allocation per received piece of a schedule
  void clear() {
    pending.clear();
    active = -1;
    sink.reset();
  }
};

// PeerLanes::regions of a transport that registers no memory (Transport::registersMemory).
constexpr size_t kUnregistered = ~size_t{0};

struct PeerLanes {
  transport::Connection* connection = nullptr;
  size_t regions = kUnregistered;  // index of its transport's registrations (Run::registered_)
  Lane send;
  Lane recv;
};

// The lanes of the peers one call talks to, by peer rank: a flat table whose entries (and
// their queues' memory) the thread's next call reuses. Iterates like a map of (peer, lanes).
class LaneTable {
 public:
  struct Entry {
    int first;          // the peer
    PeerLanes second;   // its lanes
  };
  void reset(size_t nranks) {
    for (size_t i = 0; i < used_; ++i) {
      entries_[i].second.send.clear();
      entries_[i].second.recv.clear();
    }
    used_ = 0;
    slotOf_.assign(nranks, -1);
  }
  Entry* find(int peer) {
    const size_t p = static_cast<size_t>(peer);
    return p < slotOf_.size() && slotOf_[p] >= 0 ? &entries_[static_cast<size_t>(slotOf_[p])] : end();
  }
  Entry& add(int peer) {
    if (used_ == entries_.size()) entries_.emplace_back();
    Entry& entry = entries_[used_];
    entry.first = peer;
    entry.second.connection = nullptr;
    entry.second.regions = kUnregistered;
    slotOf_[static_cast<size_t>(peer)] = static_cast<int>(used_++);
    return entry;
  }
  Entry* begin() { return entries_.data(); }
  Entry* end() { return entries_.data() + used_; }
  const Entry* begin() const { return entries_.data(); }
  const Entry* end() const { return entries_.data() + used_; }

 private:
  std::vector<Entry> entries_;  // the first used_ are this call's (a deque keeps addresses; a
  std::vector<int> slotOf_;     // vector is fine: entries are only added before the run starts)
  size_t used_ = 0;
};

// Whether a message carries its own tag rather than its call's: every point-to-point message
// (it has a number in its direction) and every message of an all-to-all-v (its own size).
inline bool carriesOwnTag(const CallSpec& call, const Step& step) {
  return step.message != 0 || call.collective == Collective::AllToAllv;
}

// A message's own tag (LOOM_CHECK): its size, and for a point-to-point message its place in
// its direction instead of the call's number, so counts a pair disagrees on fail on both ranks
// naming both sizes. `ofCall` is the call's tag (sequence 0: not checked).
inline transport::CallTag messageTag(const transport::CallTag& ofCall, const Step& step, size_t elementBytes) {
  transport::CallTag tag = ofCall;
  if (tag.sequence == 0) return tag;
  if (step.message != 0) tag.sequence = transport::kPointToPointTag | step.message;
  tag.call.count = (step.kind == StepKind::Send ? step.src.bytes : step.dst.bytes) / elementBytes;
  return tag;
}

// The call's tag, as every message of it carries (sequence 0 where LOOM_CHECK is off).
inline transport::CallTag callTag(const CallSpec& call, const ExecutionContext& context) {
  transport::CallTag tag;
  if (context.checkCalls) {
    tag.sequence = call.sequence;
    tag.call = call.descriptor();
    tag.describe = describeDescriptor;
  }
  return tag;
}

// Where a buffer of the call starts.
inline char* bufferBase(const ExecutionBuffers& buffers, Buffer buffer) {
  switch (buffer) {
    case Buffer::Send: return const_cast<char*>(static_cast<const char*>(buffers.send));
    case Buffer::Recv: return static_cast<char*>(buffers.recv);
    case Buffer::Scratch: return static_cast<char*>(buffers.scratch);
    default: return (*buffers.user)[userBufferIndex(buffer)].base;
  }
}

// Where a step writes: never the send buffer, which the caller may have made read-only.
inline char* writableTarget(const ExecutionBuffers& buffers, const Range& range) {
  if (range.buffer == Buffer::Send) throwInternal("schedule writes into the send buffer");
  return bufferBase(buffers, range.buffer) + range.offset;
}

// The whole of a buffer as a transport region, for transports that register nothing.
inline transport::Region unregisteredRegion(const ExecutionBuffers& buffers, const Schedule& schedule, Buffer buffer) {
  const size_t extent = isUserBuffer(buffer) ? (*buffers.user)[userBufferIndex(buffer)].bytes
                                             : schedule.reach[static_cast<int>(buffer)];
  return transport::Region{bufferBase(buffers, buffer), extent, 0};
}

}  // namespace loom::algo::executor_detail
