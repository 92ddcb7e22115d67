// SPDX-License-Identifier: Apache-2.0
// Hierarchical all-gather for K hosts x R ranks (shape.hosts uniform, K, R >= 2); recv holds
// one block of `count` elements per rank, in rank order, whatever host a rank is on:
//   1. between hosts, a ring all-gather among the K ranks of this rank's local index l: each
//      gathers the blocks of every rank (i, l), its own first (sent from the input itself;
//      the input also goes into recv by a local copy, skipped in place);
//   2. within each host, a ring all-gather of the columns: column j is the K blocks of the
//      ranks (0..K-1, j), moved one block after the other in the order phase 1 brought them,
//      so a block leaves for the host mates as soon as it has arrived from another host.
// Each rank sends (K-1) blocks to another host and K blocks to host mates. Blocks sit at
// their ranks' offsets, so interleaved layouts (ranks of one host not contiguous) need nothing
// special; a column is simply not contiguous there.
#include "algorithms/host_rings.h"

namespace loom::algo {

Schedule hierarchicalAllGather(const CollectiveShape& shape) {
  const HostPlace place = hostPlace(shape);
  const size_t blockBytes = shape.count * shape.elementBytes;
  const std::vector<size_t> rankOf = unitRanks(place);
  // The input is this rank's unit alone, at the start of send; recv holds every unit.
  UnitRings rings(shape, place, std::vector<size_t>(rankOf.size(), blockBytes),
                  [&rankOf, blockBytes](Buffer buffer, int unit) {
                    return buffer == Buffer::Send ? 0 : rankOf[static_cast<size_t>(unit)] * blockBytes;
                  });
  rings.builder().add(Step{StepKind::Copy, -1,
                           Range{Buffer::Recv, static_cast<size_t>(shape.rank) * blockBytes, blockBytes},
                           Range{Buffer::Send, 0, blockBytes}});
  const int h = place.host, l = place.index;
  rings.allGather(ringAcrossHosts(place), [&](int i) { return std::vector<int>{rings.unit(i, l)}; }, Buffer::Recv);
  rings.allGather(ringWithinHost(place), [&](int j) { return rings.column(j, h); }, Buffer::Recv);
  return rings.finish();
}

}  // namespace loom::algo
