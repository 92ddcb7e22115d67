// SPDX-License-Identifier: Apache-2.0
// SipHash known answers, the authentication handshake, and the root + TCP-ring bootstrap with
// ranks as threads of this process on loopback: allGather/barrier, wrong secrets, strangers
// that send garbage or stall, inconsistent communicators, timeouts and abort.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "base/rank_ranges.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {
namespace {

using Clock = std::chrono::steady_clock;

Secret referenceKey() {
  Secret key{};
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i);
  return key;
}

std::vector<uint8_t> countingMessage(size_t bytes) {
  std::vector<uint8_t> message(bytes);
  for (size_t i = 0; i < bytes; ++i) message[i] = static_cast<uint8_t>(i);
  return message;
}

// Reference vectors of the SipHash paper / reference implementation: key 00..0f, message
// 00..(len-1).
TEST(SipHash, Matches64BitReferenceVectors) {
  const Secret key = referenceKey();
  EXPECT_EQ(auth::sipHash24(key, nullptr, 0), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(auth::sipHash24(key, countingMessage(1).data(), 1), 0x74f839c593dc67fdull);
  EXPECT_EQ(auth::sipHash24(key, countingMessage(2).data(), 2), 0x0d6c8009d9a94f5aull);
  // The example of the SipHash paper (appendix A): a 15-byte message.
  EXPECT_EQ(auth::sipHash24(key, countingMessage(15).data(), 15), 0xa129ca6149be45e5ull);
}

TEST(SipHash, Matches128BitReferenceVectors) {
  const Secret key = referenceKey();
  const std::vector<std::pair<size_t, std::array<uint8_t, 16>>> vectors = {
      {0,
       {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02,
        0x93}},
      {1,
       {0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc,
        0x45}},
      {2,
       {0x81, 0x77, 0x22, 0x8d, 0xa4, 0xa4, 0x5d, 0xc7, 0xfc, 0xa3, 0x8b, 0xde, 0xf6, 0x0a, 0xff,
        0xe4}},
      {15,
       {0x54, 0x93, 0xe9, 0x99, 0x33, 0xb0, 0xa8, 0x11, 0x7e, 0x08, 0xec, 0x0f, 0x97, 0xcf, 0xc3,
        0xd9}},
      {63,
       {0x51, 0x50, 0xd1, 0x77, 0x2f, 0x50, 0x83, 0x4a, 0x50, 0x3e, 0x06, 0x9a, 0x97, 0x3f, 0xbd,
        0x7c}},
  };
  for (const auto& [length, expected] : vectors) {
    EXPECT_EQ(auth::sipHash24x128(key, countingMessage(length).data(), length), expected)
        << "length " << length;
  }
}

TEST(Auth, ProofsBindPurposeRoleAndNonces) {
  const Secret secret = randomSecret();
  auth::Nonce a{}, b{};
  b[0] = 1;
  using auth::Purpose, auth::Role;
  const auth::Proof base = auth::computeProof(secret, Purpose::BootstrapRing, Role::Client, a, b);
  EXPECT_EQ(base, auth::computeProof(secret, Purpose::BootstrapRing, Role::Client, a, b));
  EXPECT_NE(base, auth::computeProof(secret, Purpose::SocketTransport, Role::Client, a, b));
  EXPECT_NE(base, auth::computeProof(secret, Purpose::BootstrapRing, Role::Server, a, b));
  EXPECT_NE(base, auth::computeProof(secret, Purpose::BootstrapRing, Role::Client, b, a));
  EXPECT_NE(base, auth::computeProof(randomSecret(), Purpose::BootstrapRing, Role::Client, a, b));
}

TEST(Auth, ServerHandshakeRejectsWrongProofAndGarbage) {
  const Secret secret = randomSecret();
  auth::ServerHandshake server(secret, auth::Purpose::RootRendezvous);
  uint8_t hello[auth::kHelloBytes];
  auth::Hello client = auth::makeHello(auth::Purpose::RootRendezvous, auth::Role::Client);
  auth::encodeHello(client, hello);
  ASSERT_EQ(server.bytesWanted(), auth::kHelloBytes);
  std::vector<uint8_t> reply = server.consume(hello);
  ASSERT_EQ(reply.size(), auth::kHelloBytes);
  auth::Hello serverHello =
      auth::decodeHello(reply.data(), auth::Purpose::RootRendezvous, auth::Role::Server);
  // A proof made with another secret is refused.
  auth::Proof wrong = auth::computeProof(randomSecret(), auth::Purpose::RootRendezvous,
                                         auth::Role::Client, client.nonce, serverHello.nonce);
  EXPECT_THROW(server.consume(wrong.data()), Error);

  auth::ServerHandshake other(secret, auth::Purpose::RootRendezvous);
  uint8_t garbage[auth::kHelloBytes];
  std::memset(garbage, 0x5a, sizeof(garbage));
  EXPECT_THROW(other.consume(garbage), Error);
  // A hello for another purpose is refused too.
  auth::encodeHello(auth::makeHello(auth::Purpose::SocketTransport, auth::Role::Client), hello);
  auth::ServerHandshake third(secret, auth::Purpose::RootRendezvous);
  EXPECT_THROW(third.consume(hello), Error);
}

TEST(Auth, AcceptorServesOthersAndDropsStallersAtTheirDeadline) {
  net::Socket listener = net::openListener(net::loopbackAddress(AF_INET));
  const sockaddr_storage address = net::boundAddress(listener.fd());
  const Secret secret = randomSecret();
  auth::AuthenticatingAcceptor acceptor(listener.fd(), secret, auth::Purpose::BootstrapRing, 4,
                                        "test listener", 200);
  const auto deadline = net::Deadline::afterMs(5000);
  net::Socket staller = net::connectWithRetry(address, deadline, 5000, nullptr, "staller");
  std::thread client([&] {
    net::Socket sock = net::connectWithRetry(address, deadline, 5000, nullptr, "client");
    auth::authenticateClient(sock.fd(), secret, auth::Purpose::BootstrapRing, deadline, nullptr,
                             "client");
    net::writeFully(sock.fd(), "LOOM", 4, deadline, nullptr, "client");
  });
  auto peer = acceptor.next(net::Deadline::afterMs(3000), nullptr);
  client.join();
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(std::string(peer->hello.begin(), peer->hello.end()), "LOOM");
  // Nobody else completes: next() gives up at its deadline, having dropped the staller.
  EXPECT_FALSE(acceptor.next(net::Deadline::afterMs(600), nullptr).has_value());
  char byte;
  EXPECT_EQ(::recv(staller.fd(), &byte, 1, MSG_DONTWAIT), 0) << "the staller was not dropped";
}

TEST(Auth, PinnedSecretGivesDeterministicId) {
  const Secret secret = randomSecret();
  sockaddr_storage pinned = net::loopbackAddress(AF_INET);
  UniqueIdContents first = decodeUniqueId(startRootServer(&pinned, &secret));
  EXPECT_EQ(first.secret, secret);
  EXPECT_EQ(first.commUid, auth::deriveCommUid(secret));
  EXPECT_NE(net::portOf(first.rootAddress), 0);
}

// ---- Bootstrap with ranks as threads ---------------------------------------------------------

// A root as loomGetUniqueId starts one: its id leaves the process, so a rank that comes while
// (or after) the rendezvous ends is answered by its tombstone, not dropped.
const RootOptions kPublished{true, 0};

BootstrapOptions quickOptions(int timeoutMs = 20000) {
  BootstrapOptions options;
  options.timeoutMs = timeoutMs;
  options.commName = "test";
  return options;
}

// Runs body(rank) on one thread per entry and returns each rank's exception (or null).
std::vector<std::exception_ptr> runRanks(int nranks, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

void rethrowFirst(const std::vector<std::exception_ptr>& errors) {
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

// The Error of one rank; fails the test if the rank succeeded.
Error errorOf(const std::exception_ptr& error) {
  if (!error) {
    ADD_FAILURE() << "expected an error";
    return Error(loomSuccess, "");
  }
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
  return Error(loomSuccess, "");
}

bool contains(const Error& error, const std::string& needle) {
  return std::string(error.what()).find(needle) != std::string::npos;
}

uint8_t pattern(int rank, size_t index, int salt) {
  return static_cast<uint8_t>(rank * 131 + index * 7 + salt * 29 + (index >> 9));
}

void exerciseBootstrap(Bootstrap& bootstrap, const UniqueIdContents& id) {
  const int rank = bootstrap.rank();
  const int n = bootstrap.size();
  EXPECT_EQ(bootstrap.secret(), id.secret);
  EXPECT_EQ(bootstrap.commUid(), id.commUid);
  EXPECT_TRUE(net::isLoopback(bootstrap.localAddress()));
  for (size_t bytes : {size_t{1}, size_t{24}, size_t{1} << 20}) {
    std::vector<uint8_t> data(bytes * n, 0xee);
    for (size_t i = 0; i < bytes; ++i) data[rank * bytes + i] = pattern(rank, i, int(bytes & 63));
    bootstrap.allGather(data.data(), bytes);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(data[r * bytes + i], pattern(r, i, int(bytes & 63)))
            << "rank " << rank << " block " << r << " byte " << i << " of " << bytes;
      }
    }
    bootstrap.barrier();
  }
}

class BootstrapSizes : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapSizes, AllGatherAndBarrier) {
  const int n = GetParam();
  const loomUniqueId id = startRootServer(nullptr, nullptr, kPublished);
  const UniqueIdContents contents = decodeUniqueId(id);
  rethrowFirst(runRanks(n, [&](int rank) {
    auto bootstrap = createSocketBootstrap(contents, rank, n, quickOptions());
    ASSERT_EQ(bootstrap->rank(), rank);
    ASSERT_EQ(bootstrap->size(), n);
    exerciseBootstrap(*bootstrap, contents);
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapSizes, ::testing::Values(1, 2, 3, 5, 8));

TEST(Bootstrap, WorksOverIpv6Loopback) {
  sockaddr_storage pinned = net::loopbackAddress(AF_INET6);
  net::Socket probe(::socket(AF_INET6, SOCK_STREAM, 0));
  if (::bind(probe.fd(), reinterpret_cast<sockaddr*>(&pinned), sizeof(sockaddr_in6)) != 0) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  probe.reset();
  const UniqueIdContents contents = decodeUniqueId(startRootServer(&pinned, nullptr));
  ASSERT_EQ(contents.rootAddress.ss_family, AF_INET6);
  rethrowFirst(runRanks(3, [&](int rank) {
    auto bootstrap = createSocketBootstrap(contents, rank, 3, quickOptions());
    EXPECT_EQ(bootstrap->localAddress().ss_family, AF_INET6);
    exerciseBootstrap(*bootstrap, contents);
  }));
}

// LOOM_COMM_ID style: the root is pinned to a fixed address and secret, and the next
// communicator pins the same address again as soon as the previous one is up.
TEST(Bootstrap, PinnedAddressCanBeReusedRightAway) {
  sockaddr_storage pinned;
  {
    net::Socket probe = net::openListener(net::loopbackAddress(AF_INET));
    pinned = net::boundAddress(probe.fd());
  }
  const Secret secret = randomSecret();
  for (int round = 0; round < 3; ++round) {
    const UniqueIdContents contents = decodeUniqueId(startRootServer(&pinned, &secret, kPublished));
    EXPECT_EQ(addressToString(contents.rootAddress), addressToString(pinned));
    rethrowFirst(runRanks(2, [&](int rank) {
      auto bootstrap = createSocketBootstrap(contents, rank, 2, quickOptions());
      bootstrap->barrier();
    }));
  }
}

TEST(Bootstrap, WrongSecretIsRefusedAndTheRealRankStillJoins) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  const int n = 3;
  std::atomic<bool> impostorDone{false};
  auto errors = runRanks(n + 1, [&](int slot) {
    if (slot == n) {
      // An impostor claiming rank 2 with the wrong secret: refused quickly.
      UniqueIdContents wrong = contents;
      wrong.secret[0] ^= 1;
      try {
        createSocketBootstrap(wrong, 2, n, quickOptions(5000));
      } catch (...) {
        impostorDone = true;
        throw;
      }
      return;
    }
    // The real rank 2 joins only after the impostor was turned away.
    while (slot == 2 && !impostorDone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto bootstrap = createSocketBootstrap(contents, slot, n, quickOptions());
    exerciseBootstrap(*bootstrap, contents);
  });
  for (int rank = 0; rank < n; ++rank) EXPECT_FALSE(errors[rank]) << "rank " << rank;
  Error refused = errorOf(errors[n]);
  EXPECT_EQ(refused.code(), loomRemoteError);
  EXPECT_TRUE(contains(refused, "rank 2")) << refused.what();
  EXPECT_TRUE(contains(refused, "refused")) << refused.what();
}

// Strangers at the root listener: one sends garbage, one connects and sends nothing, one sends
// half a handshake. The ranks must still initialise promptly (well before the 5 s handshake
// deadline that eventually drops the staller).
TEST(Bootstrap, StrangersDoNotDelayTheRanks) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  auto connectStranger = [&] {
    net::Socket sock(::socket(contents.rootAddress.ss_family, SOCK_STREAM, 0));
    EXPECT_EQ(::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&contents.rootAddress),
                        net::addressLength(contents.rootAddress)),
              0);
    return sock;
  };
  net::Socket garbage = connectStranger();
  std::vector<uint8_t> junk(200, 0x42);
  ASSERT_EQ(::send(garbage.fd(), junk.data(), junk.size(), MSG_NOSIGNAL), ssize_t(junk.size()));
  net::Socket staller = connectStranger();
  net::Socket halfway = connectStranger();
  uint8_t hello[auth::kHelloBytes];
  auth::encodeHello(auth::makeHello(auth::Purpose::RootRendezvous, auth::Role::Client), hello);
  ASSERT_EQ(::send(halfway.fd(), hello, 20, MSG_NOSIGNAL), 20);

