// Setting up the TCP transport: every rank listens, the addresses go round the bootstrap, and
// for each pair of peers the lower rank connects socketsPerPeer sockets to the higher one. Each
// socket authenticates and then says who it is; the higher rank sorts them by that hello.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "transport/socket/socket_connection.h"
#include "transport/socket/socket_transport.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "base/error.h"
#include "base/log.h"

namespace loom::transport {

namespace {

constexpr uint32_t kHelloMagic = 0x53544d4cu;  // "LMTS"
constexpr uint16_t kHelloVersion = 2;  // 2: messages framed (socket_wire.h)
// magic u32 | version u16 | socket index u16 | from u32 | to u32 | sockets per peer u32 |
// 0 u32 | stripe bytes u64 | commUid u64
constexpr size_t kHelloBytes = 40;
constexpr int kMaxSocketsPerPeer = 64;

struct SocketHello {
  int socketIndex;
  int from;
  int to;
  int socketsPerPeer;
  uint64_t stripeBytes;
  uint64_t commUid;
};

void encodeHello(const SocketHello& hello, uint8_t* out) {
  std::fill(out, out + kHelloBytes, 0);
  net::putU32(out, kHelloMagic);
  net::putU16(out + 4, kHelloVersion);
  net::putU16(out + 6, static_cast<uint16_t>(hello.socketIndex));
  net::putU32(out + 8, static_cast<uint32_t>(hello.from));
  net::putU32(out + 12, static_cast<uint32_t>(hello.to));
  net::putU32(out + 16, static_cast<uint32_t>(hello.socketsPerPeer));
  net::putU64(out + 24, hello.stripeBytes);
  net::putU64(out + 32, hello.commUid);
}

// nullopt for records that are not a transport hello at all.
std::optional<SocketHello> decodeHello(const uint8_t* in) {
  if (net::getU32(in) != kHelloMagic || net::getU16(in + 4) != kHelloVersion ||
      net::getU32(in + 20) != 0) {
    return std::nullopt;
  }
  return SocketHello{net::getU16(in + 6),
                     static_cast<int>(net::getU32(in + 8)),
                     static_cast<int>(net::getU32(in + 12)),
                     static_cast<int>(net::getU32(in + 16)),
                     net::getU64(in + 24),
                     net::getU64(in + 32)};
}

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
    std::vector<uint8_t> table(net::kWireAddressBytes * bootstrap.size());
    if (!peers.empty()) {
      listener = net::openListener(bootstrap.localAddress());
      net::encodeWireAddress(net::boundAddress(listener.fd()),
                             table.data() + rank_ * net::kWireAddressBytes);
    }
    bootstrap.allGather(table.data(), net::kWireAddressBytes);

    const auto deadline = net::Deadline::afterMs(options.timeoutMs);
    std::vector<int> higher;
    std::vector<int> lower;
    for (int peer : peers) (peer > rank_ ? higher : lower).push_back(peer);
    std::sort(higher.begin(), higher.end());
    // Connect up before accepting from below: the highest rank of any chain only accepts, so
    // the waits resolve from the top down and can never form a cycle.
    for (int peer : higher) {
      auto address = net::decodeWireAddress(table.data() + peer * net::kWireAddressBytes,
                                            "socket transport address");
      connections_[peer] = connectTo(peer, address, deadline);
    }
    if (!lower.empty()) acceptFrom(lower, listener, deadline);
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

  SocketHello myHello(int to, int socketIndex) const {
    return SocketHello{
        socketIndex,         rank_, to, options_.socketsPerPeer, options_.stripeBytes,
        bootstrap_.commUid()};
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
      uint8_t hello[kHelloBytes];
      encodeHello(myHello(peer, index), hello);
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
                                          auth::Purpose::SocketTransport, kHelloBytes,
                                          who_ + " listener");
    while (missing > 0) {
      auto peer = acceptor.next(deadline, nullptr);
      if (!peer) {
        throwSystem(who_ + ": " + std::to_string(missing) + " sockets from ranks " +
                        missingList(lanes) + " did not connect within " +
                        std::to_string(options_.timeoutMs) + " ms",
                    ETIMEDOUT);
      }
      auto hello = decodeHello(peer->hello.data());
      const char* problem = nullptr;
      if (!hello) {
        problem = "not a transport hello";
      } else if (hello->commUid != bootstrap_.commUid() || hello->to != rank_) {
        problem = "meant for another communicator or rank";
      } else if (lanes.count(hello->from) == 0 || hello->socketIndex < 0 ||
                 hello->socketIndex >= static_cast<int>(lanes[hello->from].size())) {
        problem = "from an unexpected rank or socket index";
      } else if (lanes[hello->from][hello->socketIndex].valid()) {
        problem = "duplicate socket";
      }
      if (problem != nullptr) {
        LOOM_WARN(NET, "%s: dropping connection from %s: %s", who_.c_str(), peer->from.c_str(),
                  problem);
        continue;
      }
      if (hello->socketsPerPeer != options_.socketsPerPeer ||
          hello->stripeBytes != options_.stripeBytes) {
        // An authenticated rank of this communicator configured differently: the striping
        // would not match, so fail instead of corrupting data.
        throwUsage(who_ + ": rank " + std::to_string(hello->from) + " uses " +
                   std::to_string(hello->socketsPerPeer) + " sockets per peer and stripe " +
                   std::to_string(hello->stripeBytes) + ", this rank " +
                   std::to_string(options_.socketsPerPeer) + " and " +
                   std::to_string(options_.stripeBytes) + " (LOOM_SOCKET_NSOCKS must match)");
      }
      net::tuneDataSocket(peer->socket.fd());
      lanes[hello->from][hello->socketIndex] = std::move(peer->socket);
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
