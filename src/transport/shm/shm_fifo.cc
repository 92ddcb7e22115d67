// SPDX-License-Identifier: Apache-2.0
#include "transport/shm/shm_fifo.h"

#include <cstring>
#include <new>
#include <utility>

#include "base/error.h"
#include "base/small_copy.h"

namespace loom::transport {

namespace {
constexpr uint64_t kFifoMagic = 0x314f46494d4f4f4cull;  // "LOOMFIF1" little-endian
constexpr uint32_t kFifoVersion = 3;  // 2: slots carry the call (CallTag); 3: slotSeq publishes, inline payload
constexpr size_t kCacheLine = 64;

std::string fifoLabel(int fromRank, int toRank) {
  return "shm FIFO rank " + std::to_string(fromRank) + " -> rank " + std::to_string(toRank);
}
}  // namespace

// The FIFO's first three cache lines. Written once by the creator before any peer maps the
// segment (the setup barrier orders that), except head and tail.
struct ShmFifo::Control {
  alignas(kCacheLine) ShmSegmentHeader segment;
  uint64_t slotBytes;
  uint32_t slotCount;
  int32_t fromRank;
  int32_t toRank;
  alignas(kCacheLine) std::atomic<uint64_t> head;  // written by the producer only
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // written by the consumer only
};
static_assert(sizeof(ShmSlotHeader) == kCacheLine);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

void ShmFifo::checkGeometry(const ShmFifoGeometry& geometry) {
  if (geometry.slotBytes < kCacheLine || geometry.slotBytes > kMaxSlotBytes ||
      geometry.slotBytes % kCacheLine != 0) {
    throwArgument("shm: slot size " + std::to_string(geometry.slotBytes) +
                  " must be a multiple of 64 between 64 and " + std::to_string(kMaxSlotBytes));
  }
  if (geometry.slotCount < 1 || geometry.slotCount > kMaxSlotCount) {
    throwArgument("shm: slot count " + std::to_string(geometry.slotCount) +
                  " must be between 1 and " + std::to_string(kMaxSlotCount));
  }
}

size_t ShmFifo::segmentBytes(const ShmFifoGeometry& geometry) {
  return sizeof(Control) +
         size_t{geometry.slotCount} * (sizeof(ShmSlotHeader) + geometry.slotBytes);
}

ShmFifo::ShmFifo(ShmSegment segment, const ShmFifoGeometry& geometry, std::string label)
    : segment_(std::move(segment)),
      geometry_(geometry),
      slotStride_(sizeof(ShmSlotHeader) + geometry.slotBytes),
      label_(std::move(label)) {}

ShmFifo ShmFifo::format(ShmSegment segment, const ShmFifoGeometry& geometry, int fromRank,
                        int toRank) {
  checkGeometry(geometry);
  if (segment.size() != segmentBytes(geometry)) {
    throwInternal("shm: " + segment.name() + " has the wrong size for its geometry");
  }
  segment.stampHeader(kFifoMagic, kFifoVersion);
  auto* control = static_cast<Control*>(segment.data());
  control->slotBytes = geometry.slotBytes;
  control->slotCount = geometry.slotCount;
  control->fromRank = fromRank;
  control->toRank = toRank;
  new (&control->head) std::atomic<uint64_t>(0);
  new (&control->tail) std::atomic<uint64_t>(0);
  return ShmFifo(std::move(segment), geometry, fifoLabel(fromRank, toRank));
}

ShmFifo ShmFifo::attach(ShmSegment segment, const ShmFifoGeometry& expected, int fromRank,
                        int toRank) {
  std::string label = fifoLabel(fromRank, toRank);
  if (segment.size() < sizeof(Control)) {
    throwRemote("shm: " + segment.name() + " is too small to be a " + label);
  }
  segment.checkHeader(kFifoMagic, kFifoVersion, label);
  const auto* control = static_cast<const Control*>(segment.data());
  if (control->slotBytes != expected.slotBytes || control->slotCount != expected.slotCount) {
    throw Error(loomInvalidUsage,
                "shm: ranks disagree on the FIFO geometry: rank " + std::to_string(toRank) +
                    " made " + segment.name() + " with " + std::to_string(control->slotCount) +
                    " slots of " + std::to_string(control->slotBytes) + " bytes, rank " +
                    std::to_string(fromRank) + " expects " + std::to_string(expected.slotCount) +
                    " slots of " + std::to_string(expected.slotBytes) +
                    " bytes (set the same shm options on every rank)");
  }
  if (control->fromRank != fromRank || control->toRank != toRank) {
    throwRemote("shm: " + segment.name() + " belongs to rank " + std::to_string(control->fromRank) +
                " -> rank " + std::to_string(control->toRank) + ", expected " + label);
  }
  if (segment.size() != segmentBytes(expected)) {
    throwRemote("shm: " + segment.name() + " has the wrong size for its geometry");
  }
  return ShmFifo(std::move(segment), expected, std::move(label));
}

ShmFifo::Control& ShmFifo::control() const { return *static_cast<Control*>(segment_.data()); }

char* ShmFifo::slot(uint32_t index) const {
  return static_cast<char*>(segment_.data()) + sizeof(Control) + size_t{index} * slotStride_;
}

int ShmFifo::creatorPid() const { return control().segment.creatorPid; }

uint32_t ShmFifo::freeSlots() {
  uint64_t used = head_ - seenTail_;
  if (used == geometry_.slotCount) {
    seenTail_ = control().tail.load(std::memory_order_acquire);
    used = head_ - seenTail_;
    if (used > geometry_.slotCount) {
      throwRemote("shm: " + label_ + ": the receiver's counter is corrupt (tail " +
                  std::to_string(seenTail_) + ", head " + std::to_string(head_) + ")");
    }
  }
  return static_cast<uint32_t>(geometry_.slotCount - used);
}

void ShmFifo::push(const void* data, uint32_t bytes, uint64_t offset, uint32_t messageSeq, const CallTag& tag,
                   int32_t failureCode) {
  char* target = slot(headIndex_);
  auto* header = reinterpret_cast<ShmSlotHeader*>(target);
  header->offset = offset;
  header->bytes = bytes;
  header->messageSeq = messageSeq;
  header->callSequence = tag.sequence;
  header->call = tag.call;
  header->failureCode = failureCode;
  copyBytes(bytes <= ShmSlotHeader::kInlineBytes ? header->inlinePayload
                                                 : reinterpret_cast<unsigned char*>(target) + sizeof(ShmSlotHeader),
            data, bytes);
  ++head_;
  headIndex_ = nextIndex(headIndex_);
  std::atomic_ref<uint64_t>(header->slotSeq).store(head_, std::memory_order_release);  // publishes the slot
  control().head.store(head_, std::memory_order_release);
}

bool ShmFifo::anyFilled() const { return control().head.load(std::memory_order_acquire) != tail_; }

bool ShmFifo::anyFree() const {
  return head_ - control().tail.load(std::memory_order_acquire) < geometry_.slotCount;
}

// One slot at a time, from its own header: the line the consumer reads next anyway.
uint32_t ShmFifo::filledSlots() {
  if (seenHead_ == tail_) {
    const uint64_t seq =
        std::atomic_ref<uint64_t>(reinterpret_cast<ShmSlotHeader*>(slot(tailIndex_))->slotSeq).load(std::memory_order_acquire);
    if (seq == tail_ + 1) {
      seenHead_ = tail_ + 1;
    } else if (seq != (tail_ < geometry_.slotCount ? 0 : tail_ + 1 - geometry_.slotCount)) {
      // Neither this lap's publication nor the previous lap's (or never written).
      throwRemote("shm: " + label_ + ": slot " + std::to_string(tail_) + " carries sequence number " +
                  std::to_string(seq) + " (shared memory overwritten?)");
    }
  }
  return static_cast<uint32_t>(seenHead_ - tail_);
}

ShmSlotHeader ShmFifo::frontHeader() const {
  ShmSlotHeader copy;
  std::memcpy(&copy, slot(tailIndex_), sizeof(copy));
  if (copy.slotSeq != tail_ + 1) {
    throwRemote("shm: " + label_ + ": slot " + std::to_string(tail_) + " carries sequence number " +
                std::to_string(copy.slotSeq) + " (shared memory overwritten?)");
  }
  return copy;
}

const void* ShmFifo::frontPayload(size_t bytes) const {
  const char* front = slot(tailIndex_);
  auto* header = reinterpret_cast<const ShmSlotHeader*>(front);
  return bytes <= ShmSlotHeader::kInlineBytes ? static_cast<const void*>(header->inlinePayload)
                                              : front + sizeof(ShmSlotHeader);
}

void ShmFifo::pop() {
  ++tail_;
  tailIndex_ = nextIndex(tailIndex_);
  control().tail.store(tail_, std::memory_order_release);
}

}  // namespace loom::transport
