// SPDX-License-Identifier: Apache-2.0
// Fuzz target: what the bootstrap reads from peers and strangers.
//
// First input byte, low two bits, picks the code under test:
//   0: auth::decodeHello on a 32-byte handshake record, then net::decodePeerHello (the record
//      the ring and the socket transport send after it) on the next 40 bytes, then
//      rendezvous::decodeRankHello (the root's reading of a rank's hello) on the next 48;
//   1: auth::ServerHandshake (the server side of the challenge-response every bootstrap and
//      transport listener runs) fed records from the input; a flag makes the fuzzer answer the
//      challenge with the right proof (optionally corrupted), so the success path runs too;
//   2: auth::authenticateClient over a socket pair whose other end holds the input: a server
//      that sends garbage, stops mid-record or cannot prove it knows the secret;
//   3: rendezvous::exchangeWithRoot (src/bootstrap/rendezvous_rank.cc) against a fake root that
//      authenticates properly and then answers with reply bytes from the input: the reply
//      header and the address table a rank decodes (the rank's id says its root was up, so a
//      "come back" reply, kStatusRetry, is refused rather than retried).
// The ring's allGather header checks sit inside a class in an anonymous namespace; see
// README.md for the refactor that would expose them.
#include <poll.h>

#include <cstring>
#include <thread>

#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/peer_hello.h"
#include "base/net/socket.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket_bootstrap.h"
#include "fuzz_targets.h"
#include "socket_helpers.h"

