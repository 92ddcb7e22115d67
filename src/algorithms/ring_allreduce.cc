// SPDX-License-Identifier: Apache-2.0
// Ring all-reduce = ring reduce-scatter, then ring all-gather, on n chunks of the buffer.
//
// Chunk j is elements splitBlock(count, n, j). With left = r-1 and right = r+1 (mod n):
//   reduce-scatter, step s = 0..n-2: send chunk (r-s) to the right; receive chunk (r-s-1)
//     from the left and reduce it with our own input into recv. Step 0 sends straight from
//     the input; later steps forward what the previous step just reduced. After n-1 steps
//     chunk (r+1) has passed every rank once: rank r owns its final value.
//   avg: rank r divides its owned chunk once, so every rank later copies the same bits.
//   all-gather, step s = 0..n-2: send chunk (r+1-s) to the right; receive chunk (r-s) from
//     the left into recv. Each step forwards what the previous one received.
// Each chunk moves as pipeline pieces, and the dependencies are per piece, so piece p of a
// step can leave as soon as piece p of the step before has arrived.
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule ringAllReduce(const CollectiveShape& shape) {
  ScheduleBuilder builder(shape);
  const int n = shape.nranks;
  const int r = shape.rank;
  const size_t elem = shape.elementBytes;
  const size_t totalBytes = shape.count * elem;
  if (n == 1) {
    builder.add(Step{StepKind::Copy, -1, Range{Buffer::Recv, 0, totalBytes},
                     Range{Buffer::Send, 0, totalBytes}});
    return builder.finish();
  }
  auto chunkOf = [&](int index) {
    Block block = splitBlock(shape.count, n, ((index % n) + n) % n);
    return std::pair<size_t, size_t>{block.first * elem, block.size * elem};
  };
  const int left = (r - 1 + n) % n;
  const int right = (r + 1) % n;

  // lastStep[p]: the step that produced piece p of the chunk the next step forwards.
  std::vector<int> lastStep;
  for (int s = 0; s < n - 1; ++s) {
    auto [sendOffset, sendBytes] = chunkOf(r - s);
    auto [recvOffset, recvBytes] = chunkOf(r - s - 1);
    const Buffer source = s == 0 ? Buffer::Send : Buffer::Recv;
    const size_t sendPieces = builder.pieceCount(sendBytes);
    const size_t recvPieces = builder.pieceCount(recvBytes);
    std::vector<int> produced(recvPieces, -1);
    for (size_t p = 0; p < std::max(sendPieces, recvPieces); ++p) {
      if (p < sendPieces) {
        Step send{StepKind::Send, right, {}, builder.piece(source, sendOffset, sendBytes, p)};
        send.dependsOn = s == 0 ? -1 : lastStep[p];
        builder.add(send);
      }
      if (p < recvPieces) {
        Range dst = builder.piece(Buffer::Recv, recvOffset, recvBytes, p);
        Range local = builder.piece(Buffer::Send, recvOffset, recvBytes, p);
        Step reduce{StepKind::RecvReduce, left, dst, local};
        reduce.rawIncoming = s == 0;  // step 0 brings the left neighbour's own input (avg scales it)
        produced[p] = builder.add(reduce);
      }
    }
    lastStep = std::move(produced);
  }

  if (shape.average) {
    auto [ownOffset, ownBytes] = chunkOf(r + 1);
    for (size_t p = 0; p < builder.pieceCount(ownBytes); ++p) {
      Step divide{StepKind::Divide, -1, builder.piece(Buffer::Recv, ownOffset, ownBytes, p), {}};
      divide.dependsOn = lastStep[p];
      lastStep[p] = builder.add(divide);
    }
  }

  for (int s = 0; s < n - 1; ++s) {
    auto [sendOffset, sendBytes] = chunkOf(r + 1 - s);
    auto [recvOffset, recvBytes] = chunkOf(r - s);
    const size_t sendPieces = builder.pieceCount(sendBytes);
    const size_t recvPieces = builder.pieceCount(recvBytes);
    std::vector<int> produced(recvPieces, -1);
    for (size_t p = 0; p < std::max(sendPieces, recvPieces); ++p) {
      if (p < sendPieces) {
        Step send{StepKind::Send, right, {}, builder.piece(Buffer::Recv, sendOffset, sendBytes, p)};
        send.dependsOn = lastStep[p];
        builder.add(send);
      }
      if (p < recvPieces) {
        produced[p] = builder.add(
            Step{StepKind::Recv, left, builder.piece(Buffer::Recv, recvOffset, recvBytes, p), {}});
      }
    }
    lastStep = std::move(produced);
  }
  return builder.finish();
}

}  // namespace loom::algo
