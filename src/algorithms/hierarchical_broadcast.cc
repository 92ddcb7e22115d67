// SPDX-License-Identifier: Apache-2.0
// Hierarchical broadcast for K hosts x R ranks (shape.hosts uniform, K, R >= 2). With the root
// at (host hr, local index lr):
//   between hosts, a pipelined chain among the ranks of local index lr, host hr, hr+1, ...,
//     hr+K-1 (mod K): each receives a piece from the host before and forwards it at once;
//   within each host, a pipelined chain from that host's rank of index lr through lr+1, ...,
//     lr+R-1 (mod R).
// A chain's head on each host forwards every piece twice, first to the next host (the longer
// path), then to its host mate. The message crosses between hosts K-1 times in all, once per
// host, where the flat chain crosses wherever two consecutive ranks are on different hosts.
// The root copies its input to recv (skipped in place) and sends from the input itself.
#include "algorithms/host_rings.h"

namespace loom::algo {

Schedule hierarchicalBroadcast(const CollectiveShape& shape) {
  const HostPlace place = hostPlace(shape);
  const size_t root = static_cast<size_t>(shape.root);
  const int rootHost = place.layout->hostOf[root], rootIndex = place.layout->localOf[root];
  const int h = place.host, l = place.index;
  const int hostPosition = place.hostPosition(rootHost), localPosition = place.localPosition(rootIndex);
  const bool isRoot = shape.rank == shape.root;
  const bool head = localPosition == 0;  // this host's rank on the chain between hosts
  const bool nextHost = head && hostPosition < place.hosts - 1;
  const bool nextMate = localPosition < place.local - 1;
  const size_t bytes = shape.count * shape.elementBytes;

  ScheduleBuilder builder(shape);
  if (isRoot) builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, bytes}, Range{Buffer::Send, 0, bytes}});
  for (size_t p = 0; p < builder.pieceCount(bytes); ++p) {
    int received = -1;
    if (!isRoot) {
      const int from = head ? place.rankAt(h - 1, l) : place.rankAt(h, l - 1);
      received = builder.add(Step{StepKind::Recv, from, builder.piece(Buffer::Recv, 0, bytes, p), {}});
    }
    const Range source = builder.piece(isRoot ? Buffer::Send : Buffer::Recv, 0, bytes, p);
    if (nextHost) {
      Step send{StepKind::Send, place.rankAt(h + 1, l), {}, source};
      send.dependsOn = received;
      builder.add(send);
    }
    if (nextMate) {
      Step send{StepKind::Send, place.rankAt(h, l + 1), {}, source};
      send.dependsOn = received;
      builder.add(send);
    }
  }
  return builder.finish();
}

}  // namespace loom::algo
