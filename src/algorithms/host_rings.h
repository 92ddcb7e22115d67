// SPDX-License-Identifier: Apache-2.0
// What the hierarchical all-reduce, all-gather and reduce-scatter are made of: ring phases over
// "units", one per (host, local index) of a uniform host layout (K hosts x R ranks).
//
// A unit is a part of the message that sits at a known offset in each buffer: all-reduce cuts
// its buffer into R blocks and each block into K units (so a host's column of units is one
// block); all-gather and reduce-scatter have one unit per rank, at that rank's block. Two kinds
// of ring run over them:
//   within a host, ring positions are local indices and ring item j is the column of units
//     (0..K-1, j), K units that move one after the other;
//   between hosts, the K ranks of one local index l form a ring (one per local index, as
//     NCCL's channels cross nodes) whose item i is the single unit (i, l).
// A reduce-scatter phase leaves this rank with its own item reduced over the ring's members; an
// all-gather phase gives it every item of the ring.
//
// UnitRings remembers, for every piece of every unit, where its current value lives (the send
// buffer while it is this rank's raw input) and the step that produced it: a step that reads a
// piece depends on that step. A unit is cut into the same pieces in every phase (from its own
// start), so each dependency is one step, and a piece of a later phase starts as soon as the
// same piece of the phase before is there: the phases overlap as the ring's steps do.
//
// Avg: a reduction whose local operand is this rank's raw input scales it (reduce_ops.h); one
// whose local operand is already a partial sum (between hosts) is marked partialLocal and sums
// plainly. Whoever calls divide() on a unit does so for exactly one rank.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/schedule.h"

namespace loom::algo {

// This rank's place in shape.hosts (uniform), and its neighbours.
struct HostPlace {
  const HostLayout* layout;
  int hosts;  // K
  int local;  // R: ranks a host
  int host;   // this rank's host
  int index;  // this rank's local index
  int rankAt(int host, int index) const { return layout->rankAt(host, index); }
  int hostPosition(int rootHost) const { return ((host - rootHost) % hosts + hosts) % hosts; }
  int localPosition(int rootIndex) const { return ((index - rootIndex) % local + local) % local; }
};
HostPlace hostPlace(const CollectiveShape& shape);
// By unit (host i, local index j) = i * R + j: the rank it belongs to (all-gather and
// reduce-scatter keep a rank's unit at that rank's block).
std::vector<size_t> unitRanks(const HostPlace& place);

// One ring of a phase: its member count, this rank's position in it, and its neighbours.
struct PhaseRing {
  int n;
  int position;
  int left;   // receives from
  int right;  // sends to
};
// The ring of this rank's host (positions are local indices).
PhaseRing ringWithinHost(const HostPlace& place);
// The ring of the ranks of this rank's local index, one per host (positions are hosts).
PhaseRing ringAcrossHosts(const HostPlace& place);

class UnitRings {
 public:
  // Where unit `unit` starts in `buffer` (bytes).
  using Offset = std::function<size_t(Buffer buffer, int unit)>;
  // Ring item `item` (any integer: taken mod the ring's size by the caller's function) as the
  // units it holds, in the order they move.
  using Items = std::function<std::vector<int>(int item)>;

  // Units are numbered host-major: (host i, local j) is i * R + j. Each starts in Buffer::Send.
  UnitRings(const CollectiveShape& shape, const HostPlace& place, std::vector<size_t> unitBytes, Offset offset);

  int unit(int host, int index) const;
  // Column `index`'s units, starting at host `firstHost` and going down: firstHost, firstHost-1, ...
  std::vector<int> column(int index, int firstHost) const;

  // Step s = 0..n-2: send item (position-s-1) to the right, receive item (position-s-2) from
  // the left and reduce it with this rank's value of it into `partial` (the last step, which
  // brings this rank's own item, into `last`).
  void reduceScatter(const PhaseRing& ring, const Items& items, Buffer partial, Buffer last);
  // Step s = 0..n-2: send item (position-s) to the right, receive item (position-s-1) from the
  // left into `into`.
  void allGather(const PhaseRing& ring, const Items& items, Buffer into);
  // avg: divides `unit` where it is now.
  void divide(int unit);

  ScheduleBuilder& builder() { return builder_; }
  Schedule finish(size_t scratchBytes = 0) { return builder_.finish(scratchBytes); }

 private:
  Range piece(Buffer buffer, int unit, size_t index) const;

  ScheduleBuilder builder_;
  int local_;
  int hosts_;
  std::vector<size_t> bytes_;               // by unit
  Offset offset_;
  std::vector<Buffer> where_;               // by unit: where its current value is
  std::vector<std::vector<int>> producer_;  // by unit and piece: the step that wrote it, or -1
};

}  // namespace loom::algo
