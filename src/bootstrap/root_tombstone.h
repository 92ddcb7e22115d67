// SPDX-License-Identifier: Apache-2.0
// What a root's listener says once its rendezvous is over. The communicator formed, was refused
// (the ranks disagreed) or timed out; a rank that arrives afterwards (a third process joining a
// 2-rank job, a second rank 1, a rank started too late) is answered at once, after it has proved
// that it knows the secret, with that verdict and the reason: it fails within a round trip
// instead of retrying a refused port (loomCommInitFromEnv) until its timeout. A rank of another
// generation (rendezvous_wire.h: the next communicator of the same launcher's environment) is
// no late rank: it is told to come back (kStatusRetry) until the next root takes the port.
#pragma once

#include <poll.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/net/auth.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/root_registry.h"

namespace loom::rendezvous {

// How a rendezvous ended.
struct Verdict {
  enum class Outcome { Formed, Refused, TimedOut };
  Outcome outcome = Outcome::TimedOut;
  int nranks = 0;              // formed: its size; else what the first hello declared (0: none came)
  std::vector<bool> arrived;   // by rank, nranks of them
  std::string reason;          // refused, timed out: what its ranks were told
  uint32_t generation = 0;     // the rendezvous' (RankHello::generation)

  // The reply's status and text for a rank of this generation that arrives afterwards saying
  // `hello`.
  uint16_t status() const { return outcome == Outcome::TimedOut ? kStatusTimedOut : kStatusError; }
  std::string forLateRank(const RankHello& hello) const;
};

// The text of a kStatusRetry reply: a root (or tombstone) of generation `root` to a rank of
// generation `rank`.
std::string otherGeneration(uint32_t root, uint32_t rank);

class Tombstone {
 public:
  // `acceptor` works on `listener` and keeps the handshakes it had in flight; `where` names
  // the listener in log lines.
  Tombstone(HeldListener listener, std::unique_ptr<auth::AuthenticatingAcceptor> acceptor, Verdict verdict,
            std::string where, uint16_t port);

  uint16_t port() const { return port_; }
  // One poll for every tombstone (RootRegistry::keep): see AuthenticatingAcceptor.
  void appendPollFds(std::vector<pollfd>& fds, net::Deadline& wake) const { acceptor_->appendPollFds(fds, wake); }
  // Answers every rank whose hello came in, and closes its connection. Never blocks.
  void serve(const pollfd* fds);
  // Answers the ranks whose hello the server had read but not handled when it finished.
  void answerWaiting();
  // Not 0 while its listener cannot accept (AuthenticatingAcceptor::acceptError).
  int acceptError() const { return acceptor_->acceptError(); }

 private:
  HeldListener listener_;
  std::unique_ptr<auth::AuthenticatingAcceptor> acceptor_;  // after listener_: destroyed first
  void answer(auth::AuthenticatedPeer& peer) const;

  Verdict verdict_;
  std::string where_;
  uint16_t port_;
};

}  // namespace loom::rendezvous
