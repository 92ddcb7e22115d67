// SPDX-License-Identifier: Apache-2.0
// Setup of the shm transport and the Connection that moves messages over a pair of FIFOs.
#include "transport/shm/shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <map>
#include <new>
#include <set>

#include "base/error.h"
#include "base/log.h"
#include "base/peer_left.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/shm_fifo.h"
#include "transport/shm/shm_segment.h"

namespace loom::transport {

namespace {

constexpr uint64_t kDoorbellMagic = 0x314c45424d4f4f4cull;  // "LOOMBEL1" little-endian
constexpr uint32_t kDoorbellVersion = 2;  // 2: departure word and FIFO directory
constexpr size_t kMaxPrefixLength = 200;  // leaves room for "-f<rank>-<rank>" in a memfd name

// Where a peer finds the FIFO it sends on: the receiver's descriptor for it (ShmSegment::open).
struct FifoEntry {
  int32_t fromRank;
  int32_t fd;
};

// What a rank's doorbell segment holds: the word peers ring, whether the rank has left the
// communicator, and (after it, fifoEntries()) a directory of the FIFOs it receives on, one
// entry per peer.
struct DoorbellLayout {
  ShmSegmentHeader header;
  DoorbellWord word;
  // Nonzero once the owner destroyed or aborted its communicator: a peer waiting on it would
  // otherwise wait for its whole timeout (issue 14, finding 3). Read on slow paths only.
  alignas(64) std::atomic<uint32_t> departed;
  int32_t fifoCount;
};

size_t doorbellBytes(size_t fifoCount) { return sizeof(DoorbellLayout) + sizeof(FifoEntry) * fifoCount; }
FifoEntry* fifoEntries(const ShmSegment& doorbell) {
  return reinterpret_cast<FifoEntry*>(static_cast<char*>(doorbell.data()) + sizeof(DoorbellLayout));
}

// What each rank publishes at setup: where its doorbell can be opened (-1: setup failed).
struct PublishedDoorbell {
  int32_t pid;
  int32_t fd;
};

std::string fifoName(const std::string& prefix, int fromRank, int toRank) {
  return "/" + prefix + "-f" + std::to_string(fromRank) + "-" + std::to_string(toRank);
}
std::string doorbellName(const std::string& prefix, int rank) {
  return "/" + prefix + "-b" + std::to_string(rank);
}

// ---------------------------------------------------------------------------------------------
// One peer, both directions: we receive on `incoming` (our segment) and send on `outgoing`
// (the peer's), and ring the peer's doorbell whenever we publish data or free space for it.
class ShmConnection final : public Connection {
 public:
  ShmConnection(Transport& owner, Doorbell& ownBell, int rank, int peer, pid_t peerPid, ShmFifo incoming,
                ShmFifo outgoing, ShmSegment peerBell)
      : owner_(owner),
        ownBell_(ownBell),
        rank_(rank),
        peer_(peer),
        peerPid_(peerPid),
        incoming_(std::move(incoming)),
        outgoing_(std::move(outgoing)),
        peerBellSegment_(std::move(peerBell)),
        peerBell_(&static_cast<DoorbellLayout*>(peerBellSegment_.data())->word),
        peerDeparted_(&static_cast<DoorbellLayout*>(peerBellSegment_.data())->departed) {}

  void postSend(const Region& region, size_t offset, size_t bytes) override {
    if (sendData_ != nullptr) throwUsage(where() + ": postSend while a send is in flight");
    if (bytes == 0 || region.base == nullptr || offset + bytes > region.bytes) {
      throwUsage(where() + ": postSend needs bytes > 0 inside a registered region");
    }
    sendData_ = region.base + offset;
    sendBytes_ = bytes;
    sendOffset_ = 0;
  }

  void postRecv(size_t bytes, RecvSink* sink) override {
    if (recvSink_ != nullptr) throwUsage(where() + ": postRecv while a receive is in flight");
    if (bytes == 0 || sink == nullptr) {
      throwUsage(where() + ": postRecv needs a sink and bytes > 0");
    }
    recvSink_ = sink;
    recvBytes_ = bytes;
    recvOffset_ = 0;
  }

