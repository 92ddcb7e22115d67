// SPDX-License-Identifier: Apache-2.0
// The rank side of the rendezvous with the root (rendezvous.h).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/net/auth.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/rendezvous_wire.h"

namespace loom::rendezvous {

namespace {

// How long a refused connection to a root that was up (see UniqueIdContents::rootMayStartLate)
// is retried: long enough to ride out a full accept queue, short enough to fail init promptly.
constexpr int64_t kRefusedGraceMs = 1000;
// How long a rank pauses before it comes back to a root (or tombstone) of another generation
// (kStatusRetry): doubling from the first to the last, so that it meets the next root within
// a tenth of a second of its start without keeping the keeper busy meanwhile.
constexpr int kFirstRetryMs = 20;
constexpr int kLastRetryMs = 100;
// A tombstone drops the connections it was serving when the next root of its process takes
// its port, so a rank whose root may start late connects again when its connection is dropped
// before the answer, up to this many times in a row (a root that drops every connection, e.g.
// for a wrong secret, then fails it).
constexpr int kMaxDrops = 3;

// `dropped`: the error of the connection a root dropped just before; a refusal (after the
// grace) then means that root has gone.
net::Socket connectToRoot(const UniqueIdContents& id, const BootstrapOptions& options, net::Deadline deadline,
                          const std::string& who, const std::string& root, const std::optional<Error>& dropped) {
  const std::string connecting = who + ": bootstrap connect to the root";
  if (id.rootMayStartLate && !dropped) {
    try {
      return net::connectWithRetry(id.rootAddress, deadline, options.timeoutMs, options.abortFlag, connecting);
    } catch (const Error& error) {
      if (error.code() != loomSystemError) throw;
      // Nothing ever listened there: the root's rank has not started, or it listens elsewhere.
      throw Error(loomSystemError, std::string(error.what()) +
                                       ": no root listened there in that time; is rank 0 running, with the same "
                                       "LOOM_COMM_ID (or MASTER_ADDR and MASTER_PORT) as this rank?");
    }
  }
  std::optional<net::Socket> connected =
      net::connectUnlessRefused(id.rootAddress, deadline, kRefusedGraceMs, options.timeoutMs, options.abortFlag,
                                connecting);
  if (connected) return std::move(*connected);
  if (dropped) {
    throw Error(dropped->code(), std::string(dropped->what()) + "; then its port refused connections for " +
                                     std::to_string(kRefusedGraceMs) + " ms");
  }
  // A root answers late ranks itself while its process lives (root_tombstone.h): a refusal
  // means its process has ended, or it has let this id go.
  throwUsage(who + ": " + root + " no longer accepts ranks (connection refused for " + std::to_string(kRefusedGraceMs) +
             " ms): the root's process exited, or it has hosted the rendezvous of " +
             "many later communicators since (it answers for its last few), or a firewall rejects the port. "
             "A uniqueId serves one communicator; get a new one (loomGetUniqueId) per job");
}

struct Reply {
  ReplyHeader header;
  std::string message;  // for a status other than ok: why
};

// Authenticates on `sock`, sends this rank's hello and reads the reply's header (and message).
Reply visit(const net::Socket& sock, const UniqueIdContents& id, const RankHello& hello,
            const BootstrapOptions& options, net::Deadline deadline, const std::string& who,
            const std::string& root) {
  auth::authenticateClient(sock.fd(), id.secret, auth::Purpose::RootRendezvous, deadline, options.abortFlag,
                           who + ": " + root);
  uint8_t record[kRankHelloBytes];
  encodeRankHello(hello, record);
  const std::string context = who + ": rendezvous with " + root;
  net::writeFully(sock.fd(), record, sizeof(record), deadline, options.abortFlag, context);

  // The root answers once every rank has joined: this is the long wait of initialisation.
  uint8_t headerBytes[kReplyHeaderBytes];
  net::readFully(sock.fd(), headerBytes, sizeof(headerBytes), deadline, options.abortFlag,
                 context + " (waiting for all " + std::to_string(hello.nranks) + " ranks)");
  const std::optional<ReplyHeader> header = decodeReplyHeader(headerBytes);
  if (!header) throwRemote(context + ": malformed reply header");
  Reply reply{*header, {}};
  if (header->status != kStatusOk) {
    if (header->payloadBytes > kMaxErrorBytes) throwRemote(context + ": oversized error reply");
    reply.message.resize(header->payloadBytes);
    net::readFully(sock.fd(), reply.message.data(), reply.message.size(), deadline, options.abortFlag, context);
  }
  return reply;
}

}  // namespace

std::vector<sockaddr_storage> exchangeWithRoot(const UniqueIdContents& id, int rank, int nranks,
                                               const sockaddr_storage& listener, const BootstrapOptions& options,
                                               net::Deadline deadline, const std::string& who) {
  const std::string root = "the root at " + addressToString(id.rootAddress);
  const std::string context = who + ": rendezvous with " + root;
  RankHello hello;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.listener = listener;
  hello.generation = id.generation;
  std::optional<Error> dropped;
  int drops = 0;
  int retryMs = kFirstRetryMs;
  std::string comeBack;  // what the last root of another generation said
  // Its timeout ran out (`code`: loomSystemError) while roots of other communicators of this
  // job told it to come back: that says more than the connect or read the deadline cut short.
  const auto throwIfServedAnother = [&](loomResult_t code) {
    if (comeBack.empty() || !deadline.expired() || code != loomSystemError) return;
    throw Error(loomSystemError, who + ": init failed: " + root + " served another communicator of this job for " +
                                     "as long as this rank waited (" + comeBack +
                                     "); did every rank make the same loomCommInitFromEnv calls?");
  };
  for (;;) {
    net::Socket sock;
    Reply reply;
    try {
      sock = connectToRoot(id, options, deadline, who, root, dropped);
    } catch (const Error& error) {
      throwIfServedAnother(error.code());
      throw;
    }
    // How long this rank waits for the answer: the root gives up on missing ranks just before.
    hello.waitMs = static_cast<uint32_t>(std::clamp<int64_t>(deadline.remainingMs(), 1, UINT32_MAX));
    try {
      reply = visit(sock, id, hello, options, deadline, who, root);
    } catch (const Error& error) {
      throwIfServedAnother(error.code());
      if (!id.rootMayStartLate || error.code() != loomRemoteError || ++drops > kMaxDrops) throw;
      dropped = error;
      continue;
    }
    dropped.reset();
    drops = 0;
    const ReplyHeader& header = reply.header;
    if (header.status == kStatusRetry) {
      // The root of another communicator of this job (rendezvous_wire.h): this one's comes.
      if (!id.rootMayStartLate) throwRemote(context + ": told to come back, by a root that was up: " + reply.message);
      comeBack = reply.message;
      sock.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp<int64_t>(deadline.remainingMs(), 0, retryMs)));
      retryMs = std::min(2 * retryMs, kLastRetryMs);
      throwIfServedAnother(loomSystemError);
      continue;
    }
    if (header.status == kStatusTimedOut) {
      throw Error(loomSystemError, who + ": init failed at " + root + ": " + reply.message);
    }
    if (header.status != kStatusOk) {
      throw Error(loomInvalidUsage, who + ": " + root + " refused the communicator: " + reply.message);
    }
    if (header.nranks != static_cast<uint32_t>(nranks) ||
        header.payloadBytes != net::kWireAddressBytes * static_cast<size_t>(nranks)) {
      throwRemote(context + ": address table of the wrong size");
    }
    std::vector<uint8_t> table(header.payloadBytes);
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
}

}  // namespace loom::rendezvous
