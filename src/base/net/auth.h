// SPDX-License-Identifier: Apache-2.0
// Proving knowledge of the communicator's secret without sending it.
//
// Every bootstrap and transport connection starts with a mutual challenge-response:
//   client -> server  hello  {magic, version, purpose, role=client, nonceC}
//   server -> client  hello  {magic, version, purpose, role=server, nonceS}
//   client -> server  proof  MAC(secret, label | purpose | role=client | nonceC | nonceS)
//   server -> client  proof  MAC(secret, label | purpose | role=server | nonceC | nonceS)
// MAC is SipHash-2-4 with 128-bit output keyed by the 16-byte secret. Fresh nonces from both
// sides defeat replay, the role defeats reflection and the purpose byte stops a proof made for
// one kind of connection being reused for another. The client proves first, so a stranger
// learns nothing from the server before it has proved itself.
#pragma once

#include <poll.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/bootstrap.h"
#include "base/net/socket.h"

namespace loom::auth {

// SipHash-2-4 (Aumasson & Bernstein): the 64-bit and the 128-bit output variants.
uint64_t sipHash24(const Secret& key, const void* data, size_t bytes);
std::array<uint8_t, 16> sipHash24x128(const Secret& key, const void* data, size_t bytes);

// Cryptographically random bytes (getrandom).
void randomBytes(void* out, size_t bytes);

// The commUid of a communicator whose secret is pinned (LOOM_COMM_ID + secret): every rank
// derives the same one without talking to anybody.
uint64_t deriveCommUid(const Secret& secret);

enum class Purpose : uint8_t { RootRendezvous = 1, BootstrapRing = 2, SocketTransport = 3, Shrink = 4 };
enum class Role : uint8_t { Client = 1, Server = 2 };
const char* purposeName(Purpose purpose);

using Nonce = std::array<uint8_t, 16>;
using Proof = std::array<uint8_t, 16>;
constexpr size_t kHelloBytes = 32;
constexpr size_t kProofBytes = 16;

struct Hello {
  Purpose purpose;
  Role role;
  Nonce nonce;
};
Hello makeHello(Purpose purpose, Role role);  // fresh random nonce
void encodeHello(const Hello& hello, uint8_t* out);
// Checks magic, version, purpose and role; throws loom::Error(loomRemoteError) otherwise.
Hello decodeHello(const uint8_t* in, Purpose expectedPurpose, Role expectedRole);
Proof computeProof(const Secret& secret, Purpose purpose, Role prover, const Nonce& clientNonce,
                   const Nonce& serverNonce);
bool proofsEqual(const Proof& a, const Proof& b);  // constant time

// The client side over a connected non-blocking socket, bounded by `deadline`. Throws
// loom::Error naming `what` if the server cannot prove itself or drops us (wrong secret).
void authenticateClient(int fd, const Secret& secret, Purpose purpose, net::Deadline deadline,
                        const std::atomic<bool>* abortFlag, const std::string& what);

// The server side as a byte-driven state machine so one poll loop can run many at once.
class ServerHandshake {
 public:
  ServerHandshake(const Secret& secret, Purpose purpose) : secret_(secret), purpose_(purpose) {}
  bool done() const { return state_ == State::Done; }
  size_t bytesWanted() const;  // the size of the next record to read; 0 when done
  // Takes exactly bytesWanted() bytes; returns what to send back. Throws loom::Error on a
  // malformed record or a wrong proof.
  std::vector<uint8_t> consume(const uint8_t* record);

 private:
  enum class State { AwaitHello, AwaitProof, Done };
  Secret secret_;
  Purpose purpose_;
  State state_ = State::AwaitHello;
  Nonce clientNonce_{};
  Nonce serverNonce_{};
};

// A connection that proved it knows the secret and then sent its fixed-size hello.
struct AuthenticatedPeer {
  net::Socket socket;
  std::vector<uint8_t> hello;
  std::string from;  // "ip:port" for messages
};

// Accepts on a listener and runs many handshakes at once in one poll loop, each bounded by its
// own short deadline, so strangers that send garbage or stall cost nobody anything: they are
// dropped and logged at WARN (NET).
class AuthenticatingAcceptor {
 public:
  static constexpr int kHandshakeTimeoutMs = 5000;
  static constexpr size_t kMaxPending = 256;

  // `who` names the listener in log lines; each connection gets handshakeTimeoutMs to
  // authenticate and send its hello.
  AuthenticatingAcceptor(int listenFd, const Secret& secret, Purpose purpose, size_t helloBytes,
                         std::string who, int handshakeTimeoutMs = kHandshakeTimeoutMs);
  ~AuthenticatingAcceptor();
  // The next authenticated peer with its hello, or nullopt once `deadline` passes.
  std::optional<AuthenticatedPeer> next(net::Deadline deadline, const std::atomic<bool>* abortFlag);

  // For a thread that watches several acceptors in one poll (the root's tombstones,
  // bootstrap/root_registry.cc): appends this acceptor's descriptors to `fds` (the listener
  // first) and moves `wake` to its nearest handshake deadline; after the poll, serve() takes
  // the same entries with their revents and returns the peers that completed, dropping the
  // handshakes that ran out of time and accepting new connections.
  void appendPollFds(std::vector<pollfd>& fds, net::Deadline& wake) const;
  std::vector<AuthenticatedPeer> serve(const pollfd* fds);
  // The peers that completed in an earlier serve() and that next() has not returned yet: for
  // whoever takes this acceptor over from a caller of next().
  std::vector<AuthenticatedPeer> takeReady() { return std::exchange(ready_, {}); }
  // The errno of the last accept when it failed for a reason other than an empty queue (no
  // descriptor left: EMFILE, ENFILE; no memory), 0 once one succeeds again. While accept
  // fails the listener stays readable: it is left out of the poll for kAcceptPauseMs after each
  // failure, so a caller's loop does not spin, and the failure is logged at most once every
  // kAcceptWarnMs.
  int acceptError() const { return acceptError_; }
  static constexpr int kAcceptPauseMs = 100;
  static constexpr int kAcceptWarnMs = 10000;

 private:
  struct Pending;
  void acceptNew();
  void acceptFailed(int error);
  // Moves one handshake forward; false when the connection was dropped.
  bool drive(Pending& pending, short revents);
  void drop(size_t index, const std::string& reason);

  int listenFd_;
  Secret secret_;
  Purpose purpose_;
  size_t helloBytes_;
  std::string who_;
  int handshakeTimeoutMs_;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::vector<AuthenticatedPeer> ready_;  // completed by serve(), not yet returned by next()
  int acceptError_ = 0;
  std::optional<net::Deadline> acceptPausedUntil_;  // after a failed accept
  std::optional<net::Deadline> nextAcceptWarning_;
  int unreportedAcceptFailures_ = 0;
};

}  // namespace loom::auth