  bool progress() override {
    const bool moved = progressSend() | progressRecv();
    // Send first: a push leaves at once, while looking for data may miss in the cache. The ring
    // that wakes a peer sleeping for data (we sent) or space (we freed slots) comes one moving
    // call late, or from flushWakeup(): its fence right after a push stalls until the pushed
    // line is on its way (5% of an 8 B exchange), one call later it is cheap. A ring covers
    // everything made visible before it, so every other moving call rings.
    if (moved) {
      if (wakePending_) peerBell_.ring();
      wakePending_ = !wakePending_;
    }
    return moved;
  }

  void flushWakeup() override {
    if (!wakePending_) return;
    wakePending_ = false;
    peerBell_.ring();
  }

  bool sendDone() const override { return sendData_ == nullptr; }
  bool recvDone() const override { return recvSink_ == nullptr; }
  int peer() const override { return peer_; }
  Transport& transport() const override { return owner_; }
  // Peers ring this rank's doorbell when they post data for it or free space in its FIFOs.
  Bell* bell() const override { return &ownBell_; }
  // What a peer rings for: data, space, its departure (a failure report is data).
  bool readyToProgress() const override {
    return (recvSink_ != nullptr && incoming_.anyFilled()) || (sendData_ != nullptr && outgoing_.anyFree()) ||
           peerDeparted_->load(std::memory_order_acquire) != 0;
  }
  void setSendTag(const CallTag& tag) override { sendTag_ = tag; }
  void setRecvTag(const CallTag& tag) override { recvTag_ = tag; }

  void wakePeer() { peerBell_.ring(); }

  void fail(int code, const std::string& reason) {
    // At a message boundary only: nothing in flight, or a message posted but not started.
    if ((sendData_ != nullptr && sendOffset_ != 0) || outgoing_.freeSlots() == 0) return;
    sendData_ = nullptr;
    const size_t bytes = std::min(reason.size(), outgoing_.geometry().slotBytes);
    outgoing_.push(reason.data(), static_cast<uint32_t>(bytes), 0, sendMessageSeq_, CallTag{}, code);
    peerBell_.ring();
  }

  // The peer's departure is final only once everything it sent before is read: a departed
  // peer's last messages are still valid in our mapping.
  void checkPeerPresent() override {
    if (peerDeparted_->load(std::memory_order_acquire) == 0 || incoming_.filledSlots() != 0) return;
    throwRemote(peerLeft(peer_, peerPid_) + " while rank " + std::to_string(rank_) + " waited for it over shm");
  }

  void throwPeerReport() override {
    // Mid-message (a receive in flight with pieces taken) a report can only follow the
    // message's end, which is not ours to skip here. After a completed receive recvOffset_
    // still holds its size, yet the front slot starts a new message: a report there counts.
    const bool midMessage = recvSink_ != nullptr && recvOffset_ != 0;
    if (midMessage || incoming_.filledSlots() == 0) return;
    throwIfFailureReport(incoming_.frontHeader());
  }

 private:
  void throwIfFailureReport(const ShmSlotHeader& header) const {
    if (header.failureCode == 0) return;
    const loomResult_t code = header.failureCode > 0 && header.failureCode < loomNumResults
                                  ? static_cast<loomResult_t>(header.failureCode)
                                  : loomRemoteError;
    const size_t bytes = std::min<size_t>(header.bytes, incoming_.geometry().slotBytes);
    const std::string reason(static_cast<const char*>(incoming_.frontPayload(bytes)), bytes);
    throw ExplainedError(code, "peer rank " + std::to_string(peer_) + " failed: " + reason);
  }

  std::string where() const {
    return "shm: rank " + std::to_string(rank_) + ", peer " + std::to_string(peer_);
  }

  // At most one ring's worth of slots per call so a thread driving several connections (a ring
  // sends right while it receives from the left) serves them all fairly.
  uint32_t slotsPerCall() const { return outgoing_.geometry().slotCount; }

