// SPDX-License-Identifier: Apache-2.0
// The root's rendezvous server (startRootServer) and the rank side of its protocol.
#include "bootstrap/rendezvous.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {

namespace {

constexpr uint32_t kHelloMagic = 0x48524d4cu;  // "LMRH"
constexpr uint32_t kReplyMagic = 0x52524d4cu;  // "LMRR"
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kRankHelloBytes = 16 + net::kWireAddressBytes;
constexpr size_t kReplyHeaderBytes = 16;
constexpr uint16_t kStatusOk = 0;
constexpr uint16_t kStatusError = 1;    // the ranks disagree (usage error)
constexpr uint16_t kStatusTimedOut = 2; // not every rank joined in time (system error)
constexpr size_t kMaxErrorBytes = 4096;
constexpr int kReplyTimeoutMs = 10000;
// How long a refused connection to a root that was up (see UniqueIdContents::rootMayStartLate)
// is retried: long enough to ride out a full accept queue, short enough to fail init promptly.
constexpr int64_t kRefusedGraceMs = 1000;

// Serves the rendezvous of one communicator, then ends.
class RootServer {
 public:
  RootServer(net::Socket listener, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), secret_(secret), timeoutMs_(timeoutMs) {}

  void run(const std::atomic<bool>& stop) {
    stop_ = &stop;
    const std::string where = "root server " + addressToString(net::boundAddress(listener_.fd()));
    auth::AuthenticatingAcceptor acceptor(listener_.fd(), secret_, auth::Purpose::RootRendezvous,
                                          kRankHelloBytes, where);
    const auto deadline = net::Deadline::afterMs(timeoutMs_);
    for (;;) {
      std::optional<auth::AuthenticatedPeer> peer;
      try {
        peer = acceptor.next(deadline, &stop);
      } catch (const Error& error) {
        if (!stop.load()) LOOM_WARN(NET, "%s: %s", where.c_str(), error.what());
        return;  // stopped at process exit, or the listener failed
      }
      if (!peer) {
        timedOut(where);
        return;
      }
      if (admit(std::move(*peer), where)) return;
    }
  }

 private:
  struct Member {
    net::Socket socket;
    std::string from;
  };

  // Handles one authenticated hello; true when the server's work is over.
  bool admit(auth::AuthenticatedPeer peer, const std::string& where) {
    Member member{std::move(peer.socket), std::move(peer.from)};
    const uint8_t* hello = peer.hello.data();
    if (net::getU32(hello) != kHelloMagic || net::getU16(hello + 4) != kProtocolVersion) {
      LOOM_WARN(NET, "%s: dropping %s: bad rendezvous hello (magic/version)", where.c_str(),
                member.from.c_str());
      reply(member, kStatusError, "rendezvous protocol mismatch (magic/version)");
      return false;
    }
    const int nranks = static_cast<int>(net::getU32(hello + 8));
    const int rank = static_cast<int>(net::getU32(hello + 12));
    sockaddr_storage address{};
    try {
      address = net::decodeWireAddress(hello + 16, "listener address");
    } catch (const Error& error) {
      reply(member, kStatusError, error.what());
      return false;
    }
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
      reply(member, kStatusError,
            "rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " is out of range");
      return false;
    }
    LOOM_TRACE(NET, "%s: rank %d/%d joined from %s", where.c_str(), rank, nranks,
               member.from.c_str());
    ++answered_;
    if (expected_ == 0) {
      expected_ = nranks;
      firstRank_ = rank;
    }
    if (failure_.empty()) {
      if (nranks != expected_) {
        failure_ = "nranks mismatch: rank " + std::to_string(rank) +
                   " says nranks=" + std::to_string(nranks) + " but rank " +
                   std::to_string(firstRank_) + " says nranks=" + std::to_string(expected_);
      } else if (members_.count(rank) != 0) {
        failure_ = "rank " + std::to_string(rank) + " joined twice (from " + members_[rank].from +
                   " and " + member.from + ")";
      }
      if (!failure_.empty()) {
        LOOM_WARN(NET, "%s: %s; failing the communicator", where.c_str(), failure_.c_str());
        for (auto& [otherRank, other] : members_) reply(other, kStatusError, failure_);
        members_.clear();
      }
    }
    if (!failure_.empty()) {
      // Every rank that still arrives learns why, until all expected ranks were answered.
      const bool over = answered_ >= expected_;
      if (over) listener_.reset();
      reply(member, kStatusError, failure_);
      return over;
    }
    members_[rank] = std::move(member);
    addresses_[rank] = address;
    if (static_cast<int>(members_.size()) < expected_) return false;
    // Close the port before anyone learns the table, so a rank that goes on to pin a new root
    // to the same address (LOOM_COMM_ID) finds it free.
    listener_.reset();
    std::vector<uint8_t> table(net::kWireAddressBytes * expected_);
    for (int r = 0; r < expected_; ++r) {
      net::encodeWireAddress(addresses_[r], table.data() + r * net::kWireAddressBytes);
    }
    for (auto& [memberRank, each] : members_) reply(each, kStatusOk, table);
    LOOM_INFO(NET, "%s: all %d ranks joined; address table sent", where.c_str(), expected_);
    return true;
  }

