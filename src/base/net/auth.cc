// SPDX-License-Identifier: Apache-2.0
#include "base/net/auth.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/log.h"

namespace loom::auth {

// ---- SipHash-2-4 ----------------------------------------------------------------------------

namespace {

constexpr uint64_t rotl(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

struct SipState {
  uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
  void rounds(int count) {
    for (int i = 0; i < count; ++i) round();
  }
  void absorb(uint64_t word) {
    v3 ^= word;
    rounds(2);  // c = 2 compression rounds
    v0 ^= word;
  }
  uint64_t fold() const { return v0 ^ v1 ^ v2 ^ v3; }
};

// Initialisation and compression, shared by both output widths; `wide` selects the 128-bit
// variant's domain separation.
SipState sipCompress(const Secret& key, const void* data, size_t bytes, bool wide) {
  const uint64_t k0 = net::getU64(key.data());
  const uint64_t k1 = net::getU64(key.data() + 8);
  SipState s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
             k1 ^ 0x7465646279746573ull};
  if (wide) s.v1 ^= 0xee;
  const auto* in = static_cast<const uint8_t*>(data);
  const size_t whole = bytes & ~size_t{7};
  for (size_t i = 0; i < whole; i += 8) s.absorb(net::getU64(in + i));
  uint64_t last = static_cast<uint64_t>(bytes & 0xff) << 56;
  for (size_t i = whole; i < bytes; ++i) last |= static_cast<uint64_t>(in[i]) << (8 * (i - whole));
  s.absorb(last);
  return s;
}

}  // namespace

uint64_t sipHash24(const Secret& key, const void* data, size_t bytes) {
  SipState s = sipCompress(key, data, bytes, false);
  s.v2 ^= 0xff;
  s.rounds(4);  // d = 4 finalization rounds
  return s.fold();
}

std::array<uint8_t, 16> sipHash24x128(const Secret& key, const void* data, size_t bytes) {
  SipState s = sipCompress(key, data, bytes, true);
  std::array<uint8_t, 16> out{};
  s.v2 ^= 0xee;
  s.rounds(4);
  net::putU64(out.data(), s.fold());
  s.v1 ^= 0xdd;
  s.rounds(4);
  net::putU64(out.data() + 8, s.fold());
  return out;
}

void randomBytes(void* out, size_t bytes) {
  auto* cursor = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < bytes) {
    ssize_t got = getrandom(cursor + done, bytes - done, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throwSystem("getrandom");
    }
    done += static_cast<size_t>(got);
  }
}

uint64_t deriveCommUid(const Secret& secret) {
  static const char kLabel[] = "loom-commuid-v1";
  uint64_t uid = sipHash24(secret, kLabel, sizeof(kLabel) - 1);
  return uid != 0 ? uid : 1;  // 0 means "unset" elsewhere
}

const char* purposeName(Purpose purpose) {
  switch (purpose) {
    case Purpose::RootRendezvous:
      return "root rendezvous";
    case Purpose::BootstrapRing:
      return "bootstrap ring";
    case Purpose::SocketTransport:
      return "socket transport";
    case Purpose::Shrink:
      return "shrink offer";
  }
  return "unknown";
}

// ---- Handshake records ----------------------------------------------------------------------

namespace {

constexpr uint32_t kHelloMagic = 0x55414d4cu;  // "LMAU"
constexpr uint16_t kHelloVersion = 1;

}  // namespace

Hello makeHello(Purpose purpose, Role role) {
  Hello hello{purpose, role, {}};
  randomBytes(hello.nonce.data(), hello.nonce.size());
  return hello;
}

// Layout: magic u32 | version u16 | purpose u8 | role u8 | 8 zero bytes | nonce[16].
void encodeHello(const Hello& hello, uint8_t* out) {
  std::memset(out, 0, kHelloBytes);
  net::putU32(out, kHelloMagic);
  net::putU16(out + 4, kHelloVersion);
  out[6] = static_cast<uint8_t>(hello.purpose);
  out[7] = static_cast<uint8_t>(hello.role);
  std::memcpy(out + 16, hello.nonce.data(), hello.nonce.size());
}

