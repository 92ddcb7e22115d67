// SPDX-License-Identifier: Apache-2.0
#include "algorithms/direct/arena_engine.h"

#include <cstdlib>
#include <cstring>

#include "algorithms/direct/direct_wait.h"
#include "base/backoff.h"
#include "base/datatype.h"
#include "base/error.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/stream_copy.h"
#include "transport/shm/cross_memory.h"

namespace loom::algo {

namespace {

// Progress words hold (sequence << 24) | chunks, so a new call's progress is above every
// value of the calls before it without anyone resetting the word.
constexpr int kChunkBits = 24;

uint64_t progressValue(uint64_t sequence, uint64_t chunks) { return (sequence << kChunkBits) | chunks; }

}  // namespace

std::pair<size_t, size_t> segmentOf(size_t count, size_t elementBytes, int parts, int index) {
  // Whole 64-byte groups are dealt out evenly; the last segment takes the remainder.
  const size_t perLine = elementBytes >= 64 ? 1 : 64 / elementBytes;
  const size_t lines = count / perLine;
  const size_t base = lines / static_cast<size_t>(parts);
  const size_t extra = lines % static_cast<size_t>(parts);
  const size_t i = static_cast<size_t>(index);
  const size_t beginLine = i * base + std::min(i, extra);
  const size_t endLine = beginLine + base + (i < extra ? 1 : 0);
  const size_t begin = beginLine * perLine;
  const size_t end = index == parts - 1 ? count : endLine * perLine;
  return {begin, end};
}

ArenaEngine::ArenaEngine(std::unique_ptr<transport::ShmArena> arena, std::vector<pid_t> pids, int rank,
                         DirectSettings settings, int timeoutMs, const std::atomic<bool>* abortFlag)
    : arena_(std::move(arena)),
      pids_(std::move(pids)),
      rank_(rank),
      nranks_(static_cast<int>(pids_.size())),
      settings_(settings),
      timeoutMs_(timeoutMs),
      abortFlag_(abortFlag),
      knownPosted_(pids_.size(), 0),
      rankInputs_(pids_.size(), nullptr) {
  for (int r = 0; r < nranks_; ++r) bells_.emplace_back(&arena_->doorbell(r));
  if (settings_.crossMemory) {
    // Persistent and pre-faulted: page faults cost ~11 us each on this class of VM.
    settings_.chunkBytes = (settings_.chunkBytes + 4095) / 4096 * 4096;
    staging_ = static_cast<char*>(std::aligned_alloc(4096, 2 * settings_.chunkBytes));
    if (staging_ == nullptr) throwSystem("direct collectives: staging buffer", ENOMEM);
    std::memset(staging_, 0, 2 * settings_.chunkBytes);
  }
}

// The peers keep the arena mapped: the departure mark outlives this engine.
ArenaEngine::~ArenaEngine() {
  announceDeparture();
  std::free(staging_);
}

void ArenaEngine::announceDeparture() {
  arena_->departed(rank_).value.store(1, std::memory_order_release);
  wakePeers();
}

size_t ArenaEngine::elementBytes(const CallSpec& call) const { return typeSize(call.type); }

bool ArenaEngine::handles(const CallSpec& call) const {
  // All-to-all, gather and scatter: the arena for small messages, mesh schedules (after
  // postOnly) for the rest; the barrier is postOnly alone; all-to-all-v always a schedule.
  if (call.collective <= Collective::Reduce) {
    return eager(call) || (settings_.crossMemory && !(settings_.deterministic && hasOp(call.collective)));
  }
  return (call.collective == Collective::AllToAll || call.collective == Collective::Gather ||
          call.collective == Collective::Scatter) &&
         eager(call);
}

void ArenaEngine::run(const CallSpec& call, const Describe& describe) {
  switch (call.collective) {
    case Collective::AllReduce:
      if (eager(call)) {
        allReduceEager(call, describe);
      } else {
        allReduceSingleCopy(call, describe);
      }
      return;
    case Collective::AllGather: allGather(call, describe); return;
    case Collective::ReduceScatter: reduceScatter(call, describe); return;
    case Collective::Broadcast: broadcast(call, describe); return;
    case Collective::Reduce: reduce(call, describe); return;
    case Collective::AllToAll: allToAllEager(call, describe); return;
    case Collective::Gather: gatherEager(call, describe); return;
    case Collective::Scatter: scatterEager(call, describe); return;
    default: break;
  }
  throwInternal(std::string("direct collectives: no direct ") + collectiveName(call.collective));
}

void ArenaEngine::postOnly(const CallSpec& call, const Describe& describe) {
  publish(call, nullptr, 0, describe);
  awaitPosts(call, describe);
}

void ArenaEngine::waitForPeer(int peer, const std::atomic<uint64_t>& flag, uint64_t target,
                              const char* what, const Describe& describe) const {
  WaitPolicy policy;
  policy.ownDoorbell = &bells_[rank_];
  policy.timeoutMs = timeoutMs_;
  policy.abortFlag = abortFlag_;
  policy.spins = settings_.oversubscribed ? 0 : 2048;
  policy.yieldBeforeSleepMs = settings_.oversubscribed ? kOversubscribedYieldMs : 0;
  policy.describe = describe;
  policy.peerPids = &pids_;  // any dead rank on this host fails the wait, not only `peer`
  policy.arena = arena_.get();  // so does any rank that left the communicator
  policy.selfRank = rank_;
  waitForFlag(flag, target, peer, pids_[peer], what, policy);
}

void ArenaEngine::wakePeers() {
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer != rank_) bells_[peer].ring();
  }
}

