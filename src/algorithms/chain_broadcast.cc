// SPDX-License-Identifier: Apache-2.0
// Pipelined chain broadcast: ranks in order root, root+1, ..., root+n-1 (mod n). The root
// streams its input to the next rank piece by piece; every other rank receives each piece
// into recv and forwards it as soon as it has arrived, so for large messages all links are
// busy at once and the time approaches one message transfer plus n-1 piece latencies.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule chainBroadcast(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const auto [position, next, previous, bytes] = chainPlace(shape);
  const bool hasNext = position < shape.nranks - 1;

  if (position == 0) {
    builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, bytes}, Range{Buffer::Send, 0, bytes}});
  }
  for (size_t p = 0; p < builder.pieceCount(bytes); ++p) {
    if (position == 0) {
      if (hasNext) {
        builder.add(Step{StepKind::Send, next, {}, builder.piece(Buffer::Send, 0, bytes, p)});
      }
      continue;
    }
    int received =
        builder.add(Step{StepKind::Recv, previous, builder.piece(Buffer::Recv, 0, bytes, p), {}});
    if (hasNext) {
      Step send{StepKind::Send, next, {}, builder.piece(Buffer::Recv, 0, bytes, p)};
      send.dependsOn = received;
      builder.add(send);
    }
  }
  return builder.finish();
}

}  // namespace loom::algo
