// SPDX-License-Identifier: Apache-2.0
// Deterministic mode's all-reduce, reduce-scatter and reduce: every rank gathers every rank's
// *raw* input around the ring (an all-gather into scratch, one block per rank), then the
// ranks that need a result reduce it locally in rank order 0..n-1 (one ReduceRanks step per
// piece: wide accumulator, one rounding). Every element is thus reduced by the same code, in
// the same order, from the same operands, whatever the message size, the element's position,
// the transport or the ring order: the bits are the same everywhere (and equal on all ranks).
// The cost is the all-gather's bytes: (n-1) x the input per rank, against the ring
// all-reduce's 2(n-1)/n x (README has the measured cost).
//
// The input is processed in segments of up to 8 pieces per rank so that scratch stays
// n x 8 pieces. Segment k+1 reuses the scratch of segment k, so each piece's first write in
// segment k+1 (the own copy, the first receive) waits for segment k's reduce of that piece
// and for its last send from scratch (a send may still be reading it).
//
// Blocks in scratch are indexed by rank (not ring position), so ReduceRanks reads them in
// rank order whatever shape.ringOrder says; neighbours follow the ring order.
#include <algorithm>

#include "algorithms/schedule.h"

namespace loom::algo {

Schedule deterministicReduce(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const int n = shape.nranks;
  const size_t elem = shape.elementBytes;
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[i] = shape.ringOrder != nullptr ? (*shape.ringOrder)[i] : i;
  const int position = static_cast<int>(std::find(order.begin(), order.end(), shape.rank) - order.begin());
  const auto rankAt = [&](int offset) { return order[static_cast<size_t>(((position + offset) % n + n) % n)]; };
  const int left = rankAt(-1), right = rankAt(1);

  // The input's elements, and which of them this rank's output holds ([windowBegin, windowEnd)
  // of the input, written to recv from offset 0).
  const bool scatter = shape.collective == Collective::ReduceScatter;
  const size_t inputCount = scatter ? shape.count * static_cast<size_t>(n) : shape.count;
  size_t windowBegin = scatter ? shape.count * static_cast<size_t>(shape.rank) : 0;
  size_t windowEnd = windowBegin + shape.count;
  if (shape.collective == Collective::Reduce && shape.rank != shape.root) windowEnd = windowBegin;

  if (n == 1) {  // the canonical reduction of one rank (rounds NaNs like every other case)
    const size_t bytes = (windowEnd - windowBegin) * elem;
    for (size_t p = 0; p < builder.pieceCount(bytes); ++p) {
      Step reduce{StepKind::ReduceRanks, -1, builder.piece(Buffer::Recv, 0, bytes, p),
                  builder.piece(Buffer::Send, windowBegin * elem, bytes, p)};
      reduce.blocks = 1;
      builder.add(reduce);
    }
    return builder.finish();
  }

  const size_t pieceElements = std::max<size_t>(1, shape.pieceBytes / elem);
  const size_t segmentElements = std::min(inputCount, 8 * pieceElements);
  const size_t blockBytes = segmentElements * elem;  // one rank's slot in scratch
  std::vector<int> previousReduce, previousSend;      // by piece, from the segment before
  const auto blockOf = [&](int rank) { return static_cast<size_t>(rank) * blockBytes; };

  for (size_t first = 0; first < inputCount; first += segmentElements) {
    const size_t elements = std::min(segmentElements, inputCount - first);
    const size_t bytes = elements * elem;
    const size_t pieces = builder.pieceCount(bytes);
    previousReduce.resize(std::max(previousReduce.size(), pieces), -1);
    previousSend.resize(std::max(previousSend.size(), pieces), -1);
    std::vector<int> copied(pieces), lastRecv(pieces, -1), lastSend(pieces, -1);

    for (size_t p = 0; p < pieces; ++p) {
      Step copy{StepKind::Copy, -1, builder.piece(Buffer::Scratch, blockOf(shape.rank), bytes, p),
                builder.piece(Buffer::Send, first * elem, bytes, p)};
      copy.dependsOn = previousReduce[p];
      copy.alsoDependsOn = previousSend[p];
      copied[p] = builder.add(copy);
    }
    for (int s = 0; s < n - 1; ++s) {
      for (size_t p = 0; p < pieces; ++p) {
        Step send{StepKind::Send, right, {}, builder.piece(Buffer::Scratch, blockOf(rankAt(-s)), bytes, p)};
        send.dependsOn = s == 0 ? copied[p] : lastRecv[p];
        lastSend[p] = builder.add(send);
        Step recv{StepKind::Recv, left, builder.piece(Buffer::Scratch, blockOf(rankAt(-s - 1)), bytes, p), {}};
        if (s == 0) {
          recv.dependsOn = previousReduce[p];
          recv.alsoDependsOn = previousSend[p];
        }
        lastRecv[p] = builder.add(recv);
      }
    }
    for (size_t p = 0; p < pieces; ++p) {
      // This piece's input elements, and the part of them that is this rank's output.
      const size_t pieceFirst = first + p * pieceElements;
      const size_t pieceEnd = std::min(first + elements, pieceFirst + pieceElements);
      const size_t from = std::max(pieceFirst, windowBegin), to = std::min(pieceEnd, windowEnd);
      previousReduce[p] = lastRecv[p];
      previousSend[p] = lastSend[p];
      if (from >= to) continue;
      Step reduce{StepKind::ReduceRanks, -1, Range{Buffer::Recv, (from - windowBegin) * elem, (to - from) * elem},
                  Range{Buffer::Scratch, (from - first) * elem, (to - from) * elem}};
      reduce.dependsOn = lastRecv[p];
      reduce.alsoDependsOn = copied[p];
      reduce.stride = blockBytes;
      reduce.blocks = n;
      previousReduce[p] = builder.add(reduce);
    }
  }
  return builder.finish(static_cast<size_t>(n) * blockBytes);
}

}  // namespace loom::algo