void ArenaEngine::publish(const CallSpec& call, const void* payload, size_t bytes,
                           const Describe& describe) {
  const uint64_t sequence = call.sequence;
  // The slot of this parity was last read in call sequence - 2; every peer is done with that
  // call once it has posted sequence - 1.
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_ || knownPosted_[peer] + 1 >= sequence) continue;
    awaitFlag(peer, arena_->post(peer, sequence - 1).sequence, sequence - 1, "post of the previous call",
              describe);
    knownPosted_[peer] = sequence - 1;
  }
  transport::PostHeader& slot = arena_->post(rank_, sequence);
  slot.call = call.descriptor();
  if (bytes > 0) std::memcpy(arena_->payload(rank_, sequence), payload, bytes);
  slot.sequence.store(sequence, std::memory_order_release);
  wakePeers();
}

void ArenaEngine::awaitPosts(const CallSpec& call, const Describe& describe) {
  const uint64_t sequence = call.sequence;
  const transport::CallDescriptor mine = call.descriptor();
  for (int offset = 1; offset < nranks_; ++offset) {
    const int peer = (rank_ + offset) % nranks_;
    const transport::PostHeader& slot = arena_->post(peer, sequence);
    awaitFlag(peer, slot.sequence, sequence, "post", describe);
    knownPosted_[peer] = sequence;
    if (settings_.checkCalls && !(slot.call == mine)) {
      throw Error(loomInvalidUsage, describe() + ": ranks disagree on this call: rank " + std::to_string(rank_) +
                                        " called " + describeDescriptor(mine) + " but rank " +
                                        std::to_string(peer) + " called " + describeDescriptor(slot.call));
    }
  }
}

const char* ArenaEngine::peerPayload(int peer, uint64_t sequence) const {
  return arena_->payload(peer, sequence);
}

ArenaEngine::Addresses ArenaEngine::peerAddresses(int peer, uint64_t sequence) const {
  Addresses addresses;
  std::memcpy(&addresses, arena_->payload(peer, sequence), sizeof(addresses));
  return addresses;
}

void ArenaEngine::readPeer(int peer, uint64_t remote, void* local, size_t bytes,
                            const Describe& describe) const {
  const transport::CrossMemoryResult result = transport::crossMemoryRead(pids_[peer], remote, local, bytes);
  if (result.status == transport::CrossMemoryStatus::Ok) return;
  const std::string where = describe() + ": reading " + std::to_string(bytes) + " bytes from rank " +
                            std::to_string(peer) + " (pid " + std::to_string(pids_[peer]) + ")";
  switch (result.status) {
    case transport::CrossMemoryStatus::PeerGone: throw Error(loomRemoteError, where + ": the process died");
    case transport::CrossMemoryStatus::BadAddress:
      throw Error(loomInvalidUsage, where + ": its buffer is not that large (bad pointer or count on that rank)");
    default: throwSystem(where, result.error);
  }
}

void ArenaEngine::publishProgress(uint64_t sequence, uint64_t chunksDone) {
  arena_->progress(rank_).value.store(progressValue(sequence, chunksDone), std::memory_order_release);
  wakePeers();
}

void ArenaEngine::awaitProgress(int peer, uint64_t sequence, uint64_t chunks, const Describe& describe) {
  awaitFlag(peer, arena_->progress(peer).value, progressValue(sequence, chunks), "reduced segment", describe);
}

void ArenaEngine::finishAndAwaitPeers(uint64_t sequence, const Describe& describe) {
  arena_->done(rank_).value.store(sequence, std::memory_order_release);
  wakePeers();
  for (int offset = 1; offset < nranks_; ++offset) {
    const int peer = (rank_ + offset) % nranks_;
    awaitFlag(peer, arena_->done(peer).value, sequence, "end of the call", describe);
  }
}

void ArenaEngine::reduceFromPeers(const CallSpec& call, uint64_t offset, size_t bytes, const void* mine,
                                   void* dst, const std::vector<Addresses>& peers, bool stream,
                                   const Describe& describe) {
  const size_t elements = bytes / elementBytes(call);
  void* accumulator = stream ? staging_ : dst;
  char* incoming = stream ? staging_ + settings_.chunkBytes : staging_;
  const void* accumulated = mine;
  for (int step = 1; step < nranks_; ++step) {
    const int peer = (rank_ + step) % nranks_;
    readPeer(peer, peers[peer].send + offset, incoming, bytes, describe);
    if (call.op == loomAvg) {
      // The peer's raw input is the scaled operand; the accumulator is scaled already except
      // at the first step, when it is still this rank's raw input (canonical_reduce.h).
      kernels::reduceAverage(call.type, accumulator, incoming, accumulated, elements, nranks_, step == 1);
    } else {
      kernels::reduce(call.type, call.op, accumulator, accumulated, incoming, elements);
    }
    accumulated = accumulator;
  }
  if (call.op == loomAvg) kernels::finishAverage(call.type, accumulator, elements, nranks_);
  if (stream) kernels::streamCopy(dst, accumulator, bytes);
}

void ArenaEngine::copyFromPeer(int peer, uint64_t remote, void* dst, size_t bytes, bool stream,
                                const Describe& describe) {
  if (!stream) {
    readPeer(peer, remote, dst, bytes, describe);
    return;
  }
  for (size_t done = 0; done < bytes; done += settings_.chunkBytes) {
    const size_t length = std::min(settings_.chunkBytes, bytes - done);
    readPeer(peer, remote + done, staging_, length, describe);
    kernels::streamCopy(static_cast<char*>(dst) + done, staging_, length);
  }
}

}  // namespace loom::algo
