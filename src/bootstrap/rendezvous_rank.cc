// SPDX-License-Identifier: Apache-2.0
// The rank side of the rendezvous with the root (rendezvous.h).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
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

net::Socket connectToRoot(const UniqueIdContents& id, const BootstrapOptions& options, net::Deadline deadline,
                          const std::string& who, const std::string& root) {
  const std::string connecting = who + ": bootstrap connect to the root";
  if (id.rootMayStartLate) {
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
  if (!connected) {
    // A root answers late ranks itself while its process lives (root_tombstone.h): a refusal
    // means its process has ended, or it has let this id go.
    throwUsage(who + ": " + root + " no longer accepts ranks (connection refused for " +
               std::to_string(kRefusedGraceMs) +
               " ms): the root's process exited, or it has hosted the rendezvous of " +
               "many later communicators since (it answers for its last few), or a firewall rejects the port. "
               "A uniqueId serves one communicator; get a new one (loomGetUniqueId) per job");
  }
  return std::move(*connected);
}

}  // namespace

std::vector<sockaddr_storage> exchangeWithRoot(const UniqueIdContents& id, int rank, int nranks,
                                               const sockaddr_storage& listener, const BootstrapOptions& options,
                                               net::Deadline deadline, const std::string& who) {
  const std::string root = "the root at " + addressToString(id.rootAddress);
  net::Socket sock = connectToRoot(id, options, deadline, who, root);
  auth::authenticateClient(sock.fd(), id.secret, auth::Purpose::RootRendezvous, deadline, options.abortFlag,
                           who + ": " + root);
  RankHello hello;
  hello.nranks = nranks;
  hello.rank = rank;
  hello.listener = listener;
  // How long this rank waits for the answer: the root gives up on missing ranks just before.
  hello.waitMs = static_cast<uint32_t>(std::clamp<int64_t>(deadline.remainingMs(), 1, UINT32_MAX));
  uint8_t record[kRankHelloBytes];
  encodeRankHello(hello, record);
  const std::string context = who + ": rendezvous with " + root;
  net::writeFully(sock.fd(), record, sizeof(record), deadline, options.abortFlag, context);

  // The root answers once every rank has joined: this is the long wait of initialisation.
  uint8_t headerBytes[kReplyHeaderBytes];
  net::readFully(sock.fd(), headerBytes, sizeof(headerBytes), deadline, options.abortFlag,
                 context + " (waiting for all " + std::to_string(nranks) + " ranks)");
  const std::optional<ReplyHeader> header = decodeReplyHeader(headerBytes);
  if (!header) throwRemote(context + ": malformed reply header");
  if (header->status != kStatusOk) {
    if (header->payloadBytes > kMaxErrorBytes) throwRemote(context + ": oversized error reply");
    std::string message(header->payloadBytes, '\0');
    net::readFully(sock.fd(), message.data(), message.size(), deadline, options.abortFlag, context);
    if (header->status == kStatusTimedOut) {
      throw Error(loomSystemError, who + ": init failed at " + root + ": " + message);
    }
    throw Error(loomInvalidUsage, who + ": " + root + " refused the communicator: " + message);
  }
  if (header->nranks != static_cast<uint32_t>(nranks) ||
      header->payloadBytes != net::kWireAddressBytes * static_cast<size_t>(nranks)) {
    throwRemote(context + ": address table of the wrong size");
  }
  std::vector<uint8_t> table(header->payloadBytes);
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

}  // namespace loom::rendezvous