Hello decodeHello(const uint8_t* in, Purpose expectedPurpose, Role expectedRole) {
  if (net::getU32(in) != kHelloMagic) throwRemote("not a Loom handshake (bad magic)");
  if (net::getU16(in + 4) != kHelloVersion) {
    throwRemote("handshake version " + std::to_string(net::getU16(in + 4)) + ", expected " +
                std::to_string(kHelloVersion));
  }
  if (in[6] != static_cast<uint8_t>(expectedPurpose)) {
    throwRemote("handshake for purpose " + std::to_string(in[6]) + ", expected " +
                purposeName(expectedPurpose));
  }
  if (in[7] != static_cast<uint8_t>(expectedRole)) throwRemote("handshake from the wrong role");
  for (int i = 8; i < 16; ++i) {
    if (in[i] != 0) throwRemote("handshake has nonzero reserved bytes");
  }
  Hello hello{expectedPurpose, expectedRole, {}};
  std::memcpy(hello.nonce.data(), in + 16, hello.nonce.size());
  return hello;
}

Proof computeProof(const Secret& secret, Purpose purpose, Role prover, const Nonce& clientNonce,
                   const Nonce& serverNonce) {
  static const char kLabel[] = "loom-auth-v1";
  constexpr size_t kLabelBytes = sizeof(kLabel) - 1;
  uint8_t message[kLabelBytes + 2 + 32];
  std::memcpy(message, kLabel, kLabelBytes);
  message[kLabelBytes] = static_cast<uint8_t>(purpose);
  message[kLabelBytes + 1] = static_cast<uint8_t>(prover);
  std::memcpy(message + kLabelBytes + 2, clientNonce.data(), 16);
  std::memcpy(message + kLabelBytes + 18, serverNonce.data(), 16);
  return sipHash24x128(secret, message, sizeof(message));
}

bool proofsEqual(const Proof& a, const Proof& b) {
  uint8_t difference = 0;  // no early exit: timing must not reveal how many bytes matched
  for (size_t i = 0; i < a.size(); ++i) difference |= a[i] ^ b[i];
  return difference == 0;
}

void authenticateClient(int fd, const Secret& secret, Purpose purpose, net::Deadline deadline,
                        const std::atomic<bool>* abortFlag, const std::string& what) {
  const std::string context = what + " (authentication)";
  Hello mine = makeHello(purpose, Role::Client);
  uint8_t record[kHelloBytes];
  encodeHello(mine, record);
  net::writeFully(fd, record, kHelloBytes, deadline, abortFlag, context);
  net::readFully(fd, record, kHelloBytes, deadline, abortFlag, context);
  Hello theirs{};
  try {
    theirs = decodeHello(record, purpose, Role::Server);
  } catch (const Error& error) {
    throwRemote(context + ": " + error.what());
  }
  Proof proof = computeProof(secret, purpose, Role::Client, mine.nonce, theirs.nonce);
  net::writeFully(fd, proof.data(), proof.size(), deadline, abortFlag, context);
  Proof answer{};
  try {
    net::readFully(fd, answer.data(), answer.size(), deadline, abortFlag, context);
  } catch (const Error& error) {
    if (error.code() != loomRemoteError) throw;
    throwRemote(context +
                ": refused: the peer dropped the connection after our proof (do both "
                "sides use the same unique id / secret?)");
  }
  if (!proofsEqual(answer, computeProof(secret, purpose, Role::Server, mine.nonce, theirs.nonce))) {
    throwRemote(context + ": the peer failed to prove it knows the communicator's secret");
  }
}

size_t ServerHandshake::bytesWanted() const {
  switch (state_) {
    case State::AwaitHello:
      return kHelloBytes;
    case State::AwaitProof:
      return kProofBytes;
    case State::Done:
      return 0;
  }
  return 0;
}

