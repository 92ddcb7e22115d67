// SPDX-License-Identifier: Apache-2.0
// The single-producer single-consumer slot FIFO that carries one direction (from -> to) of an
// shm connection. It lives in a segment created by the receiver and mapped by the sender.
//
// Layout: a read-only info line (segment header, geometry, ranks), the producer's `head` and
// the consumer's `tail` on cache lines of their own (so the two sides never false-share),
// then `slotCount` slots, each a 64-byte header line followed by `slotBytes` of payload.
// head and tail count slots over the FIFO's whole life; slot i sits at index i % slotCount.
// The producer fills slot `head` and publishes it with a release store of its header's slotSeq
// (= head + 1), then stores head + 1 in `head`; the consumer polls the next slot's slotSeq
// (acquire) and frees the slot with a release store of tail + 1. Polling the slot, not `head`,
// makes a small message one cache line for the consumer to fetch, not two; a piece of at most
// kInlineBytes rides in the header line itself, so an 8-byte message is exactly one line. No
// locks; the producer keeps a private copy of `tail` and re-reads it only when its copy says
// full. `head` is read only by a consumer about to sleep (anyFilled).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace loom::transport {

struct ShmFifoGeometry {
  size_t slotBytes = 0;    // payload per slot, a multiple of 64
  uint32_t slotCount = 0;  // slots in the ring
};

// Describes one piece of a message as the producer wrote it; the consumer checks it against
// the piece it expects before handing the payload on.
struct alignas(64) ShmSlotHeader {
  static constexpr uint32_t kInlineBytes = 8;
  uint64_t slotSeq;     // the slot's position in the FIFO's history + 1 (0: never written); last
                        // written, with release order: it publishes the slot
  uint64_t offset;      // where the piece starts in its message
  uint32_t bytes;       // payload bytes used
  uint32_t messageSeq;  // which message of this direction (wraps)
  uint64_t callSequence;  // the call the message belongs to (CallTag; 0: unchecked)
  CallDescriptor call;
  // The payload when bytes <= kInlineBytes. Receivers reduce straight from it, so it is aligned
  // for the widest element (int64, f64).
  alignas(8) unsigned char inlinePayload[kInlineBytes];
  int32_t failureCode;  // nonzero: not data but the sender's failure report (payload: reason)
};
static_assert(sizeof(ShmSlotHeader) == 64);
static_assert(offsetof(ShmSlotHeader, inlinePayload) % 8 == 0);

class ShmFifo {
 public:
  static constexpr size_t kMaxSlotBytes = size_t{1} << 30;
  static constexpr uint32_t kMaxSlotCount = 1u << 16;

  // Throws loomInvalidArgument unless 64 <= slotBytes <= kMaxSlotBytes, slotBytes % 64 == 0
  // and 1 <= slotCount <= kMaxSlotCount.
  static void checkGeometry(const ShmFifoGeometry& geometry);
  static size_t segmentBytes(const ShmFifoGeometry& geometry);

  // Receiver side: lays out an empty FIFO in a freshly created (zeroed) segment.
  static ShmFifo format(ShmSegment segment, const ShmFifoGeometry& geometry, int fromRank,
                        int toRank);
  // Sender side: checks magic, version, geometry and ranks of a peer's FIFO. A geometry that
  // differs from `expected` is loomInvalidUsage (the ranks were configured differently).
  static ShmFifo attach(ShmSegment segment, const ShmFifoGeometry& expected, int fromRank,
                        int toRank);

  ShmFifo(ShmFifo&&) noexcept = default;
  ShmFifo& operator=(ShmFifo&&) noexcept = default;

  const ShmFifoGeometry& geometry() const { return geometry_; }
  ShmSegment& segment() { return segment_; }
  int creatorPid() const;

  // ---- Producer side ----
  // Slots the producer may fill now.
  uint32_t freeSlots();
  // Copies `bytes` (<= slotBytes) into the next free slot and publishes it. Needs a free slot.
  void push(const void* data, uint32_t bytes, uint64_t offset, uint32_t messageSeq, const CallTag& tag = {},
            int32_t failureCode = 0);

  // ---- Consumer side ----
  // Slots filled and not yet freed. Throws loomRemoteError if the producer's counter is
  // impossible (corrupt shared memory).
  uint32_t filledSlots();
  // Read-only looks for a sleeper's last check (Doorbell): a slot filled / a slot free now,
  // from the shared counters (their corruption is found by filledSlots/freeSlots).
  bool anyFilled() const;
  bool anyFree() const;
  // The oldest filled slot's header (needs filledSlots() > 0), copied out so a peer that
  // scribbles on it afterwards cannot change what was checked. Throws loomRemoteError if its
  // sequence number is not the slot's position.
  ShmSlotHeader frontHeader() const;
  // Where the front slot's payload is, for a piece of `bytes` (the size in the header copy that
  // was checked: the shared header may change under us).
  const void* frontPayload(size_t bytes) const;
  // Frees the oldest filled slot for the producer.
  void pop();

 private:
  struct Control;
  ShmFifo(ShmSegment segment, const ShmFifoGeometry& geometry, std::string label);
  Control& control() const;
  char* slot(uint32_t index) const;  // by index in the ring (a sequence number % slotCount)
  // The ring index after `index` (kept instead of divided out of head_ and tail_ each time: a
  // 64-bit division is tens of cycles on the path of every message).
  uint32_t nextIndex(uint32_t index) const { return index + 1 == geometry_.slotCount ? 0 : index + 1; }

  ShmSegment segment_;
  ShmFifoGeometry geometry_;
  size_t slotStride_ = 0;
  std::string label_;  // "shm FIFO rank 1 -> rank 0" for messages
  // Private views: the producer's own head and last seen tail; the consumer's own tail and
  // last seen head.
  uint64_t head_ = 0;
  uint64_t seenTail_ = 0;
  uint64_t tail_ = 0;
  uint64_t seenHead_ = 0;
  uint32_t headIndex_ = 0;  // head_ % slotCount
  uint32_t tailIndex_ = 0;  // tail_ % slotCount
};

}  // namespace loom::transport
