// SPDX-License-Identifier: Apache-2.0
// Direct all-gather and broadcast: every rank copies what it lacks straight from its owner,
// from the arena (eager) or from the owner's buffer (single copy). See direct_engine.h.
#include <cstring>

#include "algorithms/direct/arena_engine.h"
#include "algorithms/direct/byte_offset.h"

namespace loom::algo {

void ArenaEngine::allGather(const CallSpec& call, const Describe& describe) {
  const size_t bytes = call.count * elementBytes(call);
  const uint64_t sequence = call.sequence;
  void* own = byteAt(call.recv, static_cast<size_t>(rank_) * bytes);
  if (eager(call)) {
    publish(call, call.send, bytes, describe);
    awaitPosts(call, describe);
    if (bytes == 0) return;
    for (int rank = 0; rank < nranks_; ++rank) {
      void* destination = byteAt(call.recv, static_cast<size_t>(rank) * bytes);
      if (rank == rank_ && call.send == destination) continue;  // in place
      std::memcpy(destination, rank == rank_ ? call.send : peerPayload(rank, sequence), bytes);
    }
    return;
  }
  const Addresses mine{reinterpret_cast<uint64_t>(call.send), reinterpret_cast<uint64_t>(call.recv)};
  publish(call, &mine, sizeof(mine), describe);
  awaitPosts(call, describe);
  if (call.send != own) std::memcpy(own, call.send, bytes);
  for (int step = 1; step < nranks_; ++step) {
    const int peer = (rank_ + step) % nranks_;
    copyFromPeer(peer, peerAddresses(peer, sequence).send, byteAt(call.recv, static_cast<size_t>(peer) * bytes), bytes,
                 streaming(bytes * static_cast<size_t>(nranks_)), describe);
  }
  finishAndAwaitPeers(sequence, describe);
}

void ArenaEngine::broadcast(const CallSpec& call, const Describe& describe) {
  const size_t bytes = call.count * elementBytes(call);
  const uint64_t sequence = call.sequence;
  const bool root = rank_ == call.root;
  if (eager(call)) {
    publish(call, root ? call.send : nullptr, root ? bytes : 0, describe);
    awaitPosts(call, describe);
    if (bytes == 0) return;
    const void* source = root ? call.send : peerPayload(call.root, sequence);
    if (source != call.recv) std::memcpy(call.recv, source, bytes);
    return;
  }
  const Addresses mine{reinterpret_cast<uint64_t>(call.send), reinterpret_cast<uint64_t>(call.recv)};
  publish(call, &mine, sizeof(mine), describe);
  awaitPosts(call, describe);
  if (root) {
    if (call.send != call.recv) std::memcpy(call.recv, call.send, bytes);
  } else {
    copyFromPeer(call.root, peerAddresses(call.root, sequence).send, call.recv, bytes, streaming(bytes), describe);
  }
  finishAndAwaitPeers(sequence, describe);
}

}  // namespace loom::algo
