// SPDX-License-Identifier: Apache-2.0
// Setting up the TCP transport: every rank listens, the addresses go round the bootstrap, and
// for each pair of peers the lower rank connects socketsPerPeer sockets to the higher one. Each
// socket authenticates and then says who it is; the higher rank sorts them by that hello.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "base/net/peer_hello.h"
#include "base/net/socket.h"
#include "transport/socket/socket_connection.h"
#include "transport/socket/socket_transport.h"

namespace loom::transport {

namespace {

constexpr uint32_t kHelloMagic = 0x53544d4cu;  // "LMTS"
constexpr uint16_t kHelloVersion = 2;  // 2: messages framed (socket_wire.h)
constexpr int kMaxSocketsPerPeer = 64;
constexpr size_t kRecordBytes = net::kWireAddressBytes + 4;  // address | pid u32

class SocketTransportImpl final : public Transport {
 public:
  SocketTransportImpl(Bootstrap& bootstrap, const std::vector<int>& peers,
                      const SocketOptions& options)
      : bootstrap_(bootstrap), options_(options), rank_(bootstrap.rank()),
        faults_(FaultPlan::fromEnvironment(bootstrap.rank())) {
    who_ = "rank " + std::to_string(rank_) + " socket transport";
    if (faults_.any()) LOOM_WARN(NET, "%s: LOOM_FAULT injects %s", who_.c_str(), faults_.describe().c_str());
    validate(peers);
    net::Socket listener;
    // Each rank's record: its listener's address and its pid (named when the peer goes).
    std::vector<uint8_t> table(kRecordBytes * bootstrap.size());
    if (!peers.empty()) {
      listener = net::openListener(bootstrap.localAddress());
      net::encodeWireAddress(net::boundAddress(listener.fd()), table.data() + rank_ * kRecordBytes);
    }
    net::putU32(table.data() + rank_ * kRecordBytes + net::kWireAddressBytes, static_cast<uint32_t>(getpid()));
    bootstrap.allGather(table.data(), kRecordBytes);

    const auto deadline = net::Deadline::afterMs(options.timeoutMs);
    std::vector<int> higher;
    std::vector<int> lower;
    for (int peer : peers) (peer > rank_ ? higher : lower).push_back(peer);
    std::sort(higher.begin(), higher.end());
    // Connect up before accepting from below: the highest rank of any chain only accepts, so
    // the waits resolve from the top down and can never form a cycle.
    for (int peer : higher) {
      auto address = net::decodeWireAddress(table.data() + peer * kRecordBytes, "socket transport address");
      connections_[peer] = connectTo(peer, address, deadline);
    }
    if (!lower.empty()) acceptFrom(lower, listener, deadline);
    for (auto& [peer, connection] : connections_) {
      connection->setPeerPid(static_cast<pid_t>(net::getU32(table.data() + peer * kRecordBytes + net::kWireAddressBytes)));
    }
    LOOM_TRACE(NET, "%s: connected to %zu peers with %d sockets each", who_.c_str(), peers.size(),
               options.socketsPerPeer);
  }

  const char* name() const override { return "socket"; }

  Connection* connection(int peer) override {
    auto found = connections_.find(peer);
    if (found == connections_.end()) {
      throwInternal(who_ + ": no socket connection to rank " + std::to_string(peer));
    }
    return found->second.get();
  }

  void failAll(int code, const std::string& reason) override {
    for (auto& [peer, connection] : connections_) connection->fail(code, reason);
  }

 private:
  void validate(const std::vector<int>& peers) const {
    if (options_.socketsPerPeer < 1 || options_.socketsPerPeer > kMaxSocketsPerPeer) {
      throwArgument("sockets per peer must be in 1-" + std::to_string(kMaxSocketsPerPeer) +
                    ", got " + std::to_string(options_.socketsPerPeer));
    }
    if (options_.stripeBytes == 0 || options_.stripeBytes % 16 != 0) {
      throwArgument("socket stripe size must be a positive multiple of 16, got " +
                    std::to_string(options_.stripeBytes));
    }
    if (options_.timeoutMs <= 0) throwArgument("socket transport timeout must be positive");
    std::set<int> seen;
    for (int peer : peers) {
      if (peer < 0 || peer >= bootstrap_.size() || peer == rank_ || !seen.insert(peer).second) {
        throwArgument(who_ + ": bad socket peer " + std::to_string(peer));
      }
    }
  }

  // count: sockets per peer; size: stripe bytes (both sides must stripe alike).
  net::PeerHello myHello(int to, int socketIndex) const {
    net::PeerHello hello;
    hello.magic = kHelloMagic;
    hello.version = kHelloVersion;
    hello.index = static_cast<uint16_t>(socketIndex);
    hello.from = rank_;
    hello.to = to;
    hello.count = static_cast<uint32_t>(options_.socketsPerPeer);
    hello.size = options_.stripeBytes;
    hello.commUid = bootstrap_.commUid();
    return hello;
  }