  void timedOut(const std::string& where) {
    std::string missing;
    for (int r = 0; r < expected_ && missing.size() < 200; ++r) {
      if (members_.count(r) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    std::string message = "the root timed out after " + std::to_string(timeoutMs_) +
                          " ms waiting for ranks" +
                          (missing.empty() ? "" : " (missing: " + missing + ")");
    LOOM_WARN(NET, "%s: %s", where.c_str(), message.c_str());
    for (auto& [rank, member] : members_) reply(member, kStatusTimedOut, message);
  }

  void reply(Member& member, uint16_t status, const std::string& text) {
    std::vector<uint8_t> payload(text.begin(),
                                 text.begin() + std::min(text.size(), kMaxErrorBytes));
    reply(member, status, payload);
  }

  void reply(Member& member, uint16_t status, const std::vector<uint8_t>& payload) {
    uint8_t header[kReplyHeaderBytes] = {};
    net::putU32(header, kReplyMagic);
    net::putU16(header + 4, kProtocolVersion);
    net::putU16(header + 6, status);
    net::putU32(header + 8, static_cast<uint32_t>(expected_));
    net::putU32(header + 12, static_cast<uint32_t>(payload.size()));
    try {
      auto deadline = net::Deadline::afterMs(kReplyTimeoutMs);
      net::writeFully(member.socket.fd(), header, sizeof(header), deadline, stop_, "root reply");
      net::writeFully(member.socket.fd(), payload.data(), payload.size(), deadline, stop_,
                      "root reply");
    } catch (const Error& error) {
      LOOM_WARN(NET, "root server: could not answer %s: %s", member.from.c_str(), error.what());
    }
    member.socket.reset();
  }

  net::Socket listener_;
  const std::atomic<bool>* stop_ = nullptr;  // set at process exit
  Secret secret_;
  int64_t timeoutMs_;
  int expected_ = 0;  // nranks, from the first hello
  int firstRank_ = -1;
  int answered_ = 0;
  std::string failure_;
  std::map<int, Member> members_;
  std::map<int, sockaddr_storage> addresses_;
};

// Owns every root server thread of the process: finished ones are joined when the next one
// starts, the rest are told to stop and joined at exit.
class RootServerRegistry {
 public:
  static RootServerRegistry& instance() {
    static RootServerRegistry registry;
    return registry;
  }

  void start(std::function<void(const std::atomic<bool>&)> body) {
    std::lock_guard lock(mutex_);
    forgetInheritedThreads();
    for (size_t i = entries_.size(); i-- > 0;) {
      if (entries_[i].finished->load()) {
        entries_[i].thread->join();
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    auto finished = std::make_shared<std::atomic<bool>>(false);
    auto thread = std::make_unique<std::thread>([this, body = std::move(body), finished] {
      try {
        body(stop_);
      } catch (const std::exception& error) {
        LOOM_WARN(NET, "root server failed: %s", error.what());
      }
      finished->store(true);
    });
    entries_.push_back({std::move(thread), std::move(finished)});
  }

  ~RootServerRegistry() {
    std::lock_guard lock(mutex_);
    forgetInheritedThreads();
    stop_.store(true);
    for (auto& entry : entries_) entry.thread->join();
  }

 private:
  RootServerRegistry() = default;

  // A forked child inherits these objects but not the threads: joining one could hang, so the
  // child leaks the handles instead.
  void forgetInheritedThreads() {
    if (getpid() == owner_) return;
    for (auto& entry : entries_) (void)entry.thread.release();
    entries_.clear();
    owner_ = getpid();
  }

  struct Entry {
    std::unique_ptr<std::thread> thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::atomic<bool> stop_{false};
  pid_t owner_ = getpid();
};

}  // namespace

loomUniqueId startRootServer(const sockaddr_storage* pinned, const Secret* pinnedSecret) {
  // Read first, so a malformed value fails before anything listens; the error is the one
  // resolveSettings gives for it.
  const int64_t timeoutMs = config::integer(config::Knob::TimeoutMs);
  sockaddr_storage bindAddress{};
  if (pinned != nullptr) {
    bindAddress = *pinned;
  } else {
    bindAddress = net::chooseLocalAddress(nullptr);
    if (!config::isSet(config::Knob::SocketIfname)) {
      LOOM_INFO(NET,
                "root listens on loopback: ranks on other hosts need LOOM_SOCKET_IFNAME "
                "(or LOOM_COMM_ID) set");
    }
  }
  net::Socket listener = net::openListener(bindAddress);
  UniqueIdContents contents;
  contents.rootAddress = net::boundAddress(listener.fd());
  if (net::isWildcard(contents.rootAddress)) {
    // Listening on every interface; advertise one the ranks can reach.
    sockaddr_storage advertised = net::chooseLocalAddress(nullptr);
    net::setPort(advertised, net::portOf(contents.rootAddress));
    contents.rootAddress = advertised;
  }
  if (pinnedSecret != nullptr) {
    contents.secret = *pinnedSecret;
    contents.commUid = auth::deriveCommUid(*pinnedSecret);
  } else {
    contents.secret = randomSecret();
    do {
      auth::randomBytes(&contents.commUid, sizeof(contents.commUid));
    } while (contents.commUid == 0);
  }
  loomUniqueId id = encodeUniqueId(contents);
  LOOM_INFO(NET, "root server listening on %s", addressToString(contents.rootAddress).c_str());
  auto server =
      std::make_shared<RootServer>(std::move(listener), contents.secret, timeoutMs);
  RootServerRegistry::instance().start(
      [server](const std::atomic<bool>& stop) { server->run(stop); });
  return id;
}

namespace rendezvous {

std::vector<sockaddr_storage> exchangeWithRoot(const UniqueIdContents& id, int rank, int nranks,
                                               const sockaddr_storage& listener,
                                               const BootstrapOptions& options,
                                               net::Deadline deadline, const std::string& who) {
  const std::string root = "the root at " + addressToString(id.rootAddress);
  const std::string connecting = who + ": bootstrap connect to the root";
  net::Socket sock;
  if (id.rootMayStartLate) {
    sock = net::connectWithRetry(id.rootAddress, deadline, options.timeoutMs, options.abortFlag,
                                 connecting);
  } else {
    std::optional<net::Socket> connected =
        net::connectUnlessRefused(id.rootAddress, deadline, kRefusedGraceMs, options.timeoutMs,
                                  options.abortFlag, connecting);
    if (!connected) {
      // The root closes its port once every rank of its communicator has joined (or its
      // process ended): whoever comes later would otherwise retry until the timeout.
      throwUsage(who + ": " + root + " no longer accepts ranks (connection refused for " +
                 std::to_string(kRefusedGraceMs) +
                 " ms): the communicator of this uniqueId has already formed with the nranks "
                 "its first ranks declared, or has ended, or the root's process exited (or a "
                 "firewall rejects the port). A uniqueId serves one communicator; get a new one "
                 "(loomGetUniqueId) per job");
    }
    sock = std::move(*connected);
  }
  auth::authenticateClient(sock.fd(), id.secret, auth::Purpose::RootRendezvous, deadline,
                           options.abortFlag, who + ": " + root);
  uint8_t hello[kRankHelloBytes] = {};
  net::putU32(hello, kHelloMagic);
  net::putU16(hello + 4, kProtocolVersion);
  net::putU32(hello + 8, static_cast<uint32_t>(nranks));
  net::putU32(hello + 12, static_cast<uint32_t>(rank));
  net::encodeWireAddress(listener, hello + 16);
  const std::string context = who + ": rendezvous with " + root;
  net::writeFully(sock.fd(), hello, sizeof(hello), deadline, options.abortFlag, context);

  // The root answers once every rank has joined: this is the long wait of initialisation.
  uint8_t header[kReplyHeaderBytes];
  net::readFully(sock.fd(), header, sizeof(header), deadline, options.abortFlag,
                 context + " (waiting for all " + std::to_string(nranks) + " ranks)");
  const uint16_t status = net::getU16(header + 6);
  const uint32_t payloadBytes = net::getU32(header + 12);
  if (net::getU32(header) != kReplyMagic || net::getU16(header + 4) != kProtocolVersion ||
      (status != kStatusOk && status != kStatusError && status != kStatusTimedOut)) {
    throwRemote(context + ": malformed reply header");
  }
  if (status != kStatusOk) {
    if (payloadBytes > kMaxErrorBytes) throwRemote(context + ": oversized error reply");
    std::string message(payloadBytes, '\0');
    net::readFully(sock.fd(), message.data(), payloadBytes, deadline, options.abortFlag, context);
    throw Error(status == kStatusTimedOut ? loomSystemError : loomInvalidUsage,
                who + ": the root refused the communicator: " + message);
  }
  if (net::getU32(header + 8) != static_cast<uint32_t>(nranks) ||
      payloadBytes != net::kWireAddressBytes * static_cast<size_t>(nranks)) {
    throwRemote(context + ": address table of the wrong size");
  }
  std::vector<uint8_t> table(payloadBytes);
  net::readFully(sock.fd(), table.data(), table.size(), deadline, options.abortFlag, context);
  std::vector<sockaddr_storage> addresses(nranks);
  for (int r = 0; r < nranks; ++r) {
    try {
      addresses[r] = net::decodeWireAddress(table.data() + r * net::kWireAddressBytes, "table");
    } catch (const Error& error) {
      throwRemote(context + ": bad address of rank " + std::to_string(r) + ": " + error.what());
    }
  }
  return addresses;
}

}  // namespace rendezvous

}  // namespace loom
