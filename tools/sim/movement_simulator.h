// SPDX-License-Identifier: Apache-2.0
// A provenance simulator for schedules that move data (all-to-all(v), gather, scatter,
// point-to-point batches, the barrier). simulator.h tracks which ranks' inputs an element
// contains, which is what a reduction needs; it cannot tell which element of an input landed
// where. Here every byte of every rank's memory starts out labelled with where it is (rank,
// byte of that rank's memory), and steps move labels, so at the end each byte says exactly
// where its content came from, and a write count per byte says what was touched at all.
//
// It runs the schedules the strictest way the transports allow: a message moves only when the
// sender's send and the receiver's matching receive are both at the front of their lanes and
// ready (a rendezvous, as when no byte of it fits in a slot); whatever completes this way also
// completes when transports buffer. Each lane (peer, direction) moves on its own, as in the
// executor. Before running it checks each rank's schedule statically: steps that may run at
// the same time (no chain of dependencies or lane order between them) never touch the same
// byte when one of them writes it. It also follows causality: which ranks' start of the call
// happened before each rank finished (a receive learns what its matching send knew).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "rank_set.h"

namespace loom::algo {

// Where a byte's content started: a rank and a byte of that rank's memory (its arena).
struct Origin {
  int32_t rank = -1;
  uint32_t at = 0;
  bool operator==(const Origin&) const = default;
};

// One of a rank's buffers inside its arena. Buffers may alias (the in-place forms). A buffer
// that is not `present` is a NULL pointer: any step touching it is an error.
struct Region {
  bool present = false;
  size_t at = 0;
  size_t bytes = 0;
};

// One rank: its schedule and where each of the schedule's buffers lies, by Buffer value (send,
// recv, scratch, then a batch's user buffers).
struct RankProgram {
  Schedule schedule;
  std::vector<Region> buffers;
  size_t arenaBytes = 0;
};

struct MovementResult {
  std::vector<std::vector<Origin>> memory;    // by rank, by arena byte: what it holds at the end
  std::vector<std::vector<uint32_t>> writes;  // by rank, by arena byte: how many steps wrote it
  // By rank: the ranks whose start of the call happened before this rank finished (rank j in
  // it: a chain of dependencies, lane order and messages leads from rank j's start to here).
  std::vector<RankSet> heardFrom;
  size_t messages = 0;
  size_t bytes = 0;
};

// Runs programs[r] as rank r, for any number of ranks (each step keeps a rank set, n / 64 words
// beyond 64 ranks). Throws loom::Error(loomInternalError) naming the first violation: a step
// kind that moves no data as-is (reductions, divides), a range out of its buffer or in a NULL
// one, a write into the send buffer, a zero-byte step, a dependency on a later step, a send to
// an invalid peer or to itself, two unordered steps touching one byte with a write, a message
// whose size or point-to-point tag differs from its receive's, and a deadlock (with the steps
// that can never run).
MovementResult simulateMovement(const std::vector<RankProgram>& programs);

// What a schedule promises, byte by byte: untouched (never written), holding a given origin,
// or free (scratch: anything).
struct Promise {
  enum class Kind : uint8_t { Untouched, Holds, Free };
  struct Byte {
    Kind kind = Kind::Untouched;
    Origin origin;
  };
  std::vector<std::vector<Byte>> bytes;  // by rank, by arena byte

  Promise() = default;
  // Every byte untouched, scratch free.
  explicit Promise(const std::vector<RankProgram>& programs);
  // `count` bytes of rank `rank` from arena byte `at` on hold the bytes of rank `fromRank`
  // from its arena byte `fromAt` on, in order.
  void holds(int rank, size_t at, int fromRank, size_t fromAt, size_t count);
};

// "" when `result` keeps `promise`, else the first broken byte, named by buffer.
std::string verifyPromise(const std::vector<RankProgram>& programs, const Promise& promise,
                          const MovementResult& result);

// "rank 3 recv byte 17" (the first buffer holding the byte, in Buffer order).
std::string describeByte(const std::vector<RankProgram>& programs, int rank, size_t at);

}  // namespace loom::algo
