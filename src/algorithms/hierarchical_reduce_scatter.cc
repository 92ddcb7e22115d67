// SPDX-License-Identifier: Apache-2.0
// Hierarchical reduce-scatter for K hosts x R ranks (shape.hosts uniform, K, R >= 2); send
// holds one block of `count` elements per rank, in rank order, and rank r ends with block r
// reduced over every rank, in recv:
//   1. within each host, a ring reduce-scatter of the columns (column j = the K blocks of the
//      ranks (0..K-1, j), each at its rank's offset: not contiguous where hosts interleave):
//      local rank l ends with column l reduced over its host, in scratch (block of rank q at
//      q x blockBytes, partial sums of other columns too, so nothing is overwritten that a
//      later step still reads);
//   2. between hosts, a ring reduce-scatter of column l among the K ranks of local index l:
//      each reduction adds another host's partial sum (Step::partialLocal for avg) in place in
//      scratch, and the last one brings this rank's own block into recv.
//   avg: each rank divides its own block once, at the end.
// Phase 2 moves a block's pieces as soon as phase 1 has reduced them. Each rank sends K
// blocks to host mates and (K-1) blocks to other hosts.
// In place (recv is send's block r): that block is read only by phase 1's last reduction, on
// which the write into recv depends.
#include "algorithms/host_rings.h"

namespace loom::algo {

Schedule hierarchicalReduceScatter(const CollectiveShape& shape) {
  const HostPlace place = hostPlace(shape);
  const size_t blockBytes = shape.count * shape.elementBytes;
  const std::vector<size_t> rankOf = unitRanks(place);
  // Send and scratch hold every unit at its rank's block; recv only this rank's, at 0.
  UnitRings rings(shape, place, std::vector<size_t>(rankOf.size(), blockBytes),
                  [&rankOf, blockBytes](Buffer buffer, int unit) {
                    return buffer == Buffer::Recv ? 0 : rankOf[static_cast<size_t>(unit)] * blockBytes;
                  });
  const int h = place.host, l = place.index;
  rings.reduceScatter(ringWithinHost(place), [&](int j) { return rings.column(j, h - 1); }, Buffer::Scratch,
                      Buffer::Scratch);
  rings.reduceScatter(ringAcrossHosts(place), [&](int i) { return std::vector<int>{rings.unit(i, l)}; },
                      Buffer::Scratch, Buffer::Recv);
  if (shape.average) rings.divide(rings.unit(h, l));
  return rings.finish(static_cast<size_t>(shape.nranks) * blockBytes);
}

}  // namespace loom::algo
