// SPDX-License-Identifier: Apache-2.0
// The root's rendezvous server (startRootServer): collects every rank's hello, answers each
// with the table of listener addresses, and, when its id has left the process, leaves a
// tombstone on its port (root_tombstone.h) that answers whoever comes later. While it waits it
// says every LOOM_INIT_REPORT_MS which ranks have arrived and which are missing, and it gives up
// just before the first of its ranks would (each hello says how long its rank waits), so that
// every rank's error names them too.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "base/rank_ranges.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/root_registry.h"
#include "bootstrap/root_tombstone.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {

namespace {

using rendezvous::RankHello;
using rendezvous::Verdict;
using Clock = std::chrono::steady_clock;

constexpr int kReplyTimeoutMs = 10000;
// How long a pinned address that is in use is tried again (listenAt).
constexpr int kHandBackMs = 250;

// How long before a rank's own deadline the root gives up for it: the reply must still reach it.
int64_t replyMarginMs(int64_t waitMs) { return std::min<int64_t>(1000, waitMs / 4); }

std::string secondsText(Clock::duration elapsed) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", std::chrono::duration<double>(elapsed).count());
  return text;
}

// Serves the rendezvous of one communicator, then hands its listener to a tombstone (a
// published id) or closes it.
class RootServer {
 public:
  RootServer(rendezvous::HeldListener listener, uint16_t port, const Secret& secret, const RootOptions& options,
             int64_t timeoutMs, int64_t reportMs)
      : listener_(std::move(listener)), port_(port), published_(options.published), secret_(secret),
        timeoutMs_(timeoutMs), reportMs_(reportMs) {
    verdict_.generation = options.generation;
  }

  void run(const std::atomic<bool>& stop) {
    stop_ = &stop;
    where_ = "root server " + addressToString(net::boundAddress(listener_.fd()));
    auto acceptor = std::make_unique<auth::AuthenticatingAcceptor>(
        listener_.fd(), secret_, auth::Purpose::RootRendezvous, rendezvous::kRankHelloBytes, where_);
    const auto start = Clock::now();
    const auto ownDeadline = net::Deadline::afterMs(timeoutMs_);
    auto nextReport = net::Deadline::afterMs(reportMs_);
    for (;;) {
      const net::Deadline giveUp = memberDeadline_ ? ownDeadline.earlier(*memberDeadline_) : ownDeadline;
      std::optional<auth::AuthenticatedPeer> peer;
      try {
        peer = acceptor->next(giveUp.earlier(nextReport), &stop);
      } catch (const Error& error) {
        if (!stop.load()) LOOM_WARN(NET, "%s: %s", where_.c_str(), error.what());
        return;  // stopped at process exit, or the listener failed: no tombstone
      }
      if (peer) {
        if (admit(std::move(*peer))) break;
        continue;
      }
      if (giveUp.expired()) {
        timedOut(ownDeadline.expired());
        break;
      }
      LOOM_WARN_ALWAYS(INIT, "%s: still waiting for ranks after %s: %s", where_.c_str(),
                       secondsText(Clock::now() - start).c_str(), arrivals().c_str());
      nextReport = net::Deadline::afterMs(reportMs_);
    }
    // Every rank here learns the outcome, whatever becomes of the listener (the tombstone may
    // not be kept: no descriptor or thread for its keeper).
    const SendsOutbox answers(*this);
    // The port is given up before any rank learns the outcome: a rank that goes on to pin a
    // new root to this address (LOOM_COMM_ID) finds it handed back (freePort).
    std::unique_ptr<rendezvous::Tombstone> tombstone;
    if (published_) {
      tombstone = std::make_unique<rendezvous::Tombstone>(std::move(listener_), std::move(acceptor), verdict_,
                                                          where_, port_);
    } else {
      acceptor.reset();
      listener_.reset();  // nobody outside this process knows the id: no rank can come late
    }
    rendezvous::RootRegistry::instance().bury(port_, std::move(tombstone));
  }

 private:
  struct Member {
    net::Socket socket;
    std::string from;
  };

  // Sends the outbox when it goes out of scope, rank 0 last (the outbox is in rank order): it
  // usually runs in this process, which may exit once that rank has its answer.
  class SendsOutbox {
   public:
    explicit SendsOutbox(RootServer& server) : server_(server) {}
    ~SendsOutbox() {
      for (auto each = server_.outbox_.rbegin(); each != server_.outbox_.rend(); ++each) {
        try {
          server_.send(each->first, each->second);
        } catch (...) {  // out of memory for a message: the next rank is still answered
        }
      }
    }
    SendsOutbox(const SendsOutbox&) = delete;
    SendsOutbox& operator=(const SendsOutbox&) = delete;

