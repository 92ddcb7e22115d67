// SPDX-License-Identifier: Apache-2.0
// loomCommShrink: a communicator of the survivors, built without waiting on excluded ranks.
//
// A split runs allGathers over the parent's bootstrap ring, which a dead rank breaks. Shrink
// therefore never uses the ring. Every survivor computes the same plan from its arguments
// alone: the survivors in parent-rank order, the leader (the first survivor, new rank 0) and
// the child's secret, derived from the parent's secret, the shrink epoch and the excluded set.
// The leader opens the child's rendezvous and sends its port to every other survivor's
// bootstrap listener (kept open for this) over a connection authenticated with the parent's
// secret. The offer carries the epoch and a digest of the excluded set, so survivors that
// disagree on whom to exclude fail with loomInvalidUsage instead of forming two communicators.
// Then every survivor initialises the child as usual.
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"
#include "core/comm.h"

namespace loom {
namespace {

constexpr uint32_t kOfferMagic = 0x4b534d4cu;  // "LMSK"
constexpr uint16_t kOfferVersion = 1;
// magic u32 | version u16 | 0 u16 | epoch u32 | from u32 | to u32 | port u16 | 0 u16 |
// excluded digest u64
constexpr size_t kOfferBytes = 32;

struct Offer {
  uint32_t epoch = 0;
  int from = -1;
  int to = -1;
  uint16_t port = 0;
  uint64_t excludedDigest = 0;
};

void encodeOffer(const Offer& offer, uint8_t* out) {
  std::memset(out, 0, kOfferBytes);
  net::putU32(out, kOfferMagic);
  net::putU16(out + 4, kOfferVersion);
  net::putU32(out + 8, offer.epoch);
  net::putU32(out + 12, static_cast<uint32_t>(offer.from));
  net::putU32(out + 16, static_cast<uint32_t>(offer.to));
  net::putU16(out + 20, offer.port);
  net::putU64(out + 24, offer.excludedDigest);
}

// Empty when the record is not an offer of this protocol version.
std::optional<Offer> decodeOffer(const uint8_t* in) {
  if (net::getU32(in) != kOfferMagic || net::getU16(in + 4) != kOfferVersion || net::getU16(in + 6) != 0 ||
      net::getU16(in + 22) != 0) {
    return std::nullopt;
  }
  Offer offer;
  offer.epoch = net::getU32(in + 8);
  offer.from = static_cast<int>(net::getU32(in + 12));
  offer.to = static_cast<int>(net::getU32(in + 16));
  offer.port = net::getU16(in + 20);
  offer.excludedDigest = net::getU64(in + 24);
  return offer;
}

std::string listText(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return "{" + text + "}";
}

}  // namespace

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& excludedList,
                                                   const CommSettings& childSettings) {
  const std::string who = "rank " + std::to_string(rank_) + " of comm " + name_;
  std::set<int> excludedSet;
  for (int r : excludedList) {
    if (r < 0 || r >= nranks_) {
      throwArgument(who + ": excluded rank " + std::to_string(r) + " is not in [0, " +
                    std::to_string(nranks_) + ")");
    }
    if (r == rank_) {
      throwArgument(who + ": the calling rank is in the exclude list (excluded ranks do not call it)");
    }
    excludedSet.insert(r);
  }
  const std::vector<int> excluded(excludedSet.begin(), excludedSet.end());
  std::vector<int> survivors;
  for (int r = 0; r < nranks_; ++r) {
    if (!excludedSet.count(r)) survivors.push_back(r);
  }
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), rank_) - survivors.begin());
  const int leader = survivors.front();
  const int newSize = static_cast<int>(survivors.size());
  const uint32_t epoch = ++shrinks_;

  // The plan every survivor computes alike: the child secret from the parent's, this epoch and
  // the excluded set; its commUid from that secret.
  struct {
    char label[16];
    uint64_t commUid;
    uint32_t epoch;
    uint32_t count;
  } header{};
  std::memcpy(header.label, "loom-shrink-v1", 14);
  header.commUid = bootstrap_->commUid();
  header.epoch = epoch;
  header.count = static_cast<uint32_t>(excluded.size());
  std::vector<uint8_t> material(sizeof(header) + excluded.size() * sizeof(int32_t));
  std::memcpy(material.data(), &header, sizeof(header));
  for (size_t i = 0; i < excluded.size(); ++i) {
    const int32_t r = excluded[i];
    std::memcpy(material.data() + sizeof(header) + i * sizeof(int32_t), &r, sizeof(r));
  }
  const Secret& parentSecret = bootstrap_->secret();
  Secret childSecret = auth::sipHash24x128(parentSecret, material.data(), material.size());
  const uint64_t excludedDigest = auth::sipHash24(parentSecret, material.data(), material.size());
  LOOM_INFO(INIT, "comm %s: shrink #%u excluding %s -> rank %d of %d", name_.c_str(), epoch,
            listText(excluded).c_str(), newRank, newSize);

  const auto deadline = net::Deadline::afterMs(settings_.timeoutMs);
  loomUniqueId childId;
  if (rank_ == leader) {
    sockaddr_storage address = bootstrap_->localAddress();
    net::setPort(address, 0);
    childId = startRootServer(&address, &childSecret);
    const uint16_t port = net::portOf(decodeUniqueId(childId).rootAddress);
    const std::vector<sockaddr_storage> listeners = bootstrap_->listenerAddresses();
    for (int survivor : survivors) {
      if (survivor == rank_) continue;
      if (listeners.size() != static_cast<size_t>(nranks_)) {
        throwUsage(who + ": shrinking needs the socket bootstrap");
      }
      const std::string what = who + ": shrink offer to rank " + std::to_string(survivor);
      net::Socket socket = net::connectWithRetry(listeners[survivor], deadline, settings_.timeoutMs,
                                                 errors_.bootstrapStopFlag(), what);
      auth::authenticateClient(socket.fd(), parentSecret, auth::Purpose::Shrink, deadline, errors_.bootstrapStopFlag(),
                               what);
      uint8_t record[kOfferBytes];
      encodeOffer(Offer{epoch, rank_, survivor, port, excludedDigest}, record);
      net::writeFully(socket.fd(), record, sizeof(record), deadline, errors_.bootstrapStopFlag(), what);
    }
  } else {
    if (bootstrap_->listenerFd() < 0) throwUsage(who + ": shrinking needs the socket bootstrap");
    auth::AuthenticatingAcceptor acceptor(bootstrap_->listenerFd(), parentSecret, auth::Purpose::Shrink,
                                          kOfferBytes, who + " shrink listener");
    std::optional<Offer> offer;
    while (!offer) {
      std::optional<auth::AuthenticatedPeer> peer = acceptor.next(deadline, errors_.bootstrapStopFlag());
      if (!peer) {
        throwSystem(who + ": no offer from rank " + std::to_string(leader) +
                        " (the first survivor) within " + std::to_string(settings_.timeoutMs) +
                        " ms; did every survivor call loomCommShrink with the same exclude list?",
                    ETIMEDOUT);
      }
      offer = decodeOffer(peer->hello.data());
      if (!offer || offer->to != rank_) {
        LOOM_WARN(NET, "%s: dropping a malformed shrink offer from %s", who.c_str(), peer->from.c_str());
        offer.reset();
        continue;
      }
      if (offer->epoch < epoch) {  // left over from an earlier shrink that this rank gave up on
        offer.reset();
        continue;
      }
      if (offer->from != leader || offer->epoch != epoch || offer->excludedDigest != excludedDigest) {
        throwUsage(who + ": ranks disagree: this rank excludes " + listText(excluded) +
                   " (shrink #" + std::to_string(epoch) + ", leader rank " + std::to_string(leader) +
                   ") but rank " + std::to_string(offer->from) + " sent an offer for shrink #" +
                   std::to_string(offer->epoch) + " with a different exclude list or leader");
      }
    }
    UniqueIdContents contents;
    contents.rootAddress = bootstrap_->listenerAddresses().at(leader);
    net::setPort(contents.rootAddress, offer->port);
    contents.secret = childSecret;
    contents.commUid = auth::deriveCommUid(childSecret);
    childId = encodeUniqueId(contents);
  }
  auto child = makeChild(childId, newSize, newRank, childSettings);
  log::setThreadRank(rank_);
  return child;
}

}  // namespace loom
