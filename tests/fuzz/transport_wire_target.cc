// SPDX-License-Identifier: Apache-2.0
// Fuzz target: what the TCP transport reads from the wire.
//
// First input byte, low bit, picks the code under test:
//   0: transport::SocketConnection receiving one message striped over 1-4 lanes: the fuzzer
//      picks lanes, stripe, size, whether the sink takes bytes in place, the frame header on
//      lane 0 (honest, fuzzed after the magic, or a Failure report with a fuzzed code and
//      reason: those may fail, as loom::Error only), and how the bytes of
//      each lane arrive (which lane next, how many bytes, whether a lane closes early); the
//      received message must equal what was sent, every delivery must stay inside the message
//      and be cut at 16-byte boundaries. An independent model of the striping (block i on lane
//      i % lanes, as socket_connection.h documents) decides what each lane carries.
//   1: createSocketTransport's accept side (rank 1 of 2) while a fuzzed "rank 0" connects:
//      strangers that send raw bytes, authenticated peers that send a fuzzed 40-byte transport
//      hello, then honest sockets so a healthy transport always completes.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/bootstrap.h"
#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "fuzz_targets.h"
#include "socket_helpers.h"
#include "transport/socket/socket_connection.h"
#include "transport/socket/socket_transport.h"
#include "transport/socket/socket_wire.h"

namespace loom::fuzz {

namespace {

const Secret kTransportSecret = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
constexpr uint64_t kCommUid = 0x1234;
constexpr int kTransportTimeoutMs = 3000;

// ---- mode 0: striping and reassembly --------------------------------------------------------

class CheckingSink final : public transport::RecvSink {
 public:
  CheckingSink(size_t bytes, bool inPlace) : message_(bytes, 0), inPlace_(inPlace) {}
  void deliver(size_t offset, const void* data, size_t bytes) override {
    check(offset <= message_.size() && bytes <= message_.size() - offset,
          "delivery outside the message");
    check(offset % 16 == 0, "delivery not at a 16-byte boundary");
    check(bytes > 0, "empty delivery");
    check((offset + bytes) % 16 == 0 || offset + bytes == message_.size(),
          "delivery ends inside a 16-byte unit (an element could be split)");
    std::memcpy(message_.data() + offset, data, bytes);
  }
  char* destination() override { return inPlace_ ? message_.data() : nullptr; }
  const std::vector<char>& message() const { return message_; }

