// SPDX-License-Identifier: Apache-2.0
// Hierarchical reduce for K hosts x R ranks (shape.hosts uniform, K, R >= 2): the broadcast's
// chains (hierarchical_broadcast.cc) run backwards. With the root at (host hr, index lr):
//   within each host, a pipelined chain reduce toward the host's rank of index lr: the far end
//     (index lr+R-1) sends its input; every rank between receives the partial sum of the ranks
//     behind it, adds its own input (into scratch: recv is only the root's) and forwards it;
//     the chain's head adds its own input too: the host's partial sum;
//   between hosts, a pipelined chain reduce among those heads toward the root's host: each
//     head adds the partial sum of the hosts behind it to its host's (in place: a sum of two
//     partial sums, Step::partialLocal for avg) and forwards it; the root's is the result,
//     in recv.
//   avg: the root divides once at the end.
// Each piece moves on as soon as it has been reduced, so both chains are busy at once for
// large messages. A non-root's recv is never written (in place, its input stays as it was).
#include "algorithms/host_rings.h"

namespace loom::algo {

Schedule hierarchicalReduce(const CollectiveShape& shape) {
  const HostPlace place = hostPlace(shape);
  const size_t root = static_cast<size_t>(shape.root);
  const int rootHost = place.layout->hostOf[root], rootIndex = place.layout->localOf[root];
  const int h = place.host, l = place.index;
  const int hostPosition = place.hostPosition(rootHost), localPosition = place.localPosition(rootIndex);
  const bool isRoot = shape.rank == shape.root;
  const bool head = localPosition == 0;
  const bool farMate = localPosition == place.local - 1;  // the host chain's far end
  const bool farHost = hostPosition == place.hosts - 1;   // the chain between hosts' far end
  const size_t bytes = shape.count * shape.elementBytes;
  const int towardHead = place.rankAt(h, l - 1), awayFromHead = place.rankAt(h, l + 1);

  ScheduleBuilder builder(shape);
  const Buffer partial = isRoot ? Buffer::Recv : Buffer::Scratch;
  for (size_t p = 0; p < builder.pieceCount(bytes); ++p) {
    const Range input = builder.piece(Buffer::Send, 0, bytes, p);
    if (farMate) {
      builder.add(Step{StepKind::Send, towardHead, {}, input});
      continue;
    }
    const Range sum = builder.piece(partial, 0, bytes, p);
    Step reduce{StepKind::RecvReduce, awayFromHead, sum, input};
    reduce.rawIncoming = localPosition == place.local - 2;  // the far end sends its own input
    int reduced = builder.add(reduce);
    if (!head) {
      Step send{StepKind::Send, towardHead, {}, sum};
      send.dependsOn = reduced;
      builder.add(send);
      continue;
    }
    if (!farHost) {
      Step hosts{StepKind::RecvReduce, place.rankAt(h + 1, l), sum, sum};
      hosts.partialLocal = true;
      hosts.dependsOn = reduced;  // this host's sum is there
      reduced = builder.add(hosts);
    }
    if (!isRoot) {
      Step send{StepKind::Send, place.rankAt(h - 1, l), {}, sum};
      send.dependsOn = reduced;
      builder.add(send);
    } else if (shape.average) {
      Step divide{StepKind::Divide, -1, sum, {}};
      divide.dependsOn = reduced;
      builder.add(divide);
    }
  }
  return builder.finish(!isRoot && !farMate ? bytes : 0);
}

}  // namespace loom::algo