  bool progressSend() {
    if (sendData_ == nullptr) return false;
    const size_t slotBytes = outgoing_.geometry().slotBytes;
    uint32_t budget = slotsPerCall();
    bool moved = false;
    while (budget > 0 && sendOffset_ < sendBytes_ && outgoing_.freeSlots() > 0) {
      const size_t piece = std::min(slotBytes, sendBytes_ - sendOffset_);
      outgoing_.push(sendData_ + sendOffset_, static_cast<uint32_t>(piece), sendOffset_,
                     sendMessageSeq_, sendTag_);
      sendOffset_ += piece;
      --budget;
      moved = true;
    }
    if (sendOffset_ == sendBytes_) {
      sendData_ = nullptr;
      ++sendMessageSeq_;
    }
    return moved;
  }

  bool progressRecv() {
    if (recvSink_ == nullptr) return false;
    const size_t slotBytes = incoming_.geometry().slotBytes;
    uint32_t budget = incoming_.geometry().slotCount;
    bool moved = false;
    while (budget > 0 && recvOffset_ < recvBytes_ && incoming_.filledSlots() > 0) {
      const size_t piece = std::min(slotBytes, recvBytes_ - recvOffset_);
      const ShmSlotHeader header = incoming_.frontHeader();
      if (recvOffset_ == 0) {
        throwIfFailureReport(header);
        checkSameCall(recvTag_, header.callSequence, header.call, rank_, peer_);  // LOOM_CHECK
      }
      if (header.messageSeq != recvMessageSeq_ || header.offset != recvOffset_ ||
          header.bytes != piece) {
        pieceMismatch(header, piece);
      }
      // Straight from the shared slot: a reducing sink reads it in place, no bounce copy.
      recvSink_->deliver(recvOffset_, incoming_.frontPayload(piece), piece);
      incoming_.pop();
      recvOffset_ += piece;
      --budget;
      moved = true;
    }
    if (recvOffset_ == recvBytes_) {
      recvSink_ = nullptr;
      ++recvMessageSeq_;
    }
    return moved;
  }

  [[noreturn]] void pieceMismatch(const ShmSlotHeader& header, size_t piece) const {
    throwRemote(where() + ": expected " + std::to_string(piece) + " bytes at offset " +
                std::to_string(recvOffset_) + " of message " + std::to_string(recvMessageSeq_) +
                " (" + std::to_string(recvBytes_) + " bytes long) but the peer sent " +
                std::to_string(header.bytes) + " bytes at offset " + std::to_string(header.offset) +
                " of message " + std::to_string(header.messageSeq) +
                " (the ranks disagree on message sizes or order)");
  }

  Transport& owner_;
  Doorbell& ownBell_;
  const int rank_;
  const int peer_;
  const pid_t peerPid_;  // for messages
  CallTag sendTag_;
  CallTag recvTag_;
  ShmFifo incoming_;
  ShmFifo outgoing_;
  ShmSegment peerBellSegment_;
  Doorbell peerBell_;
  const std::atomic<uint32_t>* peerDeparted_;

  const char* sendData_ = nullptr;  // non-null while a send is in flight
  size_t sendBytes_ = 0;
  size_t sendOffset_ = 0;  // bytes already copied into slots
  uint32_t sendMessageSeq_ = 0;

  bool wakePending_ = false;  // progress() moved something no ring has announced yet

  RecvSink* recvSink_ = nullptr;  // non-null while a receive is in flight
  size_t recvBytes_ = 0;
  size_t recvOffset_ = 0;  // bytes already delivered
  uint32_t recvMessageSeq_ = 0;
};

// ---------------------------------------------------------------------------------------------
class ShmTransportImpl final : public Transport {
 public:
  ShmTransportImpl(int rank, ShmSegment ownBell)
      : rank_(rank),
        ownBellSegment_(std::move(ownBell)),
        doorbell_(&static_cast<DoorbellLayout*>(ownBellSegment_.data())->word) {}
  // Peers keep their mapping of our doorbell: the mark outlives us.
  ~ShmTransportImpl() override { announceDeparture(); }

