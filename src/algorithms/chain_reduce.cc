// SPDX-License-Identifier: Apache-2.0
// Pipelined chain reduce: ranks in order root, root+1, ..., root+n-1 (mod n); data flows
// from the far end of the chain toward the root. The last rank sends its input; every rank
// in between receives the partial result of the ranks behind it, reduces its own input into
// it (in scratch: recv is only the root's) and forwards it; the root reduces into recv.
// Every piece moves independently, so the chain is busy end to end for large messages.
// avg: the root divides once at the end.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule chainReduce(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const int n = shape.nranks;
  const auto [position, awayFromRoot, towardRoot, bytes] = chainPlace(shape);

  if (n == 1) {
    builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, bytes}, Range{Buffer::Send, 0, bytes}});
    return builder.finish();
  }
  const bool isRoot = position == 0;
  const bool isEnd = position == n - 1;
  for (size_t p = 0; p < builder.pieceCount(bytes); ++p) {
    Range input = builder.piece(Buffer::Send, 0, bytes, p);
    if (isEnd) {
      builder.add(Step{StepKind::Send, towardRoot, {}, input});
      continue;
    }
    Range partial = builder.piece(isRoot ? Buffer::Recv : Buffer::Scratch, 0, bytes, p);
    Step reduce{StepKind::RecvReduce, awayFromRoot, partial, input};
    reduce.rawIncoming = position == n - 2;  // the far end sends its own input (avg scales it)
    int reduced = builder.add(reduce);
    if (isRoot) {
      if (shape.average) {
        Step divide{StepKind::Divide, -1, partial, {}};
        divide.dependsOn = reduced;
        builder.add(divide);
      }
      continue;
    }
    Step send{StepKind::Send, towardRoot, {}, partial};
    send.dependsOn = reduced;
    builder.add(send);
  }
  return builder.finish(!isRoot && !isEnd ? bytes : 0);
}

}  // namespace loom::algo