 private:
  std::vector<char> message_;
  bool inPlace_;
};

// What lane `lane` carries of a `total`-byte message cut into `stripe`-byte blocks.
std::vector<char> laneBytes(const std::vector<char>& message, size_t lanes, size_t stripe,
                            size_t lane) {
  std::vector<char> out;
  for (size_t block = lane; block * stripe < message.size(); block += lanes) {
    const size_t begin = block * stripe;
    const size_t end = std::min(message.size(), begin + stripe);
    out.insert(out.end(), message.begin() + begin, message.begin() + end);
  }
  return out;
}

void receiveStriped(InputReader& input) {
  const size_t lanes = input.byte() % 4 + 1;
  const size_t stripe = 16 * (input.byte() % 8 + 1);
  const size_t bytes = input.u32() % 4096 + 1;
  const bool inPlace = input.byte() & 1;
  std::vector<char> sent(bytes);
  for (size_t i = 0; i < bytes; ++i) sent[i] = static_cast<char>(i * 131 + 7);

  std::vector<net::Socket> ours;
  std::vector<net::Socket> theirs;
  for (size_t i = 0; i < lanes; ++i) {
    auto [mine, other] = makeSocketPair();
    ours.push_back(std::move(mine));
    theirs.push_back(std::move(other));
  }
  transport::SocketConnection connection(1, 0, std::move(ours), stripe);
  transport::CallTag tag;
  tag.sequence = 5;
  tag.call = transport::CallDescriptor{1, 7, 0, 0, 0, bytes};
  connection.setCallTag(tag);
  CheckingSink sink(bytes, inPlace);
  connection.postRecv(bytes, &sink);
  std::vector<std::vector<char>> pending(lanes);
  std::vector<size_t> written(lanes, 0);
  for (size_t i = 0; i < lanes; ++i) pending[i] = laneBytes(sent, lanes, stripe, i);

  // Lane 0 starts with the frame header (src/transport/socket/socket_wire.h).
  const uint8_t headerMode = input.byte() % 4;
  const bool fuzzedHeader = headerMode >= 2;
  transport::WireHeader header;
  header.sequence = tag.sequence;
  header.call = tag.call;
  header.bytes = bytes;
  std::vector<uint8_t> frame(transport::kWireHeaderBytes);
  if (headerMode == 3) {
    header.kind = transport::FrameKind::Failure;
    header.code = static_cast<int32_t>(input.byte() % 10) - 1;
    header.bytes = input.byte() % 64;
  }
  transport::encodeWireHeader(header, frame.data());
  if (headerMode == 2) {
    for (size_t i = 4; i < frame.size(); ++i) frame[i] = input.byte();
  }
  if (headerMode == 3) {
    for (size_t i = 0; i < header.bytes; ++i) frame.push_back(input.byte());
  }
  pending[0].insert(pending[0].begin(), frame.begin(), frame.end());
  bool closedEarly = false;
  try {
    // Feed the lanes in pieces the input chooses; once the input is used up, everything left.
    while (!connection.recvDone()) {
      if (input.empty()) {
        for (size_t i = 0; i < lanes && !closedEarly; ++i) {
          written[i] += sendSome(theirs[i].fd(),
                                 reinterpret_cast<const uint8_t*>(pending[i].data()) + written[i],
                                 pending[i].size() - written[i]);
        }
        if (!connection.progress()) break;
        continue;
      }
      const uint8_t step = input.byte();
      const size_t lane = step % lanes;
      if ((step & 0xc0) == 0xc0 && written[lane] < pending[lane].size()) {
        ::shutdown(theirs[lane].fd(), SHUT_WR);  // the peer dies mid-message
        closedEarly = true;
      }
      const size_t count =
          std::min<size_t>(input.byte() % 64 + 1, pending[lane].size() - written[lane]);
      if (!closedEarly) {
        written[lane] +=
            sendSome(theirs[lane].fd(),
                     reinterpret_cast<const uint8_t*>(pending[lane].data()) + written[lane], count);
      }
      connection.progress();
    }
  } catch (const Error& error) {
    check(closedEarly || fuzzedHeader, std::string("receive failed without a closed lane: ") + error.what());
    return;
  }
  if (closedEarly && !connection.recvDone()) return;
  // A fuzzed header that announces a Failure frame is never data: the receive either failed
  // above or still waits for the rest of a reason longer than what lane 0 carried (a real
  // peer's missing bytes end in LOOM_TIMEOUT_MS or its EOF, as for any unfinished frame).
  const bool fuzzedFailure =
      headerMode == 2 && frame[4] == static_cast<uint8_t>(transport::FrameKind::Failure);
  if (fuzzedFailure) {
    check(!connection.recvDone(), "a Failure frame's header was taken for a data message");
    return;
  }
  check(connection.recvDone(), "every byte was sent but the receive did not finish");
  check(sink.message() == sent, "the reassembled message differs from the one sent");
}

// ---- mode 1: the transport's accept side -----------------------------------------------------

// Rank 1 of 2; its allGather hands the listener address to the fuzzed rank 0 and starts it.
class FakeBootstrap final : public Bootstrap {
 public:
  explicit FakeBootstrap(std::function<void(sockaddr_storage)> onAddress)
      : onAddress_(std::move(onAddress)) {}
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void allGather(void* data, size_t bytesPerRank) override {
    const auto* mine = static_cast<const uint8_t*>(data) + bytesPerRank;
    onAddress_(net::decodeWireAddress(mine, "fake bootstrap"));
  }
  void barrier() override {}
  const Secret& secret() const override { return kTransportSecret; }
  uint64_t commUid() const override { return kCommUid; }
  sockaddr_storage localAddress() const override { return net::loopbackAddress(AF_INET); }

 private:
  std::function<void(sockaddr_storage)> onAddress_;
};

struct Peer0Plan {
  int socketsPerPeer = 1;
  uint64_t stripe = 512;
  std::vector<std::vector<uint8_t>> strangers;  // raw bytes, no handshake
  std::vector<std::vector<uint8_t>> hellos;     // after an honest handshake
};

net::Socket connectOnce(const sockaddr_storage& address) {
  net::Socket sock(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) throwSystem("socket");
  if (::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&address),
                net::addressLength(address)) != 0) {
    throwSystem("connect");
  }
  net::tuneDataSocket(sock.fd());
  return sock;
}