  void announceDeparture() override {
    static_cast<DoorbellLayout*>(ownBellSegment_.data())->departed.store(1, std::memory_order_release);
    for (auto& [peer, connection] : connections_) connection->wakePeer();
  }

  void connect(int peer, pid_t peerPid, ShmFifo incoming, ShmFifo outgoing, ShmSegment peerBell) {
    connections_.emplace(peer, std::make_unique<ShmConnection>(*this, doorbell_, rank_, peer, peerPid,
                                                               std::move(incoming), std::move(outgoing),
                                                               std::move(peerBell)));
  }

  const char* name() const override { return "shm"; }

  void failAll(int code, const std::string& reason) override {
    for (auto& [peer, connection] : connections_) connection->fail(code, reason);
  }

  Connection* connection(int peer) override {
    auto found = connections_.find(peer);
    if (found == connections_.end()) {
      throwUsage("shm: rank " + std::to_string(rank_) + " has no shm connection to rank " +
                 std::to_string(peer));
    }
    return found->second.get();
  }

 private:
  int rank_;
  ShmSegment ownBellSegment_;
  Doorbell doorbell_;
  // Declared last so the connections (which ring peers' doorbells) go before our own bell.
  std::map<int, std::unique_ptr<ShmConnection>> connections_;
};

void checkOptions(const ShmOptions& options) {
  if (options.slotCount < 1) {
    throwArgument("shm: slot count " + std::to_string(options.slotCount) + " must be positive");
  }
  ShmFifo::checkGeometry({options.slotBytes, static_cast<uint32_t>(options.slotCount)});
  if (options.namePrefix.empty() || options.namePrefix.size() > kMaxPrefixLength ||
      options.namePrefix.find('/') != std::string::npos) {
    throwArgument("shm: name prefix '" + options.namePrefix + "' must be 1 to " +
                  std::to_string(kMaxPrefixLength) + " characters without '/'");
  }
}

void checkPeers(const std::vector<int>& peers, int rank, int size) {
  std::set<int> seen;
  for (int peer : peers) {
    if (peer < 0 || peer >= size || peer == rank) {
      throwArgument("shm: rank " + std::to_string(rank) + " lists invalid peer " +
                    std::to_string(peer) + " (communicator of " + std::to_string(size) + ")");
    }
    if (!seen.insert(peer).second) {
      throwArgument("shm: rank " + std::to_string(rank) + " lists peer " + std::to_string(peer) +
                    " twice");
    }
  }
}

ShmSegment createDoorbell(const std::string& name, size_t fifoCount) {
  ShmSegment segment = ShmSegment::create(name, doorbellBytes(fifoCount));
  segment.stampHeader(kDoorbellMagic, kDoorbellVersion);
  auto* layout = static_cast<DoorbellLayout*>(segment.data());
  new (&layout->word) DoorbellWord();
  new (&layout->departed) std::atomic<uint32_t>(0);
  layout->fifoCount = static_cast<int32_t>(fifoCount);
  return segment;
}

ShmSegment openDoorbell(const PublishedDoorbell& published, const std::string& name, int owner) {
  ShmSegment segment = ShmSegment::open(published.pid, published.fd, name, sizeof(DoorbellLayout));
  segment.checkHeader(kDoorbellMagic, kDoorbellVersion, "doorbell of rank " + std::to_string(owner));
  const auto* layout = static_cast<const DoorbellLayout*>(segment.data());
  if (layout->fifoCount < 0 || doorbellBytes(static_cast<size_t>(layout->fifoCount)) > segment.size()) {
    throwRemote("shm: doorbell of rank " + std::to_string(owner) + " lists " + std::to_string(layout->fifoCount) +
                " FIFOs, more than it holds");
  }
  return segment;
}

// The descriptor under which `owner` shares the FIFO that `rank` sends on.
int fifoDescriptor(const ShmSegment& ownerBell, int owner, int rank) {
  const auto* layout = static_cast<const DoorbellLayout*>(ownerBell.data());
  const FifoEntry* directory = fifoEntries(ownerBell);
  for (int32_t i = 0; i < layout->fifoCount; ++i) {
    if (directory[i].fromRank == rank) return directory[i].fd;
  }
  throwRemote("shm: rank " + std::to_string(owner) + " has no FIFO for rank " + std::to_string(rank) +
              " (the ranks disagree on who talks over shm)");
}

}  // namespace

// Collective. Errors are held until the exchange and the barrier are passed so that a rank
// that fails never leaves the others waiting; every segment is RAII, so a failure unmaps and
// closes whatever was made. The bootstrap bounds the waits (options.timeoutMs is the same
// bound the caller gave it; nothing here waits on its own).
std::unique_ptr<Transport> createShmTransport(Bootstrap& bootstrap,
                                                 const std::vector<int>& peers,
                                                 const ShmOptions& options) {
  // Before any peer can reach our doorbell: rings skip their fence from here on (doorbell.h).
  enableAsymmetricDoorbells();
  const int rank = bootstrap.rank();
  const std::string& prefix = options.namePrefix;
  std::exception_ptr failure;
  auto attempt = [&failure](auto&& step) {
    if (failure) return;
    try {
      step();
    } catch (...) {
      failure = std::current_exception();
    }
  };

  // 1. Our own segments: the doorbell peers ring, and one FIFO per peer that sends to us,
  // listed in the doorbell so that the peer finds it.
  ShmFifoGeometry geometry;
  ShmSegment ownBell;
  std::map<int, ShmFifo> incoming;
  attempt([&] {
    checkOptions(options);
    checkPeers(peers, rank, bootstrap.size());
    geometry = {options.slotBytes, static_cast<uint32_t>(options.slotCount)};
    ownBell = createDoorbell(doorbellName(prefix, rank), peers.size());
    FifoEntry* directory = fifoEntries(ownBell);
    for (int peer : peers) {
      ShmSegment segment =
          ShmSegment::create(fifoName(prefix, peer, rank), ShmFifo::segmentBytes(geometry));
      *directory++ = FifoEntry{peer, segment.fd()};
      incoming.emplace(peer, ShmFifo::format(std::move(segment), geometry, peer, rank));
    }
  });
  // Everyone learns where every doorbell is; this is also the barrier before the peers open.
  std::vector<PublishedDoorbell> doorbells(bootstrap.size());
  doorbells[rank] = PublishedDoorbell{static_cast<int32_t>(getpid()), failure ? -1 : ownBell.fd()};
  bootstrap.allGather(doorbells.data(), sizeof(PublishedDoorbell));

  // 2. The peers' segments, opened through their creators' descriptors.
  std::map<int, ShmFifo> outgoing;
  std::map<int, ShmSegment> peerBells;
  attempt([&] {
    for (int peer : peers) {
      ShmSegment bell = openDoorbell(doorbells[peer], doorbellName(prefix, peer), peer);
      const int fifoFd = fifoDescriptor(bell, peer, rank);
      ShmSegment segment =
          ShmSegment::open(doorbells[peer].pid, fifoFd, fifoName(prefix, rank, peer), sizeof(ShmSegmentHeader));
      outgoing.emplace(peer, ShmFifo::attach(std::move(segment), geometry, rank, peer));
      peerBells.emplace(peer, std::move(bell));
    }
  });
  bootstrap.barrier();

  // 3. Everyone has mapped everything: the descriptors are not needed any more.
  ownBell.stopSharing();
  for (auto& [peer, fifo] : incoming) fifo.segment().stopSharing();
  if (failure) std::rethrow_exception(failure);

  auto transport = std::make_unique<ShmTransportImpl>(rank, std::move(ownBell));
  for (int peer : peers) {
    transport->connect(peer, doorbells[peer].pid, std::move(incoming.at(peer)), std::move(outgoing.at(peer)),
                       std::move(peerBells.at(peer)));
  }
  LOOM_INFO(SHM, "shm: rank %d connected to %zu peers (%d slots of %zu bytes per direction)", rank,
            peers.size(), options.slotCount, options.slotBytes);
  return transport;
}

}  // namespace loom::transport