  const int n = 4;
  const auto start = Clock::now();
  rethrowFirst(runRanks(n, [&](int rank) {
    auto bootstrap = createSocketBootstrap(contents, rank, n, quickOptions());
    std::vector<uint8_t> ranks(n);
    ranks[rank] = static_cast<uint8_t>(rank + 1);
    bootstrap->allGather(ranks.data(), 1);
    for (int r = 0; r < n; ++r) EXPECT_EQ(ranks[r], r + 1);
  }));
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_LT(elapsed.count(), 3000);
  // The root dropped the garbage sender: its socket reads EOF (or a reset).
  char byte;
  EXPECT_LE(::recv(garbage.fd(), &byte, 1, 0), 0);
}

TEST(Bootstrap, DuplicateRankFailsEveryoneWithInvalidUsage) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  const int ranks[] = {0, 1, 1};
  auto errors = runRanks(
      3, [&](int slot) { createSocketBootstrap(contents, ranks[slot], 3, quickOptions(10000)); });
  for (int slot = 0; slot < 3; ++slot) {
    Error error = errorOf(errors[slot]);
    EXPECT_EQ(error.code(), loomInvalidUsage) << error.what();
    EXPECT_TRUE(contains(error, "rank 1 joined twice")) << error.what();
  }
}

TEST(Bootstrap, NranksMismatchFailsWithInvalidUsage) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  auto errors = runRanks(2, [&](int rank) {
    createSocketBootstrap(contents, rank, rank == 0 ? 2 : 3, quickOptions(10000));
  });
  for (int rank = 0; rank < 2; ++rank) {
    Error error = errorOf(errors[rank]);
    EXPECT_EQ(error.code(), loomInvalidUsage) << error.what();
    EXPECT_TRUE(contains(error, "nranks mismatch")) << error.what();
  }
}

