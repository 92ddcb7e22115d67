// SPDX-License-Identifier: Apache-2.0
// Ring all-gather: recv holds n blocks of `count` elements, block j from rank j.
//   Our own block goes into recv by a local copy (skipped when in place, i.e. when send is
//   recv's block r — the executor sees the same address).
//   Step s = 0..n-2: send block (r-s) to the right — step 0 from the input itself, so it
//   does not wait for the copy; receive block (r-s-1) from the left into recv. Each later
//   step forwards, piece by piece, what the previous step received.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule ringAllGather(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const int n = shape.nranks;
  const int r = shape.rank;
  const RingBlocks ring = ringBlocks(shape);

  builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, ring.offset(r), ring.blockBytes},
                   Range{Buffer::Send, 0, ring.blockBytes}});
  if (n == 1) return builder.finish();

  const size_t pieces = builder.pieceCount(ring.blockBytes);
  std::vector<int> lastStep(pieces, -1);
  for (int s = 0; s < n - 1; ++s) {
    std::vector<int> produced(pieces, -1);
    for (size_t p = 0; p < pieces; ++p) {
      Range source = s == 0 ? builder.piece(Buffer::Send, 0, ring.blockBytes, p)
                            : builder.piece(Buffer::Recv, ring.offset(r - s), ring.blockBytes, p);
      Step send{StepKind::Send, ring.right, {}, source};
      send.dependsOn = lastStep[p];
      builder.add(send);
      produced[p] = builder.add(Step{
          StepKind::Recv, ring.left, builder.piece(Buffer::Recv, ring.offset(r - s - 1), ring.blockBytes, p), {}});
    }
    lastStep = std::move(produced);
  }
  return builder.finish();
}

}  // namespace loom::algo