namespace loom::fuzz {

namespace {

const Secret kSecret = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
constexpr int kTimeoutMs = 2000;  // never reached on a healthy run: every peer here closes

auth::Purpose purposeFrom(uint8_t byte) { return static_cast<auth::Purpose>(byte % 3 + 1); }

void decodeHelloRecord(InputReader& input) {
  const auth::Purpose purpose = purposeFrom(input.byte());
  const auth::Role role = input.byte() & 1 ? auth::Role::Server : auth::Role::Client;
  uint8_t record[auth::kHelloBytes] = {};
  auto bytes = input.bytes(sizeof(record));
  std::memcpy(record, bytes.data(), bytes.size());
  try {
    const auth::Hello hello = auth::decodeHello(record, purpose, role);
    uint8_t again[auth::kHelloBytes];
    auth::encodeHello(hello, again);
    check(std::memcmp(record, again, sizeof(record)) == 0,
          "decodeHello accepted a record that does not encode back to itself");
  } catch (const Error& error) {
    check(error.code() == loomRemoteError, "decodeHello threw a non-remote error");
  }
  // The peer hello, checked against the magic and version it claims, so the fuzzer reaches the
  // accepting path; what is accepted must encode back to the same bytes.
  uint8_t peer[net::kPeerHelloBytes] = {};
  auto more = input.bytes(sizeof(peer));
  std::memcpy(peer, more.data(), more.size());
  const auto decoded = net::decodePeerHello(peer, net::getU32(peer), net::getU16(peer + 4));
  if (decoded) {
    uint8_t again[net::kPeerHelloBytes];
    net::encodePeerHello(*decoded, again);
    check(std::memcmp(peer, again, sizeof(peer)) == 0, "decodePeerHello accepted a record that does not encode back");
  }
  // A rank's rendezvous hello as the root (and its tombstone) reads it.
  uint8_t rank[rendezvous::kRankHelloBytes] = {};
  auto rankBytes = input.bytes(sizeof(rank));
  std::memcpy(rank, rankBytes.data(), rankBytes.size());
  std::string why;
  if (const auto hello = rendezvous::decodeRankHello(rank, &why)) {
    uint8_t again[rendezvous::kRankHelloBytes];
    rendezvous::encodeRankHello(*hello, again);
    check(std::memcmp(rank, again, sizeof(rank)) == 0, "decodeRankHello accepted a record that does not encode back");
  } else {
    check(!why.empty(), "decodeRankHello refused a record without saying why");
  }
}

void serverHandshake(InputReader& input) {
  const uint8_t flags = input.byte();
  const bool honestProof = flags & 1;
  const auth::Purpose purpose = purposeFrom(input.byte());
  auth::ServerHandshake handshake(kSecret, purpose);
  auth::Nonce clientNonce{};
  auth::Nonce serverNonce{};
  try {
    while (!handshake.done()) {
      const size_t want = handshake.bytesWanted();
      check(want == auth::kHelloBytes || want == auth::kProofBytes, "odd record size wanted");
      std::vector<uint8_t> record(want, 0);
      auto bytes = input.bytes(want);
      std::memcpy(record.data(), bytes.data(), bytes.size());
      const bool isHello = want == auth::kHelloBytes;
      if (isHello) {
        std::memcpy(clientNonce.data(), record.data() + 16, clientNonce.size());
      } else if (honestProof) {
        // The right proof, XORed with the input's bytes (all zero at the end of the input).
        const auth::Proof proof =
            auth::computeProof(kSecret, purpose, auth::Role::Client, clientNonce, serverNonce);
        for (size_t i = 0; i < proof.size(); ++i) record[i] ^= proof[i];
      }
      const std::vector<uint8_t> reply = handshake.consume(record.data());
      if (isHello) {
        check(reply.size() == auth::kHelloBytes, "server hello of the wrong size");
        serverNonce = auth::decodeHello(reply.data(), purpose, auth::Role::Server).nonce;
      } else {
        const auth::Proof expected =
            auth::computeProof(kSecret, purpose, auth::Role::Client, clientNonce, serverNonce);
        check(std::memcmp(record.data(), expected.data(), expected.size()) == 0,
              "ServerHandshake accepted a wrong proof");
        const auth::Proof server =
            auth::computeProof(kSecret, purpose, auth::Role::Server, clientNonce, serverNonce);
        check(reply.size() == server.size() &&
                  std::memcmp(reply.data(), server.data(), server.size()) == 0,
              "ServerHandshake answered with a wrong proof");
      }
    }
  } catch (const Error& error) {
    check(!handshake.done(), "ServerHandshake threw after finishing");
    return;
  }
  bool refused = false;
  try {
    std::vector<uint8_t> record(auth::kHelloBytes, 0);
    (void)handshake.consume(record.data());
  } catch (const Error&) {
    refused = true;
  }
  check(refused, "ServerHandshake took a record after the handshake finished");
}

void clientAgainstGarbage(InputReader& input) {
  const auth::Purpose purpose = purposeFrom(input.byte());
  auto [mine, theirs] = makeSocketPair();
  auto bytes = input.rest();
  sendSome(theirs.fd(), bytes.data(), bytes.size());
  ::shutdown(theirs.fd(), SHUT_WR);  // then EOF: the client never waits for the timeout
  try {
    auth::authenticateClient(mine.fd(), kSecret, purpose, net::Deadline::afterMs(kTimeoutMs),
                             nullptr, "fuzz client");
  } catch (const Error& error) {
    check(error.code() == loomRemoteError || error.code() == loomSystemError,
          std::string("authenticateClient: unexpected error kind: ") + error.what());
    return;
  }
  fail("authenticateClient accepted a server that does not know the secret");
}

// The fake root: accepts one rank, authenticates it honestly, reads its hello, sends `reply`
// and closes. Errors just end it (the rank then sees EOF).
void fakeRoot(int listenFd, std::vector<uint8_t> reply) {
  try {
    const auto deadline = net::Deadline::afterMs(kTimeoutMs);
    pollfd ready{listenFd, POLLIN, 0};
    if (::poll(&ready, 1, kTimeoutMs) != 1) return;
    net::Socket rank(::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!rank.valid()) return;
    auth::ServerHandshake handshake(kSecret, auth::Purpose::RootRendezvous);
    while (!handshake.done()) {
      std::vector<uint8_t> record(handshake.bytesWanted());
      net::readFully(rank.fd(), record.data(), record.size(), deadline, nullptr, "fake root");
      const auto answer = handshake.consume(record.data());
      net::writeFully(rank.fd(), answer.data(), answer.size(), deadline, nullptr, "fake root");
    }
    uint8_t hello[rendezvous::kRankHelloBytes];
    net::readFully(rank.fd(), hello, sizeof(hello), deadline, nullptr, "fake root");
    sendSome(rank.fd(), reply.data(), reply.size());
  } catch (const Error&) {
  }
}

void rankAgainstFakeRoot(InputReader& input) {
  static net::Socket listener = net::openListener(net::loopbackAddress(AF_INET));
  const uint8_t flags = input.byte();
  const int nranks = input.byte() % 8 + 1;
  std::vector<uint8_t> reply;
  if (flags & 1) {
    // A well-formed header, so the fuzzer spends its time on status, sizes and the table.
    reply.resize(rendezvous::kReplyHeaderBytes, 0);
    rendezvous::ReplyHeader header;
    header.status = input.byte() % 5;  // 4 is no status: the rank must refuse it
    header.nranks = flags & 2 ? static_cast<uint32_t>(nranks) : input.u32();
    header.payloadBytes = flags & 4 ? static_cast<uint32_t>(nranks * net::kWireAddressBytes) : input.u32();
    rendezvous::encodeReplyHeader(header, reply.data());
  }
  auto rest = input.bytes(64 * 1024);
  reply.insert(reply.end(), rest.begin(), rest.end());

  UniqueIdContents id;
  id.rootAddress = net::boundAddress(listener.fd());
  id.secret = kSecret;
  id.commUid = 1;
  BootstrapOptions options;
  options.timeoutMs = kTimeoutMs;
  std::thread root(fakeRoot, listener.fd(), std::move(reply));
  try {
    const auto table =
        rendezvous::exchangeWithRoot(id, 0, nranks, net::loopbackAddress(AF_INET), options,
                                     net::Deadline::afterMs(kTimeoutMs), "fuzz rank");
    check(table.size() == static_cast<size_t>(nranks), "address table of the wrong length");
  } catch (const Error&) {
  }
  root.join();
}

}  // namespace

void bootstrapWireOneInput(const uint8_t* data, size_t size) {
  InputReader input(data, size);
  switch (input.byte() & 3) {
    case 0:
      decodeHelloRecord(input);
      break;
    case 1:
      serverHandshake(input);
      break;
    case 2:
      clientAgainstGarbage(input);
      break;
    default:
      rankAgainstFakeRoot(input);
      break;
  }
}

}  // namespace loom::fuzz