TEST(Bootstrap, AllGatherSizeMismatchIsDetected) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  auto errors = runRanks(2, [&](int rank) {
    auto bootstrap = createSocketBootstrap(contents, rank, 2, quickOptions(5000));
    std::vector<uint8_t> data(64);
    bootstrap->allGather(data.data(), rank == 0 ? 8 : 16);
  });
  for (int rank = 0; rank < 2; ++rank) {
    Error error = errorOf(errors[rank]);
    EXPECT_EQ(error.code(), loomInvalidUsage) << error.what();
    EXPECT_TRUE(contains(error, "allGather mismatch")) << error.what();
  }
}

TEST(Bootstrap, UnreachableRootTimesOutWithAClearMessage) {
  // A port that was just free: nothing listens there.
  net::Socket placeholder = net::openListener(net::loopbackAddress(AF_INET));
  UniqueIdContents contents;
  contents.rootAddress = net::boundAddress(placeholder.fd());
  contents.secret = randomSecret();
  contents.commUid = 7;
  // As for env-based init, where the root may come up late: refusals are retried until the
  // timeout. (A root that was up refuses for good after a grace: test_init_failures.cc.)
  contents.rootMayStartLate = true;
  placeholder.reset();
  const auto start = Clock::now();
  try {
    createSocketBootstrap(contents, 0, 2, quickOptions(300));
    FAIL() << "expected a timeout";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomSystemError);
    const std::string expected = "[test] rank 0: bootstrap connect to the root at " +
                                 addressToString(contents.rootAddress) +
                                 " failed: Connection refused (errno 111) after 300 ms: no root listened there in "
                                 "that time; is rank 0 running, with the same LOOM_COMM_ID (or MASTER_ADDR and "
                                 "MASTER_PORT) as this rank?";
    EXPECT_EQ(std::string(error.what()), expected);
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

// The root of a launcher environment's second communicator (generation 2) does not count a rank
// of another generation in: it tells it to come back, until the rank's timeout says why.
TEST(Bootstrap, ARankOfAnotherGenerationIsToldToComeBack) {
  RootOptions second = kPublished;
  second.generation = 2;
  UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, second));
  contents.rootMayStartLate = true;  // as loomCommInitFromEnv's ids
  contents.generation = 1;
  const auto start = Clock::now();
  try {
    createSocketBootstrap(contents, 0, 1, quickOptions(500));
    ADD_FAILURE() << "a rank of generation 1 joined the rendezvous of generation 2";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomSystemError) << error.what();
    EXPECT_TRUE(contains(error, "served another communicator of this job for as long as this rank waited (this "
                                "root serves communicator #2 of its launcher environment, this rank comes for #1"))
        << error.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  contents.generation = 2;
  createSocketBootstrap(contents, 0, 1, quickOptions());
}