std::vector<uint8_t> honestHello(const Peer0Plan& plan, int index) {
  std::vector<uint8_t> hello(40, 0);
  net::putU32(hello.data(), 0x53544d4cu);  // "LMTS"
  net::putU16(hello.data() + 4, 2);  // src/transport/socket/socket_transport.cc kHelloVersion
  net::putU16(hello.data() + 6, static_cast<uint16_t>(index));
  net::putU32(hello.data() + 8, 0);
  net::putU32(hello.data() + 12, 1);
  net::putU32(hello.data() + 16, static_cast<uint32_t>(plan.socketsPerPeer));
  net::putU64(hello.data() + 24, plan.stripe);
  net::putU64(hello.data() + 32, kCommUid);
  return hello;
}

// Rank 0's side. Every socket stays open until the transport is built, so rank 1 reads what
// it wants; failures (rank 1 gave up, dropped us) just end it.
void runPeer0(const Peer0Plan& plan, sockaddr_storage address, std::atomic<bool>& done) {
  std::vector<net::Socket> open;
  const auto deadline = net::Deadline::afterMs(kTransportTimeoutMs);
  try {
    for (const auto& bytes : plan.strangers) {
      open.push_back(connectOnce(address));
      sendSome(open.back().fd(), bytes.data(), bytes.size());
    }
    auto authenticated = [&](const std::vector<uint8_t>& hello) {
      net::Socket sock = connectOnce(address);
      auth::authenticateClient(sock.fd(), kTransportSecret, auth::Purpose::SocketTransport, deadline, &done,
                               "fuzz rank 0");
      sendSome(sock.fd(), hello.data(), hello.size());
      open.push_back(std::move(sock));
    };
    for (const auto& hello : plan.hellos) authenticated(hello);
    for (int index = 0; index < plan.socketsPerPeer; ++index) {
      authenticated(honestHello(plan, index));
    }
  } catch (const Error&) {
  }
}

void acceptSide(InputReader& input) {
  Peer0Plan plan;
  transport::SocketOptions options;
  options.socketsPerPeer = input.byte() % 3 + 1;
  options.stripeBytes = 512;
  options.timeoutMs = kTransportTimeoutMs;
  plan.socketsPerPeer = options.socketsPerPeer;
  const uint8_t counts = input.byte();
  for (int i = 0; i < (counts & 3); ++i) {
    auto bytes = input.bytes(input.byte() % 80);
    plan.strangers.emplace_back(bytes.begin(), bytes.end());
  }
  for (int i = 0; i < ((counts >> 2) & 3); ++i) {
    const uint8_t how = input.byte();
    std::vector<uint8_t> hello =
        how & 1 ? honestHello(plan, how >> 1 & 3) : std::vector<uint8_t>(40, 0);
    auto bytes = input.bytes(40);
    for (size_t b = 0; b < bytes.size(); ++b) hello[b] ^= bytes[b];
    plan.hellos.push_back(std::move(hello));
  }
  std::atomic<bool> done{false};
  std::thread peer0;
  FakeBootstrap bootstrap([&](sockaddr_storage address) {
    peer0 = std::thread([&plan, address, &done] { runPeer0(plan, address, done); });
  });
  try {
    auto transport = transport::createSocketTransport(bootstrap, {0}, options);
    check(transport->connection(0) != nullptr, "no connection to rank 0");
  } catch (const Error& error) {
    // Only a peer that authenticated and then announced a different striping may fail the
    // setup; strangers and misaddressed hellos must be dropped.
    check(error.code() == loomInvalidUsage,
          std::string("transport setup failed on fuzzed peers: ") + error.what());
  }
  done.store(true);
  if (peer0.joinable()) peer0.join();
}

}  // namespace

void transportWireOneInput(const uint8_t* data, size_t size) {
  InputReader input(data, size);
  if (input.byte() & 1) {
    acceptSide(input);
  } else {
    receiveStriped(input);
  }
}

}  // namespace loom::fuzz
