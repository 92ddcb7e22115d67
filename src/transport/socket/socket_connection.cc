// SPDX-License-Identifier: Apache-2.0
#include "transport/socket/socket_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "base/peer_left.h"

namespace loom::transport {

namespace {

// Deliveries are cut at multiples of this, so no element of any datatype is ever split
// between two sink calls.
constexpr size_t kDeliveryAlign = 16;

// Each progress() call moves at most this many bytes per lane and direction, so one busy
// connection cannot starve the others a single thread drives.
constexpr size_t kProgressBudget = 4 << 20;

// Caps a two-part transfer (header, then payload) at `limit` bytes, the first part first.
void capTransfer(size_t& bytes, size_t& moreBytes, uint64_t limit) {
  if (bytes >= limit) {
    bytes = static_cast<size_t>(limit);
    moreBytes = 0;
  } else {
    moreBytes = static_cast<size_t>(std::min<uint64_t>(moreBytes, limit - bytes));
  }
}

}  // namespace

SocketConnection::SocketConnection(int selfRank, int peer, std::vector<net::Socket> lanes,
                                   size_t stripeBytes, FaultPlan faults, Transport* owner)
    : owner_(owner), self_(selfRank), peer_(peer), stripe_(stripeBytes), faults_(faults) {
  if (lanes.empty()) throwInternal("SocketConnection needs at least one socket");
  if (stripeBytes == 0 || stripeBytes % kDeliveryAlign != 0) {
    throwArgument("socket stripe size " + std::to_string(stripeBytes) +
                  " must be a positive multiple of 16");
  }
  lanes_.resize(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) lanes_[i].socket = std::move(lanes[i]);
}

SocketConnection::~SocketConnection() = default;

void SocketConnection::shutdown() {
  for (Lane& lane : lanes_) {
    // Failures (ENOTCONN: the peer already went) need no answer: the point is the peer's EOF.
    if (lane.socket.valid()) ::shutdown(lane.socket.fd(), SHUT_RDWR);
  }
}

void SocketConnection::fail(int code, const std::string& reason) {
  // At a message boundary only: nothing in flight, or a message posted but not a byte sent.
  const bool atBoundary = (sendRemaining_ == 0 && sendHeaderSent_ == kWireHeaderBytes) ||
                          (sendHeaderSent_ == 0 && sendRemaining_ == sendBytes_ &&
                           std::all_of(lanes_.begin(), lanes_.end(), [](const Lane& lane) { return lane.sent == 0; }));
  if (atBoundary && !lanes_.empty() && lanes_[0].socket.valid()) {
    WireHeader header;
    header.kind = FrameKind::Failure;
    header.code = code;
    header.bytes = std::min(reason.size(), kMaxFailureReasonBytes);
    std::vector<uint8_t> frame(kWireHeaderBytes + header.bytes);
    encodeWireHeader(header, frame.data());
    std::memcpy(frame.data() + kWireHeaderBytes, reason.data(), header.bytes);
    // One non-blocking attempt: a full socket buffer means the peer is not reading, and a
    // partial frame reads as EOF there, which is an error too.
    (void)::send(lanes_[0].socket.fd(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  shutdown();
}

ssize_t SocketConnection::sendOn(size_t lane, const void* data, size_t bytes, const void* more, size_t moreBytes) {
  if (faults_.closeAfterBytes >= 0) {
    const uint64_t limit = static_cast<uint64_t>(faults_.closeAfterBytes);
    if (bytesSent_ >= limit) {
      shutdown();
      throw Error(loomSystemError, "rank " + std::to_string(self_) + ": LOOM_FAULT close_after=" +
                                       std::to_string(limit) + " closed the connection to peer rank " +
                                       std::to_string(peer_) + " (socket)");
    }
    const uint64_t left = limit - bytesSent_;
    capTransfer(bytes, moreBytes, left);
  }
  if (faults_.shortIo > 0) capTransfer(bytes, moreBytes, faults_.shortIo);
  ssize_t n;
  if (moreBytes == 0) {
    n = ::send(lanes_[lane].socket.fd(), data, bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
  } else {
    // Header and the first payload run in one system call.
    iovec parts[2] = {{const_cast<void*>(data), bytes}, {const_cast<void*>(more), moreBytes}};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = 2;
    n = ::sendmsg(lanes_[lane].socket.fd(), &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  if (n > 0) bytesSent_ += static_cast<uint64_t>(n);
  return n;
}

size_t SocketConnection::transferred(ssize_t n, const char* direction) {
  if (n > 0) return static_cast<size_t>(n);
  if (n == 0) fail(direction, 0);  // a recv's EOF (a send of > 0 bytes never returns 0)
  if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  fail(direction, errno);
}

ssize_t SocketConnection::recvOn(size_t lane, void* data, size_t bytes, void* more, size_t moreBytes) {
  if (faults_.shortIo > 0) capTransfer(bytes, moreBytes, faults_.shortIo);
  if (moreBytes == 0) return ::recv(lanes_[lane].socket.fd(), data, bytes, MSG_DONTWAIT);
  iovec parts[2] = {{data, bytes}, {more, moreBytes}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = 2;
  return ::recvmsg(lanes_[lane].socket.fd(), &message, MSG_DONTWAIT);
}

size_t SocketConnection::shareOf(size_t lane, size_t total) const {
  const size_t k = lanes_.size();
  const size_t blocks = (total + stripe_ - 1) / stripe_;
  if (lane >= blocks) return 0;
  const size_t mine = (blocks - 1 - lane) / k + 1;
  size_t share = mine * stripe_;
  if ((blocks - 1) % k == lane) share -= blocks * stripe_ - total;  // the short last block
  return share;
}

size_t SocketConnection::messageOffset(size_t lane, size_t shareOffset) const {
  const size_t block = lane + (shareOffset / stripe_) * lanes_.size();
  return block * stripe_ + shareOffset % stripe_;
}

size_t SocketConnection::runLength(size_t lane, size_t shareOffset, size_t total) const {
  const size_t offset = messageOffset(lane, shareOffset);
  return std::min(stripe_ - shareOffset % stripe_, total - offset);
}

Transport& SocketConnection::transport() const {
  if (owner_ == nullptr) throwInternal("socket connection to rank " + std::to_string(peer_) + " has no transport");
  return *owner_;
}

void SocketConnection::postSend(const Region& region, size_t offset, size_t bytes) {
  if (sendRemaining_ != 0) throwInternal("socket postSend while a send is in flight");
  if (region.base == nullptr || offset + bytes > region.bytes) {
    throwInternal("socket postSend outside its registered region");
  }
  const char* data = region.base + offset;
  if (faults_.delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(faults_.delayMs));
  WireHeader header;
  header.sequence = sendTag_.sequence;
  header.call = sendTag_.call;
  header.bytes = bytes;
  encodeWireHeader(header, sendHeader_);
  if (static_cast<int64_t>(++messagesSent_) == faults_.corruptHeader) sendHeader_[0] ^= 0xff;
  sendHeaderSent_ = 0;
  sendData_ = reinterpret_cast<const uint8_t*>(data);
  sendBytes_ = bytes;
  sendRemaining_ = bytes;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lanes_[i].sendShare = shareOf(i, bytes);
    lanes_[i].sent = 0;
  }
}

void SocketConnection::postRecv(size_t bytes, RecvSink* sink) {
  if (recvRemaining_ != 0) throwInternal("socket postRecv while a receive is in flight");
  sink_ = sink;
  recvBytes_ = bytes;
  recvRemaining_ = bytes;
  recvHeaderGot_ = 0;
  headerChecked_ = false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    lane.recvShare = shareOf(i, bytes);
    lane.delivered = 0;
    lane.staged = 0;
    if (lane.recvShare > 0 && lane.staging.empty()) {
      lane.staging.resize(std::min(kStagingBytes, std::max(stripe_, kDeliveryAlign)));
    }
  }
}

bool SocketConnection::progress() {
  bool moved = false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (sendRemaining_ != 0) moved |= progressSend(i);
    if (recvRemaining_ != 0) moved |= progressRecv(i);
  }
  return moved;
}

bool SocketConnection::progressSend(size_t index) {
  Lane& lane = lanes_[index];
  size_t budget = kProgressBudget;
  bool moved = false;
  while (index == 0 && sendHeaderSent_ < kWireHeaderBytes) {
    const size_t headerLeft = kWireHeaderBytes - sendHeaderSent_;
    const size_t length = std::min(runLength(0, 0, sendBytes_), budget);
    const size_t n = transferred(sendOn(0, sendHeader_ + sendHeaderSent_, headerLeft, sendData_, length), "sending to");
    if (n == 0) return moved;
    moved = true;
    const size_t headerPart = std::min(n, headerLeft);
    sendHeaderSent_ += headerPart;
    const size_t payloadPart = n - headerPart;
    lane.sent += payloadPart;
    sendRemaining_ -= payloadPart;
    budget -= payloadPart;
  }
  while (lane.sent < lane.sendShare && budget > 0) {
    const size_t offset = messageOffset(index, lane.sent);
    const size_t length = std::min(runLength(index, lane.sent, sendBytes_), budget);
    const size_t n = transferred(sendOn(index, sendData_ + offset, length), "sending to");
    if (n == 0) break;
    lane.sent += n;
    sendRemaining_ -= n;
    budget -= n;
    moved = true;
  }
  return moved;
}

bool SocketConnection::progressHeader() {
  bool moved = false;
  Lane& lane = lanes_[0];
  for (;;) {
    if (failureExpected_ > 0) {  // the reason that follows a Failure header
      const size_t n = transferred(recvOn(0, failureReason_.data() + failureGot_, failureExpected_ - failureGot_),
                                   "receiving from");
      if (n == 0) return moved;
      moved = true;
      failureGot_ += n;
      if (failureGot_ == failureExpected_) throwFailureReport();
      continue;
    }
    // The header and the start of lane 0's share in one system call: a small message costs
    // one recv, as it would unframed. The payload part is used only once the header checks out.
    char* destination = sink_->destination();
    uint8_t* payload;
    size_t payloadRoom = runLength(0, 0, recvBytes_);
    if (destination != nullptr) {
      payload = reinterpret_cast<uint8_t*>(destination);  // lane 0 starts at message offset 0
    } else {
      payload = lane.staging.data();
      payloadRoom = std::min(payloadRoom, lane.staging.size());
    }
    const size_t n = transferred(
        recvOn(0, recvHeader_ + recvHeaderGot_, kWireHeaderBytes - recvHeaderGot_, payload, payloadRoom),
        "receiving from");
    if (n == 0) return moved;
    moved = true;
    const size_t headerPart = std::min(n, kWireHeaderBytes - recvHeaderGot_);
    const size_t payloadPart = n - headerPart;
    recvHeaderGot_ += headerPart;
    if (recvHeaderGot_ < kWireHeaderBytes) continue;
    const WireHeader header = decodeWireHeader(recvHeader_, peer_);
    if (header.kind == FrameKind::Failure) {
      failure_ = header;
      failureExpected_ = header.bytes;  // bounded by decodeWireHeader
      failureReason_.assign(failureExpected_, '\0');
      failureGot_ = std::min(payloadPart, failureExpected_);
      std::memcpy(failureReason_.data(), payload, failureGot_);
      if (failureGot_ == failureExpected_) throwFailureReport();
      continue;
    }
    checkHeader(header);
    headerChecked_ = true;
    if (destination != nullptr) {
      lane.delivered += payloadPart;
      consumed(payloadPart);
    } else {
      lane.staged += payloadPart;
      deliverStaged(0);
    }
    return true;  // a small message may be complete already: its header state is reset
  }
}

void SocketConnection::consumed(size_t bytes) {
  recvRemaining_ -= bytes;
  // The message is complete: what lane 0 carries next is a new frame's header (the next
  // message's, or a Failure frame that throwPeerReport may look for before postRecv).
  if (recvRemaining_ == 0) {
    recvHeaderGot_ = 0;
    headerChecked_ = false;
  }
}

void SocketConnection::throwFailureReport() const {
  const std::string reason = failureReason_.empty() ? "(no reason given)" : failureReason_;
  throw ExplainedError(static_cast<loomResult_t>(failure_.code),
                       "peer rank " + std::to_string(peer_) + " failed: " + reason);
}

void SocketConnection::deliverStaged(size_t index) {
  Lane& lane = lanes_[index];
  // A block's (or the message's) end is delivered whole; otherwise only whole 16-byte units.
  const bool blockComplete = lane.staged == runLength(index, lane.delivered, recvBytes_);
  const size_t deliverable = blockComplete ? lane.staged : lane.staged / kDeliveryAlign * kDeliveryAlign;
  if (deliverable == 0) return;
  sink_->deliver(messageOffset(index, lane.delivered), lane.staging.data(), deliverable);
  lane.delivered += deliverable;
  lane.staged -= deliverable;
  consumed(deliverable);
  if (lane.staged > 0) std::memmove(lane.staging.data(), lane.staging.data() + deliverable, lane.staged);
}

void SocketConnection::checkHeader(const WireHeader& header) const {
  checkSameCall(recvTag_, header.sequence, header.call, self_, peer_);
  if (header.bytes != recvBytes_) {
    throw ExplainedError(loomInvalidUsage, "peer rank " + std::to_string(peer_) +
                                               " (socket) sent a message of " + std::to_string(header.bytes) +
                                      " bytes where this rank expects " + std::to_string(recvBytes_) +
                                      ": the ranks disagree on the call or on its settings");
  }
}

bool SocketConnection::progressRecv(size_t index) {
  Lane& lane = lanes_[index];
  bool headerMoved = false;
  if (!headerChecked_) {
    if (index != 0) return false;  // other lanes wait until lane 0's header is checked
    headerMoved = progressHeader();
    if (!headerChecked_) return headerMoved;
  }
  if (char* destination = sink_->destination()) return progressRecvDirect(index, destination) || headerMoved;
  size_t budget = kProgressBudget;
  bool moved = false;
  // Invariant: staging holds bytes of a single block, starting at share offset `delivered`
  // (a multiple of 16 in the message), so it maps onto one contiguous message range.
  while (lane.delivered + lane.staged < lane.recvShare && budget > 0) {
    const size_t position = lane.delivered + lane.staged;
    const size_t room = lane.staging.size() - lane.staged;
    const size_t length = std::min(room, runLength(index, position, recvBytes_));
    const size_t n = transferred(recvOn(index, lane.staging.data() + lane.staged, length), "receiving from");
    if (n == 0) break;
    lane.staged += n;
    budget -= std::min(budget, n);
    moved = true;
    deliverStaged(index);
  }
  return moved || headerMoved;
}

// A plain copy: the kernel writes the bytes where they belong, no staging and no second copy.
bool SocketConnection::progressRecvDirect(size_t index, char* destination) {
  Lane& lane = lanes_[index];
  size_t budget = kProgressBudget;
  bool moved = false;
  while (lane.delivered < lane.recvShare && budget > 0) {
    const size_t length = runLength(index, lane.delivered, recvBytes_);
    const size_t n = transferred(recvOn(index, destination + messageOffset(index, lane.delivered), length),
                                 "receiving from");
    if (n == 0) break;
    lane.delivered += n;
    consumed(n);
    budget -= std::min(budget, n);
    moved = true;
  }
  return moved;
}

void SocketConnection::addPollFds(std::vector<pollfd>& fds) const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& lane = lanes_[i];
    short events = 0;
    // Until lane 0's header is checked only lane 0 is read.
    if (recvRemaining_ != 0 && (headerChecked_ ? lane.delivered < lane.recvShare : i == 0)) events |= POLLIN;
    if (sendRemaining_ != 0 && lane.sent < lane.sendShare) events |= POLLOUT;
    if (events != 0) fds.push_back({lane.socket.fd(), events, 0});
  }
}

void SocketConnection::throwPeerReport() {
  if (lanes_.empty() || !lanes_[0].socket.valid()) return;
  if (recvRemaining_ != 0 && headerChecked_ && !drainMessage()) return;
  // Lane 0 now holds the next frame from its start: a new header, or a Failure header's reason.
  // (consumed() resets the header state when a receive completes, so this also finds a report
  // sent after our last receive from this peer.)
  for (;;) {
    const bool readingReason = failureExpected_ > 0;
    uint8_t* into = readingReason ? reinterpret_cast<uint8_t*>(failureReason_.data()) + failureGot_
                                  : recvHeader_ + recvHeaderGot_;
    const size_t wanted = readingReason ? failureExpected_ - failureGot_ : kWireHeaderBytes - recvHeaderGot_;
    if (wanted == 0) return;  // a whole header that was no Failure: nothing to report
    const ssize_t n = ::recv(lanes_[0].socket.fd(), into, wanted, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nothing (more) there: no report
    if (readingReason) {
      failureGot_ += static_cast<size_t>(n);
    } else {
      recvHeaderGot_ += static_cast<size_t>(n);
      if (recvHeaderGot_ < kWireHeaderBytes) continue;
      if (net::getU32(recvHeader_) != kWireMagic || recvHeader_[4] != static_cast<uint8_t>(FrameKind::Failure)) {
        return;
      }
      try {
        failure_ = decodeWireHeader(recvHeader_, peer_);
      } catch (const Error&) {
        return;
      }
      failureExpected_ = failure_.bytes;
      failureReason_.assign(failureExpected_, '\0');
      failureGot_ = 0;
    }
    if (failureGot_ == failureExpected_) throwFailureReport();  // also a report without a reason
  }
}

// Mid-message: a report can only follow the message's end. Discards what is left of it as
// far as it has arrived (the call is failing; nobody uses these bytes), counting the bytes as
// received, so that a later call (the executor looks again for a while) resumes where this
// one stopped and reads the frame after the message from its first byte. Never blocks.
bool SocketConnection::drainMessage() {
  std::vector<uint8_t> discard(64 * 1024);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    if (lane.staged > 0) {  // read already, never delivered: discarded with the rest
      lane.delivered += lane.staged;
      consumed(lane.staged);
      lane.staged = 0;
    }
    // Every lane, even after one has nothing more yet: a sender blocked on a full lane must
    // be able to finish its message (and send its report after it).
    while (lane.delivered < lane.recvShare) {
      const size_t left = lane.recvShare - lane.delivered;
      const ssize_t n = ::recv(lane.socket.fd(), discard.data(), std::min(left, discard.size()), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // the rest is on its way
      if (n <= 0) return false;  // EOF or a broken socket: no report can follow
      lane.delivered += static_cast<size_t>(n);
      consumed(static_cast<size_t>(n));
    }
  }
  return recvRemaining_ == 0;
}

void SocketConnection::fail(const char* direction, int err) {
  // The peer may have closed after telling us why: a Failure frame beats a bare EOF.
  if (err == 0 || err == ECONNRESET || err == EPIPE) throwPeerReport();
  const std::string where = "rank " + std::to_string(self_) + " " + direction + " peer rank " +
                            std::to_string(peer_) + " (socket)";
  const std::string state = recvRemaining_ != 0
                                ? " with " + std::to_string(recvBytes_ - recvRemaining_) + " of " +
                                      std::to_string(recvBytes_) + " bytes received"
                                : "";
  if (err == 0 || err == ECONNRESET || err == EPIPE) {
    // A closed connection without a failure report: the peer destroyed or aborted its
    // communicator, or its process ended; the phrase shm and the direct engine use too.
    throw Error(loomRemoteError, peerLeft(peer_, peerPid_) + ": it closed the connection: " + where + state);
  }
  if (err == EFAULT) {
    // The kernel could not read or write the buffer: not host memory. The core stages device
    // buffers through pinned host memory (core/device_staging.h), so this is a bug or a pointer
    // that is no buffer at all; say so rather than leave "Bad address" to be puzzled over.
    throwArgument(where + state + ": the buffer is not host memory the kernel can reach (EFAULT: " +
                  errnoText(err) + "); a device pointer must go through Loom's device staging");
  }
  throwSystem(where + state, err);
}

}  // namespace loom::transport
