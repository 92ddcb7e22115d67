// SPDX-License-Identifier: Apache-2.0
// All-to-all over the full mesh: block j of this rank's input goes to rank j, and block i of
// its output comes from rank i. In round s (1..n-1) rank r sends to r+s and receives from r-s
// (mod n), so in every round each rank sends to one rank and receives from another, and no
// two ranks aim at the same receiver at once when they post in order. Every message is
// posted at once (one send lane and one receive lane per peer in the executor), so the rounds
// overlap rather than run as a loop of blocking exchanges; a rank's own block is a local copy.
// Each message is one step: the transport cuts it into slots or frames, and each peer's lane
// pipelines on its own.
//
// All-to-all-v is the same with per-peer counts and displacements (shape.layout, elements).
#include "algorithms/schedule.h"
#include "base/error.h"

namespace loom::algo {

Schedule meshAllToAll(const CollectiveShape& shape) {
  const int n = shape.nranks;
  const int r = shape.rank;
  const size_t unit = shape.elementBytes;
  const VectorLayout* layout = shape.layout;
  if (shape.collective == Collective::AllToAllv && layout == nullptr) throwInternal("alltoallv schedule without counts");
  // Where block j of the input and block i of the output sit, in bytes.
  auto sendRange = [&](int j) {
    return layout ? Range{Buffer::Send, layout->sendDispls[j] * unit, layout->sendCounts[j] * unit}
                  : Range{Buffer::Send, static_cast<size_t>(j) * shape.count * unit, shape.count * unit};
  };
  auto recvRange = [&](int i) {
    return layout ? Range{Buffer::Recv, layout->recvDispls[i] * unit, layout->recvCounts[i] * unit}
                  : Range{Buffer::Recv, static_cast<size_t>(i) * shape.count * unit, shape.count * unit};
  };
  ScheduleBuilder builder(shape);
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    builder.add(Step{StepKind::Recv, from, recvRange(from), {}});
    builder.add(Step{StepKind::Send, to, {}, sendRange(to)});
  }
  builder.add(Step{StepKind::Copy, -1, recvRange(r), sendRange(r)});
  return builder.finish();
}

}  // namespace loom::algo