TEST(Bootstrap, AbortStopsTheWaitForAMissingRank) {
  const UniqueIdContents contents = decodeUniqueId(startRootServer(nullptr, nullptr, kPublished));
  std::atomic<bool> abortFlag{false};
  BootstrapOptions options = quickOptions(60000);
  options.abortFlag = &abortFlag;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abortFlag = true;
  });
  const auto start = Clock::now();
  try {
    createSocketBootstrap(contents, 0, 2, options);  // rank 1 never comes
    ADD_FAILURE() << "expected an abort";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), loomInvalidUsage);
    EXPECT_TRUE(contains(error, "[test] rank 0")) << error.what();
    EXPECT_TRUE(contains(error, "aborted")) << error.what();
  }
  aborter.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(Bootstrap, RejectsBadArguments) {
  UniqueIdContents contents;
  EXPECT_THROW(createSocketBootstrap(contents, 2, 2, quickOptions()), Error);
  EXPECT_THROW(createSocketBootstrap(contents, -1, 2, quickOptions()), Error);
  EXPECT_THROW(createSocketBootstrap(contents, 0, 0, quickOptions()), Error);
}

// ---- Interface selection ----------------------------------------------------------------------

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) saved_ = old, hadValue_ = true;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (hadValue_) {
      setenv(name_, saved_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string saved_;
  bool hadValue_ = false;
};

TEST(InterfaceSelection, FollowsLoomSocketIfname) {
  {
    ScopedEnv env("LOOM_SOCKET_IFNAME", "=lo");
    EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "127.0.0.1:0");
    sockaddr_storage v6root = net::loopbackAddress(AF_INET6);
    sockaddr_storage chosen = net::chooseLocalAddress(&v6root);
    EXPECT_TRUE(net::isLoopback(chosen));
  }
  {
    ScopedEnv env("LOOM_SOCKET_IFNAME", "no_such_interface");
    try {
      net::chooseLocalAddress(nullptr);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidArgument);
      EXPECT_TRUE(contains(error, "no_such_interface")) << error.what();
    }
  }
  {
    ScopedEnv env("LOOM_SOCKET_IFNAME", "^lo");
    try {
      EXPECT_FALSE(net::isLoopback(net::chooseLocalAddress(nullptr)));
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidArgument);  // a host with loopback only
    }
  }
  {
    ScopedEnv env("LOOM_SOCKET_IFNAME", nullptr);
    EXPECT_EQ(addressToString(net::chooseLocalAddress(nullptr)), "127.0.0.1:0");
    sockaddr_storage v6root = net::loopbackAddress(AF_INET6);
    EXPECT_EQ(addressToString(net::chooseLocalAddress(&v6root)), "[::1]:0");
  }
}


