// SPDX-License-Identifier: Apache-2.0
// Hierarchical all-reduce for K hosts x R ranks (shape.hosts uniform, K, R >= 2), in three
// phases that overlap piece by piece (host_rings.h):
//   1. within each host, a ring reduce-scatter of R blocks (block j = splitBlock(count, R, j)):
//      local rank l ends with block l reduced over its host, in recv;
//   2. between hosts, an all-reduce of block l among the K ranks of local index l (one ring per
//      local index): a ring reduce-scatter of the block's K units (unit i =
//      splitBlock(block, K, i)), after which rank (host h, l) owns unit (h, l) reduced over every
//      rank, then a ring all-gather of those units;
//   3. within each host, a ring all-gather of the blocks.
// Each rank sends 2(R-1)/R of the buffer to host mates and 2(K-1)/(KR) of it to other hosts
// (the flat ring across hosts sends 2(n-1)/n per rank, all of it on links that may cross).
// avg: the owner of a unit divides it once, after phase 2's reduce-scatter; sums of partial
// sums between hosts add plainly (Step::partialLocal). Steps of zero bytes are never emitted,
// so counts below K x R leave some units, and their messages, empty.
//
// In place (send is recv): phase 1's first send reads block l-1 of the input, which only the
// final value (phase 3) overwrites, and that value reaches this rank only after the ring has
// received the send; every other range is read before it is written, as in ring_allreduce.cc.
#include "algorithms/host_rings.h"

namespace loom::algo {

Schedule hierarchicalAllReduce(const CollectiveShape& shape) {
  const HostPlace place = hostPlace(shape);
  const int k = place.hosts, r = place.local;
  const size_t elem = shape.elementBytes;
  std::vector<size_t> offsets(static_cast<size_t>(k * r)), bytes(offsets.size());
  for (int j = 0; j < r; ++j) {
    const Block block = splitBlock(shape.count, r, j);
    for (int i = 0; i < k; ++i) {
      const Block unit = splitBlock(block.size, k, i);
      offsets[static_cast<size_t>(i * r + j)] = (block.first + unit.first) * elem;
      bytes[static_cast<size_t>(i * r + j)] = unit.size * elem;
    }
  }
  UnitRings rings(shape, place, std::move(bytes),
                  [&offsets](Buffer, int unit) { return offsets[static_cast<size_t>(unit)]; });
  const PhaseRing host = ringWithinHost(place), across = ringAcrossHosts(place);
  const int h = place.host, l = place.index;
  // Phase 1 moves a column's units in the order phase 2 first needs them; phase 3 in the
  // order phase 2 finishes them (this rank's own unit first).
  rings.reduceScatter(host, [&](int j) { return rings.column(j, h - 1); }, Buffer::Recv, Buffer::Recv);
  const auto mine = [&](int i) { return std::vector<int>{rings.unit(i, l)}; };
  rings.reduceScatter(across, mine, Buffer::Recv, Buffer::Recv);
  if (shape.average) rings.divide(rings.unit(h, l));
  rings.allGather(across, mine, Buffer::Recv);
  rings.allGather(host, [&](int j) { return rings.column(j, h); }, Buffer::Recv);
  return rings.finish();
}

}  // namespace loom::algo
