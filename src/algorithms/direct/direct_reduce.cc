// SPDX-License-Identifier: Apache-2.0
// Direct reduce-scatter and reduce: the rank that owns an output reduces it from every rank's
// input, from the arena (eager, rank order) or with single-copy reads. See direct_engine.h.
#include <algorithm>

#include "algorithms/direct/arena_engine.h"
#include "algorithms/direct/byte_offset.h"
#include "kernels/host/host_reduce.h"

namespace loom::algo {

void ArenaEngine::reduceScatter(const CallSpec& call, const Describe& describe) {
  const size_t elementSize = elementBytes(call);
  const size_t segmentBytes = call.count * elementSize;
  const size_t base = static_cast<size_t>(rank_) * segmentBytes;  // our segment in every input
  const uint64_t sequence = call.sequence;
  if (eager(call)) {
    publish(call, call.send, call.inputBytes(nranks_), describe);
    awaitPosts(call, describe);
    if (call.count == 0) return;
    reducePosted(call, call.recv, base);
    return;
  }
  const Addresses mine{reinterpret_cast<uint64_t>(call.send), reinterpret_cast<uint64_t>(call.recv)};
  publish(call, &mine, sizeof(mine), describe);
  awaitPosts(call, describe);
  std::vector<Addresses> peers(static_cast<size_t>(nranks_));
  for (int peer = 0; peer < nranks_; ++peer) peers[peer] = peer == rank_ ? mine : peerAddresses(peer, sequence);
  const size_t chunkBytes = std::max(elementSize, settings_.chunkBytes / elementSize * elementSize);
  for (size_t offset = 0; offset < segmentBytes; offset += chunkBytes) {
    const size_t bytes = std::min(chunkBytes, segmentBytes - offset);
    reduceFromPeers(call, base + offset, bytes, byteAt(call.send, base + offset), byteAt(call.recv, offset), peers,
                    streaming(segmentBytes), describe);
  }
  finishAndAwaitPeers(sequence, describe);
}

void ArenaEngine::reduce(const CallSpec& call, const Describe& describe) {
  const size_t elementSize = elementBytes(call);
  const size_t bytes = call.count * elementSize;
  const uint64_t sequence = call.sequence;
  const bool root = rank_ == call.root;
  if (eager(call)) {
    publish(call, call.send, bytes, describe);
    awaitPosts(call, describe);
    if (!root || call.count == 0) return;
    reducePosted(call, call.recv, 0);
    return;
  }
  const Addresses mine{reinterpret_cast<uint64_t>(call.send), reinterpret_cast<uint64_t>(call.recv)};
  publish(call, &mine, sizeof(mine), describe);
  awaitPosts(call, describe);
  if (root) {
    std::vector<Addresses> peers(static_cast<size_t>(nranks_));
    for (int peer = 0; peer < nranks_; ++peer) peers[peer] = peer == rank_ ? mine : peerAddresses(peer, sequence);
    const size_t chunkBytes = std::max(elementSize, settings_.chunkBytes / elementSize * elementSize);
    for (size_t offset = 0; offset < bytes; offset += chunkBytes) {
      const size_t length = std::min(chunkBytes, bytes - offset);
      reduceFromPeers(call, offset, length, byteAt(call.send, offset), byteAt(call.recv, offset), peers,
                      streaming(bytes), describe);
    }
  }
  finishAndAwaitPeers(sequence, describe);
}

}  // namespace loom::algo