// How the waiting rendezvous names ranks in its reports and errors: compact and capped.
TEST(RankRanges, CompactRangesAndTheArrivedAndMissing) {
  EXPECT_EQ(rankRanges({}), "none");
  EXPECT_EQ(rankRanges({3}), "3");
  EXPECT_EQ(rankRanges({9, 0, 1, 2, 5, 7, 8, 2}), "0-2, 5, 7-9");
  EXPECT_EQ(arrivalSummary({true, true, true, false, false, false, false, false}), "arrived 3 of 8: 0-2; missing: 3-7");
  EXPECT_EQ(arrivalSummary({false, false}), "arrived 0 of 2; missing: 0-1");
  EXPECT_EQ(arrivalSummary({true, true}), "arrived 2 of 2: 0-1");
  // Every other rank of 10000 missing: one line, not 5000 numbers.
  std::vector<bool> arrived(10000);
  for (size_t r = 0; r < arrived.size(); r += 2) arrived[r] = true;
  const std::string line = arrivalSummary(arrived);
  EXPECT_LT(line.size(), 500u) << line;
  EXPECT_NE(line.find("arrived 5000 of 10000: 0, 2, 4"), std::string::npos) << line;
  EXPECT_NE(line.find("more)"), std::string::npos) << line;
}

}  // namespace
}  // namespace loom
