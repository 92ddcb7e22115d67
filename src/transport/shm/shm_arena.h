// SPDX-License-Identifier: Apache-2.0
// The shared arena: one shared-memory segment per communicator, mapped by every rank when all
// ranks are on one host. It carries what the direct collectives (algorithms/direct_*.h) need
// to meet without a transport in between:
//
//   per rank, two post slots (one per parity of the call sequence number): a 64-byte line
//   whose first word is the sequence number of the call it describes, stored last with
//   release order, followed by the call's descriptor and then by the eager payload, so a
//   reader polling the flag pulls the first 32 bytes of data with the same cache line;
//   per rank, a progress line (chunks of its segment reduced in the current call), a done line
//   (last call in which it finished reading its peers' memory), its doorbell and a departed
//   line (nonzero once it destroyed or aborted its communicator; waits check it when idle).
//
// Every line a rank writes is written by that rank only (single writer), so the protocol needs
// no atomic read-modify-write on shared lines except the doorbell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/bootstrap.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace loom::transport {

// What a rank posts about its call: peers compare it with their own (mismatched collectives
// become errors instead of corruption) and, for single-copy calls, read the buffer addresses.
struct alignas(64) PostHeader {
  std::atomic<uint64_t> sequence;  // the call this slot describes; written last
  uint64_t reserved;
  CallDescriptor call;
  // The eager payload starts here (offset 32) and runs on past the line.
};
static_assert(sizeof(PostHeader) == 64);
constexpr size_t kPostPayloadOffset = 32;

struct alignas(64) CounterLine {
  std::atomic<uint64_t> value;
};

// Where the single-copy collectives find a poster's buffers (in its own address space).
struct BufferAddresses {
  uint64_t send;
  uint64_t recv;
};

class ShmArena {
 public:
  // Collective over `bootstrap` (every rank calls it): rank 0 creates the segment (anonymous
  // memory, shm_segment.h), everyone maps it through rank 0's descriptor, which is closed
  // before this returns. `eagerBytes` is the payload capacity of
  // one post slot.
  static std::unique_ptr<ShmArena> create(Bootstrap& bootstrap, const std::string& name,
                                          size_t eagerBytes, int timeoutMs);

  int nranks() const { return nranks_; }
  size_t eagerBytes() const { return eagerBytes_; }

  // The post slot of `rank` for calls whose sequence number has this parity.
  // Inline: two per peer on every call of the direct engine.
  PostHeader& post(int rank, uint64_t sequence) const {
    char* area = ranks_ + rankStride_ * static_cast<size_t>(rank);
    return *reinterpret_cast<PostHeader*>(area + slotStride_ * (sequence & 1));
  }
  // The slot's payload: eagerBytes() bytes, 32-byte aligned.
  char* payload(int rank, uint64_t sequence) const {
    return reinterpret_cast<char*>(&post(rank, sequence)) + kPostPayloadOffset;
  }
  CounterLine& progress(int rank) const;
  CounterLine& done(int rank) const;
  DoorbellWord& doorbell(int rank) const;
  CounterLine& departed(int rank) const;

 private:
  ShmArena(ShmSegment segment, int nranks, size_t eagerBytes);

  ShmSegment segment_;
  int nranks_;
  size_t eagerBytes_;
  size_t slotStride_;  // bytes from one post slot to the next
  size_t rankStride_;  // bytes from one rank's area to the next
  char* ranks_ = nullptr;  // rank 0's area (one line after the segment header)
};

}  // namespace loom::transport
