// SPDX-License-Identifier: Apache-2.0
#include "transport/shm/shm_arena.h"

#include <unistd.h>

#include <exception>
#include <new>
#include <vector>

#include "base/error.h"
#include "base/log.h"

namespace loom::transport {

namespace {

constexpr uint64_t kArenaMagic = 0x6c6f6f6d6172656eULL;  // "loomaren"
constexpr uint32_t kArenaVersion = 2;  // 2: departed line

size_t roundUp(size_t bytes, size_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }

// Per rank: [post slot parity 0][post slot parity 1][progress][done][doorbell][departed]; the first
// rank's area starts one line after the segment header.
struct Geometry {
  size_t slotStride;
  size_t rankStride;
  size_t total;
};

Geometry geometry(int nranks, size_t eagerBytes) {
  Geometry g;
  g.slotStride = roundUp(kPostPayloadOffset + eagerBytes, 64);
  g.rankStride = 2 * g.slotStride + 4 * 64;
  g.total = 64 + g.rankStride * static_cast<size_t>(nranks);
  return g;
}

}  // namespace

ShmArena::ShmArena(ShmSegment segment, int nranks, size_t eagerBytes)
    : segment_(std::move(segment)), nranks_(nranks), eagerBytes_(eagerBytes) {
  const Geometry g = geometry(nranks, eagerBytes);
  slotStride_ = g.slotStride;
  rankStride_ = g.rankStride;
  ranks_ = static_cast<char*>(segment_.data()) + 64;
}

CounterLine& ShmArena::progress(int rank) const {
  char* base = static_cast<char*>(segment_.data()) + 64 + rankStride_ * static_cast<size_t>(rank);
  return *reinterpret_cast<CounterLine*>(base + 2 * slotStride_);
}

CounterLine& ShmArena::done(int rank) const {
  return *reinterpret_cast<CounterLine*>(reinterpret_cast<char*>(&progress(rank)) + 64);
}

DoorbellWord& ShmArena::doorbell(int rank) const {
  return *reinterpret_cast<DoorbellWord*>(reinterpret_cast<char*>(&progress(rank)) + 128);
}

CounterLine& ShmArena::departed(int rank) const {
  return *reinterpret_cast<CounterLine*>(reinterpret_cast<char*>(&progress(rank)) + 192);
}

// Collective; like the shm transport's setup, a failure is held until both barriers are
// passed, so no rank is left waiting for one that gave up.
std::unique_ptr<ShmArena> ShmArena::create(Bootstrap& bootstrap, const std::string& name,
                                           size_t eagerBytes, int /*timeoutMs*/) {
  const int nranks = bootstrap.size();
  const Geometry g = geometry(nranks, eagerBytes);
  std::exception_ptr failure;
  ShmSegment segment;
  if (bootstrap.rank() == 0) {
    try {
      segment = ShmSegment::create(name, g.total);
      segment.stampHeader(kArenaMagic, kArenaVersion);
      // The memory reads as zeros; the atomics still get constructed where they live.
      for (int rank = 0; rank < nranks; ++rank) {
        char* area = static_cast<char*>(segment.data()) + 64 + g.rankStride * static_cast<size_t>(rank);
        new (area) PostHeader{};
        new (area + g.slotStride) PostHeader{};
        new (area + 2 * g.slotStride) CounterLine{};
        new (area + 2 * g.slotStride + 64) CounterLine{};
        new (area + 2 * g.slotStride + 128) DoorbellWord{};
        new (area + 2 * g.slotStride + 192) CounterLine{};
      }
    } catch (...) {
      failure = std::current_exception();
    }
  }
  // Every rank learns where rank 0 shares the arena (fd -1: it failed); also the barrier
  // before the others open it.
  struct Published {
    int32_t pid;
    int32_t fd;
  };
  std::vector<Published> published(nranks, Published{0, -1});
  published[bootstrap.rank()] = Published{static_cast<int32_t>(getpid()), segment.fd()};
  bootstrap.allGather(published.data(), sizeof(Published));
  if (bootstrap.rank() != 0 && !failure) {
    try {
      segment = ShmSegment::open(published[0].pid, published[0].fd, name, g.total);
      segment.checkHeader(kArenaMagic, kArenaVersion, "shared arena");
    } catch (...) {
      failure = std::current_exception();
    }
  }
  bootstrap.barrier();
  segment.stopSharing();  // everyone has it mapped (or gave up)
  if (failure) std::rethrow_exception(failure);
  LOOM_INFO(SHM, "shm arena: %d ranks, %zu eager bytes per post slot, %zu bytes", nranks,
            eagerBytes, g.total);
  return std::unique_ptr<ShmArena>(new ShmArena(std::move(segment), nranks, eagerBytes));
}

}  // namespace loom::transport
