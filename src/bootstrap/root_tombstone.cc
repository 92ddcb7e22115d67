// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/root_tombstone.h"

#include <sys/socket.h>

#include <optional>

#include "base/log.h"
#include "base/rank_ranges.h"

namespace loom::rendezvous {

namespace {

std::string members(const std::vector<bool>& arrived) {
  std::vector<int> ranks;
  for (size_t r = 0; r < arrived.size(); ++r) {
    if (arrived[r]) ranks.push_back(static_cast<int>(r));
  }
  return rankRanges(ranks);
}

}  // namespace

std::string Verdict::forLateRank(const RankHello& hello) const {
  const std::string self = "rank " + std::to_string(hello.rank) + " of " + std::to_string(hello.nranks);
  switch (outcome) {
    case Outcome::Formed: {
      const bool second = hello.nranks == nranks && hello.rank >= 0 && hello.rank < nranks;
      return "the communicator of this id already formed with " + std::to_string(nranks) +
             (nranks == 1 ? " rank (" : " ranks (") + members(arrived) + ") without this rank (" + self +
             (second ? ": a second rank " + std::to_string(hello.rank) + ", is a process started twice?" : "") +
             "). An id (or LOOM_COMM_ID) serves one communicator at a time";
    }
    case Outcome::Refused:
      return "it was refused before this rank (" + self + ") arrived, because: " + reason;
    case Outcome::TimedOut:
      return "the rendezvous of this id ended before this rank (" + self + ") arrived: " + reason;
  }
  return reason;
}

std::string otherGeneration(uint32_t root, uint32_t rank) {
  return "this root serves communicator #" + std::to_string(root) + " of its launcher environment, this rank " +
         "comes for #" + std::to_string(rank) + " (loomCommInitFromEnv calls of its process)";
}

Tombstone::Tombstone(HeldListener listener, std::unique_ptr<auth::AuthenticatingAcceptor> acceptor, Verdict verdict,
                     std::string where, uint16_t port)
    : listener_(std::move(listener)),
      acceptor_(std::move(acceptor)),
      verdict_(std::move(verdict)),
      where_(std::move(where)),
      port_(port) {}

void Tombstone::serve(const pollfd* fds) {
  for (auth::AuthenticatedPeer& peer : acceptor_->serve(fds)) answer(peer);
}

void Tombstone::answerWaiting() {
  for (auth::AuthenticatedPeer& peer : acceptor_->takeReady()) answer(peer);
}

// The connection closes when `peer` goes, right after.
void Tombstone::answer(auth::AuthenticatedPeer& peer) const {
  std::string why;
  const std::optional<RankHello> hello = decodeRankHello(peer.hello.data(), &why);
  uint16_t status = kStatusError;
  std::string text = why;
  if (hello && hello->generation != verdict_.generation) {
    // Early for the next communicator, not late for this one: it comes back (every 20-100 ms).
    status = kStatusRetry;
    text = otherGeneration(verdict_.generation, hello->generation);
    LOOM_TRACE(NET, "%s: telling %s to come back: %s", where_.c_str(), peer.from.c_str(), text.c_str());
  } else {
    if (hello) {
      status = verdict_.status();
      text = verdict_.forLateRank(*hello);
    }
    LOOM_WARN(NET, "%s: answering %s after its rendezvous ended: %s", where_.c_str(), peer.from.c_str(),
              text.c_str());
  }
  // One attempt, never blocking the keeper: a fresh connection's buffer takes the few KiB.
  const std::vector<uint8_t> reply = encodeReply(status, verdict_.nranks, text);
  (void)::send(peer.socket.fd(), reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace loom::rendezvous
