// SPDX-License-Identifier: Apache-2.0
// SocketBootstrap: rendezvous at the root, then a TCP ring among the ranks. Every ring
// connection is authenticated and every allGather message carries a checked header, so a rank
// that runs a different sequence of bootstrap calls fails loudly instead of mixing data.
#include <poll.h>

#include <vector>

#include "bootstrap/socket_bootstrap.h"
#include "base/error.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "base/net/peer_hello.h"
#include "base/net/socket.h"
#include "bootstrap/rendezvous.h"

namespace loom {

namespace {

constexpr uint32_t kRingHelloMagic = 0x47524d4cu;  // "LMRG"
constexpr uint16_t kRingVersion = 2;  // 2: the common peer hello (base/net/peer_hello.h)
constexpr uint32_t kGatherMagic = 0x47414d4cu;  // "LMAG"
constexpr size_t kGatherHeaderBytes = 16;       // magic u32 | call number u32 | bytes u64

class SocketBootstrap final : public Bootstrap {
 public:
  SocketBootstrap(const Secret& secret, uint64_t commUid, const sockaddr_storage& localAddress, int rank,
                  int nranks, const BootstrapOptions& options, const RingRendezvous& rendezvous)
      : rank_(rank), size_(nranks), secret_(secret), commUid_(commUid), options_(options),
        localAddress_(localAddress) {
    who_ = (options.commName.empty() ? "" : "[" + options.commName + "] ") + "rank " +
           std::to_string(rank);
    const auto deadline = net::Deadline::afterMs(options.timeoutMs);
    // The listener stays open after the ring is connected: loomCommShrink reaches survivors
    // through it. Strangers that connect meanwhile wait in the backlog until a shrink's
    // authenticating acceptor drops them.
    sockaddr_storage advertised{};  // none when alone: nobody will connect
    if (size_ > 1) {
      listener_ = net::openListener(localAddress_);
      advertised = net::boundAddress(listener_.fd());
    }
    table_ = rendezvous(advertised, deadline);
    if (table_.size() != static_cast<size_t>(size_)) {
      throwInternal(who_ + ": bootstrap rendezvous returned " + std::to_string(table_.size()) + " addresses for " +
                    std::to_string(size_) + " ranks");
    }
    const std::vector<sockaddr_storage>& table = table_;
    const net::Socket& listener = listener_;
    if (size_ == 1) return;
    // Rank 0 accepts first and everyone else connects first, so the ring closes without a
    // cycle of ranks all waiting on connects that nobody accepts.
    if (rank_ == 0) {
      acceptPrev(listener, deadline);
      connectNext(table, deadline);
    } else {
      connectNext(table, deadline);
      acceptPrev(listener, deadline);
    }
    LOOM_TRACE(NET, "%s: bootstrap ring connected (%d ranks)", who_.c_str(), size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const Secret& secret() const override { return secret_; }
  uint64_t commUid() const override { return commUid_; }
  sockaddr_storage localAddress() const override { return localAddress_; }
  std::vector<sockaddr_storage> listenerAddresses() const override { return table_; }
  int listenerFd() const override { return listener_.valid() ? listener_.fd() : -1; }

  // Ring allgather: in step s this rank forwards block (rank - s) to the next rank and receives
  // block (rank - s - 1) from the previous one.
  void allGather(void* data, size_t bytesPerRank) override {
    if (size_ == 1) return;
    ++calls_;
    auto* blocks = static_cast<uint8_t*>(data);
    for (int step = 0; step < size_ - 1; ++step) {
      const int sendBlock = (rank_ - step + size_) % size_;
      const int recvBlock = (rank_ - step - 1 + 2 * size_) % size_;
      exchange(blocks + sendBlock * bytesPerRank, blocks + recvBlock * bytesPerRank, bytesPerRank);
    }
  }

  void barrier() override {
    std::vector<uint8_t> scratch(size_);
    allGather(scratch.data(), 1);
  }

 private:
  int prevRank() const { return (rank_ - 1 + size_) % size_; }
  int nextRank() const { return (rank_ + 1) % size_; }

  void connectNext(const std::vector<sockaddr_storage>& table, net::Deadline deadline) {
    const std::string what = who_ + ": bootstrap connect to rank " + std::to_string(nextRank());
    net::Socket sock = net::connectWithRetry(table[nextRank()], deadline, options_.timeoutMs,
                                             options_.abortFlag, what);
    net::tuneDataSocket(sock.fd());
    auth::authenticateClient(sock.fd(), secret_, auth::Purpose::BootstrapRing, deadline,
                             options_.abortFlag, what);
    net::PeerHello mine;
    mine.magic = kRingHelloMagic;
    mine.version = kRingVersion;
    mine.from = rank_;
    mine.to = nextRank();
    mine.commUid = commUid_;
    uint8_t hello[net::kPeerHelloBytes];
    net::encodePeerHello(mine, hello);
    net::writeFully(sock.fd(), hello, sizeof(hello), deadline, options_.abortFlag, what);
    next_ = std::move(sock);
  }

  void acceptPrev(const net::Socket& listener, net::Deadline deadline) {
    auth::AuthenticatingAcceptor acceptor(listener.fd(), secret_, auth::Purpose::BootstrapRing,
                                          net::kPeerHelloBytes, who_ + " bootstrap listener");
    for (;;) {
      auto peer = acceptor.next(deadline, options_.abortFlag);
      if (!peer) {
        throwSystem(who_ + ": bootstrap accept from rank " + std::to_string(prevRank()) + " on " +
                        addressToString(net::boundAddress(listener.fd())) +
                        " failed: it did not connect within " + std::to_string(options_.timeoutMs) +
                        " ms",
                    ETIMEDOUT);
      }
      const auto hello = net::decodePeerHello(peer->hello.data(), kRingHelloMagic, kRingVersion);
      const int from = hello ? hello->from : -1;
      const int to = hello ? hello->to : -1;
      if (!hello || hello->index != 0 || hello->commUid != commUid_ || from != prevRank() || to != rank_) {
        LOOM_WARN(NET,
                  "%s: dropping bootstrap connection from %s: bad ring hello (from rank %d "
                  "to rank %d, expected %d to %d)",
                  who_.c_str(), peer->from.c_str(), from, to, prevRank(), rank_);
        continue;
      }
      net::tuneDataSocket(peer->socket.fd());
      prev_ = std::move(peer->socket);
      return;
    }
  }

  // Sends header+sendBlock to the next rank while receiving header+recvBlock from the previous
  // one, interleaved without blocking so that blocks larger than the socket buffers cannot
  // deadlock the ring.
  void exchange(const uint8_t* sendBlock, uint8_t* recvBlock, size_t bytes) {
    uint8_t sendHeader[kGatherHeaderBytes];
    uint8_t recvHeader[kGatherHeaderBytes];
    net::putU32(sendHeader, kGatherMagic);
    net::putU32(sendHeader + 4, calls_);
    net::putU64(sendHeader + 8, bytes);
    const size_t total = kGatherHeaderBytes + bytes;
    size_t sent = 0;
    size_t received = 0;
    const auto deadline = net::Deadline::afterMs(options_.timeoutMs);
    while (sent < total || received < total) {
      bool moved = false;
      if (sent < total) {
        const uint8_t* from =
            sent < kGatherHeaderBytes ? sendHeader + sent : sendBlock + (sent - kGatherHeaderBytes);
        size_t length = sent < kGatherHeaderBytes ? kGatherHeaderBytes - sent : total - sent;
        ssize_t n = ::send(next_.fd(), from, length, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
          moved = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          socketFailure("send to", nextRank(), errno);
        }
      }
      if (received < total) {
        // The header is read on its own so it is checked before any block byte lands.
        uint8_t* into = received < kGatherHeaderBytes ? recvHeader + received
                                                      : recvBlock + (received - kGatherHeaderBytes);
        size_t length =
            received < kGatherHeaderBytes ? kGatherHeaderBytes - received : total - received;
        ssize_t n = ::recv(prev_.fd(), into, length, MSG_DONTWAIT);
        if (n > 0) {
          const bool headerWasIncomplete = received < kGatherHeaderBytes;
          received += static_cast<size_t>(n);
          moved = true;
          if (headerWasIncomplete && received == kGatherHeaderBytes) checkHeader(recvHeader, bytes);
        } else if (n == 0) {
          socketFailure("receive from", prevRank(), 0);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          socketFailure("receive from", prevRank(), errno);
        }
      }
      if (moved) continue;
      net::checkAbort(options_.abortFlag, who_ + ": bootstrap allGather");
      if (deadline.expired()) {
        throwSystem(who_ + ": bootstrap allGather timed out after " +
                        std::to_string(options_.timeoutMs) + " ms (sent " + std::to_string(sent) +
                        " of " + std::to_string(total) + " bytes to rank " +
                        std::to_string(nextRank()) + ", received " + std::to_string(received) +
                        " from rank " + std::to_string(prevRank()) + ")",
                    ETIMEDOUT);
      }
      pollfd fds[2] = {{next_.fd(), short(sent < total ? POLLOUT : 0), 0},
                       {prev_.fd(), short(received < total ? POLLIN : 0), 0}};
      if (::poll(fds, 2, deadline.pollTimeoutMs(net::kAbortCheckMs)) < 0 && errno != EINTR) {
        throwSystem(who_ + ": bootstrap poll");
      }
    }
  }

  void checkHeader(const uint8_t* header, size_t bytes) const {
    if (net::getU32(header) != kGatherMagic) {
      throwRemote(who_ + ": bootstrap allGather: garbage from rank " + std::to_string(prevRank()));
    }
    const uint32_t call = net::getU32(header + 4);
    const uint64_t theirBytes = net::getU64(header + 8);
    if (call != calls_ || theirBytes != bytes) {
      throwUsage(who_ + ": bootstrap allGather mismatch: rank " + std::to_string(prevRank()) +
                 " is in call #" + std::to_string(call) + " with " + std::to_string(theirBytes) +
                 " bytes per rank, this rank in call #" + std::to_string(calls_) + " with " +
                 std::to_string(bytes));
    }
  }

  [[noreturn]] void socketFailure(const char* action, int peer, int err) const {
    std::string what = who_ + ": bootstrap " + action + " rank " + std::to_string(peer);
    if (err == 0 || err == ECONNRESET || err == EPIPE) {
      throwRemote(what + " failed: the peer closed the connection");
    }
    throwSystem(what + " failed", err);
  }

  int rank_;
  int size_;
  Secret secret_;
  uint64_t commUid_;
  BootstrapOptions options_;
  std::string who_;
  sockaddr_storage localAddress_{};
  net::Socket listener_;
  std::vector<sockaddr_storage> table_;  // every rank's bootstrap listener
  net::Socket next_;
  net::Socket prev_;
  uint32_t calls_ = 0;
};

}  // namespace

namespace {

void checkRingArgs(int rank, int nranks, const BootstrapOptions& options) {
  if (nranks < 1 || nranks > kMaxRanks) {
    throwArgument("nranks " + std::to_string(nranks) + " must be in [1, " + std::to_string(kMaxRanks) + "]");
  }
  if (rank < 0 || rank >= nranks) {
    throwArgument("rank " + std::to_string(rank) + " is out of range for nranks " +
                  std::to_string(nranks));
  }
  if (options.timeoutMs <= 0) throwArgument("bootstrap timeout must be positive");
}

}  // namespace

std::unique_ptr<Bootstrap> createRingBootstrap(const Secret& secret, uint64_t commUid,
                                               const sockaddr_storage& localAddress, int rank, int nranks,
                                               const BootstrapOptions& options, const RingRendezvous& rendezvous) {
  checkRingArgs(rank, nranks, options);
  return std::make_unique<SocketBootstrap>(secret, commUid, localAddress, rank, nranks, options, rendezvous);
}

std::unique_ptr<Bootstrap> createSocketBootstrap(const UniqueIdContents& id, int rank, int nranks,
                                                 const BootstrapOptions& options) {
  checkRingArgs(rank, nranks, options);
  const std::string who = (options.commName.empty() ? "" : "[" + options.commName + "] ") + "rank " +
                          std::to_string(rank);
  return std::make_unique<SocketBootstrap>(
      id.secret, id.commUid, net::chooseLocalAddress(&id.rootAddress), rank, nranks, options,
      [&](const sockaddr_storage& advertised, net::Deadline deadline) {
        return rendezvous::exchangeWithRoot(id, rank, nranks, advertised, options, deadline, who);
      });
}

}  // namespace loom
