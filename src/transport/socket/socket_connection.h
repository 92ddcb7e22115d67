// SPDX-License-Identifier: Apache-2.0
// One TCP peer: k authenticated, non-blocking sockets ("lanes"). A message is cut into blocks
// of stripeBytes; block i travels on lane i % k, so a large message uses every lane while a
// small one (< stripeBytes) goes on lane 0 only. Each lane carries its share of every message
// in order, so both sides can compute which message bytes each lane holds from the size alone.
// Lane 0 puts a header (socket_wire.h) before its share: the receiver reads and checks it, and
// only then the other lanes, so a peer in another call, a corrupt stream or a peer's failure
// report is caught before any payload byte is used. Lanes progress independently.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/net/socket.h"
#include "transport/socket/fault_injection.h"
#include "transport/socket/socket_wire.h"
#include "transport/transport.h"

namespace loom::transport {

class SocketConnection final : public Connection {
 public:
  // `lanes[i]` is the socket with index i; stripeBytes is a positive multiple of 16.
  // `owner` (the transport it belongs to) may be null for a connection used on its own (tests).
  SocketConnection(int selfRank, int peer, std::vector<net::Socket> lanes, size_t stripeBytes,
                   FaultPlan faults = {}, Transport* owner = nullptr);
  ~SocketConnection() override;

  void postSend(const Region& region, size_t offset, size_t bytes) override;
  void postRecv(size_t bytes, RecvSink* sink) override;
  bool progress() override;
  bool sendDone() const override { return sendRemaining_ == 0; }
  bool recvDone() const override { return recvRemaining_ == 0; }
  int peer() const override { return peer_; }
  Transport& transport() const override;
  void addPollFds(std::vector<pollfd>& fds) const override;
  void setSendTag(const CallTag& tag) override { sendTag_ = tag; }
  void setRecvTag(const CallTag& tag) override { recvTag_ = tag; }
  // Drains what is left of a message being received (discarding it, as far as it has
  // arrived), then reads a Failure frame if lane 0 holds a whole one; also after a completed
  // receive. May be called again (it resumes where it stopped).
  void throwPeerReport() override;
  // Shuts every lane down both ways: the peer reads EOF at once (and fails its call) instead
  // of waiting for data this side will never send. The sockets stay open until destruction.
  void shutdown();
  // After this rank's call failed: if no message is half sent, tells the peer why in a
  // Failure frame (best effort, never blocks), then shuts down.
  void fail(int code, const std::string& reason);
  // The peer's process id, named when the peer goes (0: unknown, not named).
  void setPeerPid(pid_t pid) { peerPid_ = pid; }

  // Bytes each lane reads at once before handing them to the sink.
  static constexpr size_t kStagingBytes = 256 * 1024;

 private:
  struct Lane {
    net::Socket socket;
    size_t sendShare = 0;  // bytes of the current send this lane carries
    size_t sent = 0;
    size_t recvShare = 0;  // bytes of the current receive this lane carries
    size_t delivered = 0;  // share bytes already handed to the sink
    size_t staged = 0;     // share bytes read into staging but not yet delivered
    std::vector<uint8_t> staging;
  };

  // How many bytes of a `total`-byte message lane `lane` carries.
  size_t shareOf(size_t lane, size_t total) const;
  // The message offset of byte `shareOffset` of lane `lane`'s share.
  bool progressRecvDirect(size_t index, char* destination);
  size_t messageOffset(size_t lane, size_t shareOffset) const;
  // Bytes from share offset `shareOffset` to the end of its block (or message).
  size_t runLength(size_t lane, size_t shareOffset, size_t total) const;

  bool progressSend(size_t lane);
  bool progressRecv(size_t lane);
  // Lane 0 before its share: reads the header, then a failure report if that is what comes.
  bool progressHeader();
  // `bytes` more of the current receive are delivered (or discarded); when it is complete,
  // resets the header state so that the next frame's header is read fresh.
  void consumed(size_t bytes);
  // throwPeerReport's discarding of the rest of a message; true once all of it is gone.
  bool drainMessage();
  void checkHeader(const WireHeader& header) const;
  // send/recv with LOOM_FAULT applied (short_io, close_after).
  ssize_t sendOn(size_t lane, const void* data, size_t bytes, const void* more = nullptr, size_t moreBytes = 0);
  ssize_t recvOn(size_t lane, void* data, size_t bytes, void* more = nullptr, size_t moreBytes = 0);
  // A non-blocking send's or recv's result as bytes moved: 0 when nothing can move now
  // (EAGAIN, EINTR: the next progress() tries again); throws on EOF and on errors.
  size_t transferred(ssize_t n, const char* direction);
  [[noreturn]] void throwFailureReport() const;
  // Hands lane `index`'s staged bytes to the sink: a completed block whole, else whole
  // 16-byte units (no element of any datatype is ever split between two deliveries).
  void deliverStaged(size_t index);
  [[noreturn]] void fail(const char* direction, int err);

  Transport* owner_;
  int self_;
  int peer_;
  pid_t peerPid_ = 0;
  size_t stripe_;
  std::vector<Lane> lanes_;

  const uint8_t* sendData_ = nullptr;
  size_t sendBytes_ = 0;
  size_t sendRemaining_ = 0;
  RecvSink* sink_ = nullptr;
  size_t recvBytes_ = 0;
  size_t recvRemaining_ = 0;  // bytes not yet delivered

  CallTag sendTag_;
  CallTag recvTag_;
  uint8_t sendHeader_[kWireHeaderBytes] = {};
  size_t sendHeaderSent_ = kWireHeaderBytes;  // < kWireHeaderBytes while the header goes out
  uint8_t recvHeader_[kWireHeaderBytes] = {};
  size_t recvHeaderGot_ = 0;
  bool headerChecked_ = false;  // the current receive's header arrived and matched
  WireHeader failure_;          // a Failure frame being read (failureExpected_ > 0)
  size_t failureExpected_ = 0;
  size_t failureGot_ = 0;
  std::string failureReason_;

  FaultPlan faults_;
  uint64_t bytesSent_ = 0;     // headers included, for close_after
  uint64_t messagesSent_ = 0;  // for corrupt_header
};

}  // namespace loom::transport
