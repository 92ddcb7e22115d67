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
  const size_t blockBytes = shape.count * shape.elementBytes;
  auto wrap = [&](int index) { return ((index % n) + n) % n; };
  auto blockOffset = [&](int index) { return static_cast<size_t>(wrap(index)) * blockBytes; };

  if (n == 1) {
    builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, blockBytes},
                     Range{Buffer::Send, 0, blockBytes}});
    return builder.finish();
  }
  const int left = (r - 1 + n) % n;
  const int right = (r + 1) % n;
  const size_t pieces = builder.pieceCount(blockBytes);
  std::vector<int> lastStep(pieces, -1);
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const int sendBlock = r - s - 1;
    const int recvBlock = r - s - 2;
    std::vector<int> produced(pieces, -1);
    for (size_t p = 0; p < pieces; ++p) {
      Range source = s == 0 ? builder.piece(Buffer::Send, blockOffset(sendBlock), blockBytes, p)
                            : builder.piece(Buffer::Scratch, blockOffset(sendBlock), blockBytes, p);
      Step send{StepKind::Send, right, {}, source};
      send.dependsOn = lastStep[p];
      builder.add(send);
      Range dst = last ? builder.piece(Buffer::Recv, 0, blockBytes, p)
                       : builder.piece(Buffer::Scratch, blockOffset(recvBlock), blockBytes, p);
      Range local = builder.piece(Buffer::Send, blockOffset(recvBlock), blockBytes, p);
      produced[p] = builder.add(Step{StepKind::RecvReduce, left, dst, local});
    }
    lastStep = std::move(produced);
  }
  if (shape.average) {
    for (size_t p = 0; p < pieces; ++p) {
      Step divide{StepKind::Divide, -1, builder.piece(Buffer::Recv, 0, blockBytes, p), {}};
      divide.dependsOn = lastStep[p];
      builder.add(divide);
    }
  }
  return builder.finish(n > 2 ? static_cast<size_t>(n) * blockBytes : 0);
}

}  // namespace loom::algo
