// SPDX-License-Identifier: Apache-2.0
// Scatter over the full mesh: the root sends block i of its input straight to rank i, to all
// of them at once (one send lane per peer in the executor), and copies its own block unless it
// is already in place. One message per rank: the root's link carries exactly (n-1) blocks.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule meshScatter(const CollectiveShape& shape) {
  const size_t block = shape.count * shape.elementBytes;
  ScheduleBuilder builder(shape);
  if (shape.rank != shape.root) {
    builder.add(Step{StepKind::Recv, shape.root, Range{Buffer::Recv, 0, block}, {}});
    return builder.finish();
  }
  for (int s = 1; s < shape.nranks; ++s) {
    const int to = (shape.root + s) % shape.nranks;
    builder.add(Step{StepKind::Send, to, {}, Range{Buffer::Send, static_cast<size_t>(to) * block, block}});
  }
  builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, block},
                   Range{Buffer::Send, static_cast<size_t>(shape.root) * block, block}});
  return builder.finish();
}

}  // namespace loom::algo