   private:
    RootServer& server_;
  };

  std::string arrivals() const {
    if (expected_ == 0) return "no rank has arrived yet";
    return arrivalSummary(verdict_.arrived);
  }

  // Handles one authenticated hello; true when the rendezvous is over.
  bool admit(auth::AuthenticatedPeer peer) {
    Member member{std::move(peer.socket), std::move(peer.from)};
    std::string why;
    const std::optional<RankHello> hello = rendezvous::decodeRankHello(peer.hello.data(), &why);
    if (!hello) {
      LOOM_WARN(NET, "%s: dropping %s: %s", where_.c_str(), member.from.c_str(), why.c_str());
      send(member, rendezvous::encodeReply(rendezvous::kStatusError, expected_, why));
      return false;
    }
    if (hello->generation != verdict_.generation) {
      // A rank of the job's next (or last) communicator: not one of this rendezvous.
      send(member, rendezvous::encodeReply(rendezvous::kStatusRetry, expected_,
                                           rendezvous::otherGeneration(verdict_.generation, hello->generation)));
      return false;
    }
    const int nranks = hello->nranks, rank = hello->rank;
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
      send(member, rendezvous::encodeReply(rendezvous::kStatusError, expected_,
                                           "rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                                               " is out of range"));
      return false;
    }
    LOOM_TRACE(NET, "%s: rank %d/%d joined from %s", where_.c_str(), rank, nranks, member.from.c_str());
    if (expected_ == 0) {
      expected_ = nranks;
      firstRank_ = rank;
      verdict_.nranks = nranks;
      verdict_.arrived.assign(static_cast<size_t>(nranks), false);
    }
    std::string failure;
    if (nranks != expected_) {
      failure = "nranks mismatch: rank " + std::to_string(rank) + " says nranks=" + std::to_string(nranks) +
                " but rank " + std::to_string(firstRank_) + " says nranks=" + std::to_string(expected_);
    } else if (members_.count(rank) != 0) {
      failure = "rank " + std::to_string(rank) + " joined twice (from " + members_[rank].from + " and " +
                member.from + ")";
    }
    if (!failure.empty()) {
      // Every rank here learns why, and so does every rank that comes later (the tombstone).
      LOOM_WARN(NET, "%s: %s; failing the communicator", where_.c_str(), failure.c_str());
      verdict_.outcome = Verdict::Outcome::Refused;
      verdict_.reason = failure;
      const std::vector<uint8_t> reply = rendezvous::encodeReply(rendezvous::kStatusError, expected_, failure);
      for (auto& [otherRank, other] : members_) outbox_.emplace_back(std::move(other), reply);
      outbox_.emplace_back(std::move(member), reply);
      return true;
    }
    if (hello->waitMs > 0) {
      const int64_t waitMs = hello->waitMs;
      const auto deadline = net::Deadline::afterMs(waitMs - replyMarginMs(waitMs));
      if (!memberDeadline_ || deadline.remainingMs() < memberDeadline_->remainingMs()) {
        memberDeadline_ = deadline;
        earliestRank_ = rank;
        earliestWaitMs_ = waitMs;
      }
    }
    verdict_.arrived[static_cast<size_t>(rank)] = true;
    addresses_[rank] = hello->listener;
    members_[rank] = std::move(member);
    if (static_cast<int>(members_.size()) < expected_) return false;
    std::vector<uint8_t> table(net::kWireAddressBytes * expected_);
    for (int r = 0; r < expected_; ++r) {
      net::encodeWireAddress(addresses_[r], table.data() + r * net::kWireAddressBytes);
    }
    verdict_.outcome = Verdict::Outcome::Formed;
    const std::vector<uint8_t> reply = rendezvous::encodeReply(rendezvous::kStatusOk, expected_, table);
    for (auto& [memberRank, each] : members_) outbox_.emplace_back(std::move(each), reply);
    LOOM_INFO(NET, "%s: all %d ranks joined; address table sent", where_.c_str(), expected_);
    return true;
  }

  // Given up before every rank came: each member is told which ranks arrived and which did not.
  void timedOut(bool ownTimeout) {
    const std::string why =
        ownTimeout || earliestRank_ < 0
            ? "timed out after " + std::to_string(timeoutMs_) + " ms waiting for ranks (the root's LOOM_TIMEOUT_MS)"
            : "timed out waiting for ranks before rank " + std::to_string(earliestRank_) + "'s timeout ran out (it " +
                  "waits " + std::to_string(earliestWaitMs_) + " ms from its arrival)";
    verdict_.outcome = Verdict::Outcome::TimedOut;
    verdict_.reason = why + ": " + arrivals() + "; is every rank running, with the same id and nranks?";
    LOOM_WARN(NET, "%s: %s", where_.c_str(), verdict_.reason.c_str());
    const std::vector<uint8_t> reply =
        rendezvous::encodeReply(rendezvous::kStatusTimedOut, expected_, verdict_.reason);
    for (auto& [rank, member] : members_) outbox_.emplace_back(std::move(member), reply);
  }

  void send(Member& member, const std::vector<uint8_t>& reply) {
    try {
      net::writeFully(member.socket.fd(), reply.data(), reply.size(), net::Deadline::afterMs(kReplyTimeoutMs), stop_,
                      "root reply");
    } catch (const Error& error) {
      LOOM_WARN(NET, "%s: could not answer %s: %s", where_.c_str(), member.from.c_str(), error.what());
    }
    member.socket.reset();
  }

  rendezvous::HeldListener listener_;
  uint16_t port_;
  bool published_;  // RootOptions::published: leave a tombstone
  const std::atomic<bool>* stop_ = nullptr;  // set at process exit
  Secret secret_;
  int64_t timeoutMs_;
  int64_t reportMs_;
  std::string where_;
  int expected_ = 0;  // nranks, from the first hello
  int firstRank_ = -1;
  std::optional<net::Deadline> memberDeadline_;  // the earliest member's, less the reply's margin
  int earliestRank_ = -1;
  int64_t earliestWaitMs_ = 0;
  Verdict verdict_;
  std::map<int, Member> members_;
  std::map<int, sockaddr_storage> addresses_;
  std::vector<std::pair<Member, std::vector<uint8_t>>> outbox_;  // sent once the port is buried
};

// The listener for a new root. A port of this process is handed back first (a LOOM_COMM_ID
// reused by the next communicator); one that another process holds is a clear error.
rendezvous::HeldListener listenAt(const sockaddr_storage& address, bool pinned) {
  if (pinned && net::portOf(address) != 0) {
    rendezvous::RootRegistry::instance().freePort(net::portOf(address), addressToString(address));
  }
  // A child this process forked a moment ago holds a copy of the listener just handed back
  // until its fork handler closes it (root_registry.h): "in use" may pass within that time.
  const auto handBack = net::Deadline::afterMs(pinned ? kHandBackMs : 0);
  for (;;) {
    try {
      return rendezvous::HeldListener::listen(address);
    } catch (const Error& error) {
      if (!pinned || error.code() != loomSystemError || std::strstr(error.what(), "in use") == nullptr) throw;
      if (!handBack.expired()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      throw Error(loomSystemError,
                  "the root cannot listen at " + addressToString(address) + ": the address is in use, by another " +
                      "job's root, by the root of an earlier communicator whose process still runs (it answers " +
                      "late ranks there while it lives), or by another program. Pick another port (LOOM_COMM_ID, " +
                      "MASTER_PORT) or end that process (" + error.what() + ")");
    }
  }
}

}  // namespace

loomUniqueId startRootServer(const sockaddr_storage* pinned, const Secret* pinnedSecret, const RootOptions& options) {
  // Read first, so a malformed value fails before anything listens; the error is the one
  // resolveSettings gives for it.
  const int64_t timeoutMs = config::integer(config::Knob::TimeoutMs);
  const int64_t reportMs = config::integer(config::Knob::InitReportMs);
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
  rendezvous::HeldListener listener = listenAt(bindAddress, pinned != nullptr);
  UniqueIdContents contents;
  contents.rootAddress = net::boundAddress(listener.fd());
  const uint16_t port = net::portOf(contents.rootAddress);
  if (net::isWildcard(contents.rootAddress)) {
    // Listening on every interface; advertise one the ranks can reach.
    sockaddr_storage advertised = net::chooseLocalAddress(nullptr);
    net::setPort(advertised, port);
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
  auto server = std::make_shared<RootServer>(std::move(listener), port, contents.secret, options, timeoutMs, reportMs);
  rendezvous::RootRegistry::instance().startServer(
      port, [server](const std::atomic<bool>& stop) { server->run(stop); }, contents.commUid);
  return id;
}

bool stopRootServer(const loomUniqueId& id) {
  const UniqueIdContents contents = decodeUniqueId(id);
  const bool stopped =
      rendezvous::RootRegistry::instance().stopServer(net::portOf(contents.rootAddress), contents.commUid);
  if (stopped) LOOM_INFO(NET, "root server on %s stopped: unused", addressToString(contents.rootAddress).c_str());
  return stopped;
}

}  // namespace loom