std::vector<uint8_t> ServerHandshake::consume(const uint8_t* record) {
  std::vector<uint8_t> reply;
  if (state_ == State::AwaitHello) {
    clientNonce_ = decodeHello(record, purpose_, Role::Client).nonce;
    Hello mine = makeHello(purpose_, Role::Server);
    serverNonce_ = mine.nonce;
    reply.resize(kHelloBytes);
    encodeHello(mine, reply.data());
    state_ = State::AwaitProof;
  } else if (state_ == State::AwaitProof) {
    Proof offered{};
    std::memcpy(offered.data(), record, offered.size());
    if (!proofsEqual(offered,
                     computeProof(secret_, purpose_, Role::Client, clientNonce_, serverNonce_))) {
      throwRemote("wrong proof: the peer does not know the communicator's secret");
    }
    Proof mine = computeProof(secret_, purpose_, Role::Server, clientNonce_, serverNonce_);
    reply.assign(mine.begin(), mine.end());
    state_ = State::Done;
  } else {
    throwInternal("ServerHandshake::consume after the handshake finished");
  }
  return reply;
}

// ---- Concurrent authenticated accept --------------------------------------------------------

struct AuthenticatingAcceptor::Pending {
  Pending(net::Socket sock, std::string peer, const Secret& secret, Purpose purpose, int timeoutMs)
      : socket(std::move(sock)),
        from(std::move(peer)),
        deadline(net::Deadline::afterMs(timeoutMs)),
        handshake(secret, purpose) {}

  net::Socket socket;
  std::string from;
  net::Deadline deadline;
  ServerHandshake handshake;
  bool authenticated = false;
  std::vector<uint8_t> in;  // the record being read
  size_t have = 0;
  std::vector<uint8_t> out;  // the reply being written
  size_t sent = 0;
};

AuthenticatingAcceptor::AuthenticatingAcceptor(int listenFd, const Secret& secret, Purpose purpose,
                                               size_t helloBytes, std::string who,
                                               int handshakeTimeoutMs)
    : listenFd_(listenFd),
      secret_(secret),
      purpose_(purpose),
      helloBytes_(helloBytes),
      who_(std::move(who)),
      handshakeTimeoutMs_(handshakeTimeoutMs) {}

AuthenticatingAcceptor::~AuthenticatingAcceptor() = default;

void AuthenticatingAcceptor::drop(size_t index, const std::string& reason) {
  LOOM_WARN(NET, "%s: dropping %s connection from %s: %s", who_.c_str(), purposeName(purpose_),
            pending_[index]->from.c_str(), reason.c_str());
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(index));
}

// At most kMaxPending connections a call, so that a flood of them cannot hold the caller here
// (the root's tombstones' keeper must leave promptly when a fork asks it to: root_registry.cc).
void AuthenticatingAcceptor::acceptNew() {
  for (size_t attempt = 0; attempt < kMaxPending; ++attempt) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&address), &length,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) acceptFailed(errno);
      return;
    }
    acceptError_ = 0;
    // Bound the work strangers can cause: the oldest unfinished handshake makes room.
    if (pending_.size() >= kMaxPending) drop(0, "too many handshakes in flight");
    pending_.push_back(std::make_unique<Pending>(net::Socket(fd), addressToString(address), secret_,
                                                 purpose_, handshakeTimeoutMs_));
  }
}

void AuthenticatingAcceptor::acceptFailed(int error) {
  acceptError_ = error;
  acceptPausedUntil_ = net::Deadline::afterMs(kAcceptPauseMs);
  if (nextAcceptWarning_ && !nextAcceptWarning_->expired()) {
    ++unreportedAcceptFailures_;
    return;
  }
  const std::string since =
      unreportedAcceptFailures_ == 0
          ? ""
          : " (and " + std::to_string(unreportedAcceptFailures_) + " times since the last report)";
  LOOM_WARN(NET, "%s: accept failed: %s%s; trying again every %d ms", who_.c_str(), errnoText(error).c_str(),
            since.c_str(), kAcceptPauseMs);
  unreportedAcceptFailures_ = 0;
  nextAcceptWarning_ = net::Deadline::afterMs(kAcceptWarnMs);
}

