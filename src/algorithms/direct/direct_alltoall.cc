// SPDX-License-Identifier: Apache-2.0
// Direct all-to-all, gather and scatter for small messages (inputs up to
// LOOM_DIRECT_EAGER_BYTES, decided from count and rank count alone, so alike on every rank):
// each rank posts what it sends into its arena slot, and after the one synchronisation every
// rank copies what it receives straight out of its peers' slots. No message crosses a FIFO
// and no rank waits on another twice. Larger calls run as mesh schedules.
#include <cstring>

#include "algorithms/direct/arena_engine.h"
#include "algorithms/direct/byte_offset.h"

namespace loom::algo {

// Every rank posts its whole input (n blocks); rank r's output block i is block r of rank i's.
void ArenaEngine::allToAllEager(const CallSpec& call, const Describe& describe) {
  const size_t block = call.count * elementBytes(call);
  const uint64_t sequence = call.sequence;
  publish(call, call.send, block * static_cast<size_t>(nranks_), describe);
  awaitPosts(call, describe);
  if (block == 0) return;
  const size_t mine = static_cast<size_t>(rank_) * block;
  for (int rank = 0; rank < nranks_; ++rank) {
    const char* source = rank == rank_ ? byteAt(call.send, mine) : peerPayload(rank, sequence) + mine;
    std::memcpy(byteAt(call.recv, static_cast<size_t>(rank) * block), source, block);
  }
}

// Every rank posts its block; the root copies them all (its own unless already in place).
void ArenaEngine::gatherEager(const CallSpec& call, const Describe& describe) {
  const size_t block = call.count * elementBytes(call);
  const uint64_t sequence = call.sequence;
  publish(call, call.send, block, describe);
  awaitPosts(call, describe);
  if (block == 0 || rank_ != call.root) return;
  for (int rank = 0; rank < nranks_; ++rank) {
    char* destination = byteAt(call.recv, static_cast<size_t>(rank) * block);
    const void* source = rank == rank_ ? call.send : peerPayload(rank, sequence);
    if (source != destination) std::memcpy(destination, source, block);
  }
}

// The root posts all n blocks; every rank copies its own (the root's unless already in place).
void ArenaEngine::scatterEager(const CallSpec& call, const Describe& describe) {
  const size_t block = call.count * elementBytes(call);
  const uint64_t sequence = call.sequence;
  const bool root = rank_ == call.root;
  publish(call, root ? call.send : nullptr, root ? block * static_cast<size_t>(nranks_) : 0, describe);
  awaitPosts(call, describe);
  if (block == 0) return;
  const size_t mine = static_cast<size_t>(rank_) * block;
  const char* source = root ? byteAt(call.send, mine) : peerPayload(call.root, sequence) + mine;
  if (source != call.recv) std::memcpy(call.recv, source, block);
}

}  // namespace loom::algo
