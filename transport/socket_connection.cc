#include "socket_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "src/error.h"

namespace loom::transport {

namespace {

// Deliveries are cut at multiples of this, so no element of any datatype is ever split
// between two sink calls.
constexpr size_t kDeliveryAlign = 16;

// Each progress() call moves at most this many bytes per lane and direction, so one busy
// connection cannot starve the others a single thread drives.
constexpr size_t kProgressBudget = 4 << 20;

}  // namespace

SocketConnection::SocketConnection(int selfRank, int peer, std::vector<net::Socket> lanes,
                                   size_t stripeBytes)
    : self_(selfRank), peer_(peer), stripe_(stripeBytes) {
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

void SocketConnection::postSend(const void* data, size_t bytes) {
  if (sendRemaining_ != 0) throwInternal("socket postSend while a send is in flight");
  sendData_ = static_cast<const uint8_t*>(data);
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
  while (lane.sent < lane.sendShare && budget > 0) {
    const size_t offset = messageOffset(index, lane.sent);
    const size_t length = std::min(runLength(index, lane.sent, sendBytes_), budget);
    ssize_t n = ::send(lane.socket.fd(), sendData_ + offset, length, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      fail("sending to", errno);
    }
    lane.sent += static_cast<size_t>(n);
    sendRemaining_ -= static_cast<size_t>(n);
    budget -= static_cast<size_t>(n);
    moved = true;
  }
  return moved;
}

bool SocketConnection::progressRecv(size_t index) {
  Lane& lane = lanes_[index];
  if (char* destination = sink_->destination()) return progressRecvDirect(index, destination);
  size_t budget = kProgressBudget;
  bool moved = false;
  // Invariant: staging holds bytes of a single block, starting at share offset `delivered`
  // (a multiple of 16 in the message), so it maps onto one contiguous message range.
  while (lane.delivered + lane.staged < lane.recvShare && budget > 0) {
    const size_t position = lane.delivered + lane.staged;
    const size_t room = lane.staging.size() - lane.staged;
    const size_t length = std::min(room, runLength(index, position, recvBytes_));
    ssize_t n = ::recv(lane.socket.fd(), lane.staging.data() + lane.staged, length, MSG_DONTWAIT);
    if (n == 0) fail("receiving from", 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      fail("receiving from", errno);
    }
    lane.staged += static_cast<size_t>(n);
    budget -= std::min(budget, static_cast<size_t>(n));
    moved = true;
    // A block's (or the message's) end is delivered whole; otherwise only whole 16-byte units.
    const bool blockComplete = lane.staged == runLength(index, lane.delivered, recvBytes_);
    const size_t deliverable =
        blockComplete ? lane.staged : lane.staged / kDeliveryAlign * kDeliveryAlign;
    if (deliverable == 0) continue;
    sink_->deliver(messageOffset(index, lane.delivered), lane.staging.data(), deliverable);
    lane.delivered += deliverable;
    lane.staged -= deliverable;
    recvRemaining_ -= deliverable;
    if (lane.staged > 0) {
      std::memmove(lane.staging.data(), lane.staging.data() + deliverable, lane.staged);
    }
  }
  return moved;
}

// A plain copy: the kernel writes the bytes where they belong, no staging and no second copy.
bool SocketConnection::progressRecvDirect(size_t index, char* destination) {
  Lane& lane = lanes_[index];
  size_t budget = kProgressBudget;
  bool moved = false;
  while (lane.delivered < lane.recvShare && budget > 0) {
    const size_t length = runLength(index, lane.delivered, recvBytes_);
    ssize_t n = ::recv(lane.socket.fd(), destination + messageOffset(index, lane.delivered), length, MSG_DONTWAIT);
    if (n == 0) fail("receiving from", 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      fail("receiving from", errno);
    }
    lane.delivered += static_cast<size_t>(n);
    recvRemaining_ -= static_cast<size_t>(n);
    budget -= std::min(budget, static_cast<size_t>(n));
    moved = true;
  }
  return moved;
}

void SocketConnection::addPollFds(std::vector<pollfd>& fds) const {
  for (const Lane& lane : lanes_) {
    short events = 0;
    if (recvRemaining_ != 0 && lane.delivered < lane.recvShare) events |= POLLIN;
    if (sendRemaining_ != 0 && lane.sent < lane.sendShare) events |= POLLOUT;
    if (events != 0) fds.push_back({lane.socket.fd(), events, 0});
  }
}

void SocketConnection::fail(const char* direction, int err) const {
  const std::string where = "rank " + std::to_string(self_) + " " + direction + " peer rank " +
                            std::to_string(peer_) + " (socket)";
  const std::string state = recvRemaining_ != 0
                                ? " with " + std::to_string(recvBytes_ - recvRemaining_) + " of " +
                                      std::to_string(recvBytes_) + " bytes received"
                                : "";
  if (err == 0 || err == ECONNRESET || err == EPIPE) {
    throw Error(loomRemoteError, "peer rank " + std::to_string(peer_) +
                                     " (socket) closed the connection: " + where + state);
  }
  throwSystem(where + state, err);
}

}  // namespace loom::transport
