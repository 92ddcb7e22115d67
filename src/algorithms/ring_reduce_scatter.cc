// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter: send holds n blocks of `count` elements; rank r ends with block r
// reduced over all ranks, in recv.
//   Step s = 0..n-2: send block (r-s-1) to the right; receive block (r-s-2) from the left and
//   reduce it with our own input block. Step 0 sends our raw input; later steps forward the
//   partial sum the previous step produced. Partial sums live in scratch (block j at
//   j*blockBytes) so no range is overwritten while a later step may still read it; the last
//   step receives block r and reduces it straight into recv.
//   avg: divide our block once at the end.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule ringReduceScatter(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const int n = shape.nranks;
  const int r = shape.rank;
  const RingBlocks ring = ringBlocks(shape);

  if (n == 1) {
    builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, ring.blockBytes},
                     Range{Buffer::Send, 0, ring.blockBytes}});
    return builder.finish();
  }
  const size_t pieces = builder.pieceCount(ring.blockBytes);
  std::vector<int> lastStep(pieces, -1);
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const int sendBlock = r - s - 1;
    const int recvBlock = r - s - 2;
    std::vector<int> produced(pieces, -1);
    for (size_t p = 0; p < pieces; ++p) {
      Range source = s == 0 ? builder.piece(Buffer::Send, ring.offset(sendBlock), ring.blockBytes, p)
                            : builder.piece(Buffer::Scratch, ring.offset(sendBlock), ring.blockBytes, p);
      Step send{StepKind::Send, ring.right, {}, source};
      send.dependsOn = lastStep[p];
      builder.add(send);
      Range dst = last ? builder.piece(Buffer::Recv, 0, ring.blockBytes, p)
                       : builder.piece(Buffer::Scratch, ring.offset(recvBlock), ring.blockBytes, p);
      Range local = builder.piece(Buffer::Send, ring.offset(recvBlock), ring.blockBytes, p);
      Step reduce{StepKind::RecvReduce, ring.left, dst, local};
      reduce.rawIncoming = s == 0;  // step 0 brings the left neighbour's own input (avg scales it)
      produced[p] = builder.add(reduce);
    }
    lastStep = std::move(produced);
  }
  if (shape.average) {
    for (size_t p = 0; p < pieces; ++p) {
      Step divide{StepKind::Divide, -1, builder.piece(Buffer::Recv, 0, ring.blockBytes, p), {}};
      divide.dependsOn = lastStep[p];
      builder.add(divide);
    }
  }
  return builder.finish(n > 2 ? static_cast<size_t>(n) * ring.blockBytes : 0);
}

}  // namespace loom::algo
