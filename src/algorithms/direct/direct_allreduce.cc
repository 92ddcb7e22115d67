// SPDX-License-Identifier: Apache-2.0
// Direct all-reduce: eager (one shot through the arena) and single-copy (reduce own segment
// from the peers' buffers, then read the other reduced segments). See direct_engine.h.
#include <algorithm>
#include <cstring>

#include "algorithms/direct/arena_engine.h"
#include "algorithms/direct/byte_offset.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"

namespace loom::algo {

void ArenaEngine::reducePosted(const CallSpec& call, void* dst, size_t offset) {
  const uint64_t sequence = call.sequence;
  const bool canonical = settings_.deterministic || call.op == loomAvg || kernels::isNarrowFloat(call.type);
  if (canonical) {
    for (int rank = 0; rank < nranks_; ++rank) rankInputs_[rank] = peerPayload(rank, sequence) + offset;
    kernels::reduceRanks(call.type, call.op, dst, rankInputs_.data(), nranks_, call.count);
    return;
  }
  kernels::reduce(call.type, call.op, dst, peerPayload(0, sequence) + offset, peerPayload(1, sequence) + offset,
                  call.count);
  for (int rank = 2; rank < nranks_; ++rank) {
    kernels::reduce(call.type, call.op, dst, dst, peerPayload(rank, sequence) + offset, call.count);
  }
}

// Every rank reduces every element, in rank order, from the posted copies: identical results
// everywhere, and no second synchronisation (the posts themselves say the data is there).
void ArenaEngine::allReduceEager(const CallSpec& call, const Describe& describe) {
  const size_t bytes = call.count * elementBytes(call);
  publish(call, call.send, bytes, describe);
  awaitPosts(call, describe);
  if (call.count == 0) return;
  reducePosted(call, call.recv, 0);
}

// Phase 1: this rank's segment, chunk by chunk: read each peer's piece into the staging chunk
// (it stays in cache) and fold it into the output; publish how many chunks are done.
// Phase 2: every other segment, read from its owner's output as soon as the owner has
// published it, as many finished chunks per read as are ready.
void ArenaEngine::allReduceSingleCopy(const CallSpec& call, const Describe& describe) {
  const size_t elementSize = elementBytes(call);
  const uint64_t sequence = call.sequence;
  const Addresses mine{reinterpret_cast<uint64_t>(call.send), reinterpret_cast<uint64_t>(call.recv)};
  publish(call, &mine, sizeof(mine), describe);
  awaitPosts(call, describe);
  std::vector<Addresses> peers(static_cast<size_t>(nranks_));
  for (int peer = 0; peer < nranks_; ++peer) peers[peer] = peer == rank_ ? mine : peerAddresses(peer, sequence);

  const size_t chunkElements = std::max<size_t>(1, settings_.chunkBytes / elementSize);
  const bool stream = streaming(call.count * elementSize);
  const auto [begin, end] = segmentOf(call.count, elementSize, nranks_, rank_);
  uint64_t chunk = 0;
  for (size_t position = begin; position < end; position += chunkElements) {
    const size_t elements = std::min(chunkElements, end - position);
    const size_t offset = position * elementSize;
    reduceFromPeers(call, offset, elements * elementSize, byteAt(call.send, offset), byteAt(call.recv, offset), peers,
                    stream, describe);
    publishProgress(sequence, ++chunk);
  }

  for (int step = 1; step < nranks_; ++step) {
    const int owner = (rank_ + step) % nranks_;
    const auto [ownerBegin, ownerEnd] = segmentOf(call.count, elementSize, nranks_, owner);
    const uint64_t chunks = (ownerEnd - ownerBegin + chunkElements - 1) / chunkElements;
    uint64_t copied = 0;
    while (copied < chunks) {
      awaitProgress(owner, sequence, copied + 1, describe);
      const uint64_t published = arena_->progress(owner).value.load(std::memory_order_acquire) -
                                 (sequence << 24);
      const uint64_t ready = std::min(chunks, published);
      const size_t first = ownerBegin + copied * chunkElements;
      const size_t last = std::min(ownerEnd, ownerBegin + ready * chunkElements);
      const size_t offset = first * elementSize;
      copyFromPeer(owner, peers[owner].recv + offset, byteAt(call.recv, offset), (last - first) * elementSize, stream,
                   describe);
      copied = ready;
    }
  }
  finishAndAwaitPeers(sequence, describe);
}

}  // namespace loom::algo