bool AuthenticatingAcceptor::drive(Pending& p, short /*revents*/) {
  for (;;) {
    while (p.sent < p.out.size()) {
      ssize_t sent = ::send(p.socket.fd(), p.out.data() + p.sent, p.out.size() - p.sent,
                            MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        throwSystem("send");
      }
      p.sent += static_cast<size_t>(sent);
    }
    if (p.authenticated && p.have == helloBytes_) return true;
    const size_t want = p.authenticated ? helloBytes_ : p.handshake.bytesWanted();
    p.in.resize(want);
    // Read exactly the current record, never beyond: later bytes belong to the caller.
    while (p.have < want) {
      ssize_t got = ::recv(p.socket.fd(), p.in.data() + p.have, want - p.have, MSG_DONTWAIT);
      if (got > 0) {
        p.have += static_cast<size_t>(got);
      } else if (got == 0) {
        throwRemote("closed after " + std::to_string(p.have) + " bytes of a " +
                    std::to_string(want) + "-byte " + (p.authenticated ? "hello" : "handshake") +
                    " record");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return false;
      } else if (errno != EINTR) {
        throwSystem("recv");
      }
    }
    if (!p.authenticated) {
      p.out = p.handshake.consume(p.in.data());
      p.sent = 0;
      p.have = 0;
      p.authenticated = p.handshake.done();
    }
  }
}

std::optional<AuthenticatedPeer> AuthenticatingAcceptor::next(net::Deadline deadline,
                                                              const std::atomic<bool>* abortFlag) {
  std::vector<pollfd> fds;
  for (;;) {
    if (!ready_.empty()) {
      AuthenticatedPeer peer = std::move(ready_.front());
      ready_.erase(ready_.begin());
      return peer;
    }
    net::checkAbort(abortFlag, who_);
    if (deadline.expired()) return std::nullopt;
    net::Deadline wake = deadline;
    fds.clear();
    appendPollFds(fds, wake);
    const int ready = ::poll(fds.data(), fds.size(), wake.pollTimeoutMs(net::kAbortCheckMs));
    if (ready < 0 && errno != EINTR) throwSystem(who_ + ": poll");
    if (ready < 0) continue;  // interrupted: the revents say nothing
    ready_ = serve(fds.data());
  }
}

void AuthenticatingAcceptor::appendPollFds(std::vector<pollfd>& fds, net::Deadline& wake) const {
  // After a failed accept the listener sits out (its entry stays, to keep the positions).
  const bool paused = acceptPausedUntil_ && !acceptPausedUntil_->expired();
  fds.push_back(pollfd{listenFd_, short(paused ? 0 : POLLIN), 0});
  if (paused) wake = wake.earlier(*acceptPausedUntil_);
  for (const auto& p : pending_) {
    fds.push_back({p->socket.fd(), short(p->sent < p->out.size() ? POLLOUT : POLLIN), 0});
    wake = wake.earlier(p->deadline);
  }
}

std::vector<AuthenticatedPeer> AuthenticatingAcceptor::serve(const pollfd* fds) {
  std::vector<AuthenticatedPeer> done;
  // Walk backwards so erasing keeps the remaining indices aligned with fds.
  for (size_t i = pending_.size(); i-- > 0;) {
    if (fds[i + 1].revents == 0) continue;
    try {
      if (drive(*pending_[i], fds[i + 1].revents)) {
        done.push_back(AuthenticatedPeer{std::move(pending_[i]->socket), std::move(pending_[i]->in),
                                         std::move(pending_[i]->from)});
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    } catch (const Error& error) {
      drop(i, error.what());
    }
  }
  for (size_t i = pending_.size(); i-- > 0;) {
    if (pending_[i]->deadline.expired()) {
      drop(i, "no complete handshake within " + std::to_string(handshakeTimeoutMs_) + " ms");
    }
  }
  if (fds[0].revents & POLLIN) acceptNew();
  return done;
}

}  // namespace loom::auth
