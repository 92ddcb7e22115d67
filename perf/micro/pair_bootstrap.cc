// SPDX-License-Identifier: Apache-2.0
#include "pair_bootstrap.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace loom::micro {

PairBootstrap::PairBootstrap(int rank, int socket) : rank_(rank), socket_(socket) {}

PairBootstrap::~PairBootstrap() { ::close(socket_); }

void PairBootstrap::sendAll(const void* data, size_t bytes) {
  const auto* cursor = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t sent = ::send(socket_, cursor, bytes, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) throwSystem("pair bootstrap: send to the peer process");
    cursor += sent;
    bytes -= static_cast<size_t>(sent);
  }
}

void PairBootstrap::receiveAll(void* data, size_t bytes) {
  auto* cursor = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t received = ::recv(socket_, cursor, bytes, 0);
    if (received < 0 && errno == EINTR) continue;
    if (received == 0) throwRemote("pair bootstrap: the peer process closed its end (it failed?)");
    if (received < 0) throwSystem("pair bootstrap: receive from the peer process");
    cursor += received;
    bytes -= static_cast<size_t>(received);
  }
}

// A socketpair buffers far more than a barrier byte or a small block, so both sides may send
// first without deadlock.
void PairBootstrap::allGather(void* data, size_t bytesPerRank) {
  auto* blocks = static_cast<char*>(data);
  sendAll(blocks + rank_ * bytesPerRank, bytesPerRank);
  receiveAll(blocks + (1 - rank_) * bytesPerRank, bytesPerRank);
}

bool PairBootstrap::peerClosed() const {
  pollfd entry{socket_, POLLIN | POLLRDHUP, 0};
  if (::poll(&entry, 1, 0) <= 0) return false;
  if ((entry.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0) return true;
  char byte;
  return ::recv(socket_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void PairBootstrap::barrier() {
  const char token = 'b';
  char peerToken = 0;
  sendAll(&token, 1);
  receiveAll(&peerToken, 1);
}

}  // namespace loom::micro