  std::unique_ptr<SocketConnection> connectTo(int peer, const sockaddr_storage& address,
                                              net::Deadline deadline) {
    std::vector<net::Socket> lanes;
    for (int index = 0; index < options_.socketsPerPeer; ++index) {
      const std::string what =
          who_ + ": connect socket " + std::to_string(index) + " to rank " + std::to_string(peer);
      net::Socket sock =
          net::connectWithRetry(address, deadline, options_.timeoutMs, nullptr, what);
      net::tuneDataSocket(sock.fd());
      auth::authenticateClient(sock.fd(), bootstrap_.secret(), auth::Purpose::SocketTransport,
                               deadline, nullptr, what);
      uint8_t hello[net::kPeerHelloBytes];
      net::encodePeerHello(myHello(peer, index), hello);
      net::writeFully(sock.fd(), hello, sizeof(hello), deadline, nullptr, what);
      lanes.push_back(std::move(sock));
    }
    return std::make_unique<SocketConnection>(rank_, peer, std::move(lanes), options_.stripeBytes, faults_, this);
  }

  void acceptFrom(const std::vector<int>& lower, const net::Socket& listener,
                  net::Deadline deadline) {
    std::map<int, std::vector<net::Socket>> lanes;
    for (int peer : lower) lanes[peer].resize(options_.socketsPerPeer);
    size_t missing = lower.size() * options_.socketsPerPeer;
    auth::AuthenticatingAcceptor acceptor(listener.fd(), bootstrap_.secret(),
                                          auth::Purpose::SocketTransport, net::kPeerHelloBytes,
                                          who_ + " listener");
    while (missing > 0) {
      auto peer = acceptor.next(deadline, nullptr);
      if (!peer) {
        throwSystem(who_ + ": " + std::to_string(missing) + " sockets from ranks " +
                        missingList(lanes) + " did not connect within " +
                        std::to_string(options_.timeoutMs) + " ms",
                    ETIMEDOUT);
      }
      auto hello = net::decodePeerHello(peer->hello.data(), kHelloMagic, kHelloVersion);
      const char* problem = nullptr;
      if (!hello) {
        problem = "not a transport hello";
      } else if (hello->commUid != bootstrap_.commUid() || hello->to != rank_) {
        problem = "meant for another communicator or rank";
      } else if (lanes.count(hello->from) == 0 || hello->index >= lanes[hello->from].size()) {
        problem = "from an unexpected rank or socket index";
      } else if (lanes[hello->from][hello->index].valid()) {
        problem = "duplicate socket";
      }
      if (problem != nullptr) {
        LOOM_WARN(NET, "%s: dropping connection from %s: %s", who_.c_str(), peer->from.c_str(),
                  problem);
        continue;
      }
      if (hello->count != static_cast<uint32_t>(options_.socketsPerPeer) || hello->size != options_.stripeBytes) {
        // An authenticated rank of this communicator configured differently: the striping
        // would not match, so fail instead of corrupting data.
        throwUsage(who_ + ": rank " + std::to_string(hello->from) + " uses " +
                   std::to_string(hello->count) + " sockets per peer and stripe " +
                   std::to_string(hello->size) + ", this rank " +
                   std::to_string(options_.socketsPerPeer) + " and " +
                   std::to_string(options_.stripeBytes) + " (LOOM_SOCKET_NSOCKS must match)");
      }
      net::tuneDataSocket(peer->socket.fd());
      lanes[hello->from][hello->index] = std::move(peer->socket);
      --missing;
    }
    for (auto& [peer, sockets] : lanes) {
      connections_[peer] =
          std::make_unique<SocketConnection>(rank_, peer, std::move(sockets), options_.stripeBytes, faults_, this);
    }
  }

  static std::string missingList(const std::map<int, std::vector<net::Socket>>& lanes) {
    std::string list;
    for (const auto& [peer, sockets] : lanes) {
      bool incomplete = std::any_of(sockets.begin(), sockets.end(),
                                    [](const net::Socket& s) { return !s.valid(); });
      if (incomplete) list += (list.empty() ? "" : ",") + std::to_string(peer);
    }
    return list;
  }

  Bootstrap& bootstrap_;
  SocketOptions options_;
  int rank_;
  std::string who_;
  FaultPlan faults_;
  std::map<int, std::unique_ptr<SocketConnection>> connections_;
};

}  // namespace

std::unique_ptr<Transport> createSocketTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                                 const SocketOptions& options) {
  return std::make_unique<SocketTransportImpl>(bootstrap, peers, options);
}

}  // namespace loom::transport
