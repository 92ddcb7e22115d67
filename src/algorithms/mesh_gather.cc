// SPDX-License-Identifier: Apache-2.0
// Gather over the full mesh: every rank sends its block straight to the root, which receives
// from all of them at once (one receive lane per peer in the executor) into block i of its
// output, and copies its own block unless it is already in place. One message per rank, no
// forwarding: the root's link carries exactly (n-1) blocks, the least any algorithm can.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule meshGather(const CollectiveShape& shape) {
  const size_t block = shape.count * shape.elementBytes;
  ScheduleBuilder builder(shape);
  if (shape.rank != shape.root) {
    builder.add(Step{StepKind::Send, shape.root, {}, Range{Buffer::Send, 0, block}});
    return builder.finish();
  }
  for (int s = 1; s < shape.nranks; ++s) {
    const int from = (shape.root + s) % shape.nranks;
    builder.add(Step{StepKind::Recv, from, Range{Buffer::Recv, static_cast<size_t>(from) * block, block}, {}});
  }
  builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, static_cast<size_t>(shape.root) * block, block},
                   Range{Buffer::Send, 0, block}});
  return builder.finish();
}

}  // namespace loom::algo
