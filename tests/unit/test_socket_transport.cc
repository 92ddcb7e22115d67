// SPDX-License-Identifier: Apache-2.0
// The TCP transport with ranks as threads on loopback: striped messages of awkward sizes in
// both directions at once, content and delivery alignment checked; strangers at the data
// listener; a peer that goes away gives an error, not a hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "bootstrap/socket_bootstrap.h"
#include "tests/support/post_send.h"
#include "tests/support/thread_bootstrap.h"
#include "transport/socket/socket_transport.h"

namespace loom::transport {
namespace {

using Clock = std::chrono::steady_clock;

uint8_t pattern(int from, int to, int message, size_t i) {
  // Mixes in higher bits of i so a block delivered at the wrong offset is caught.
  return static_cast<uint8_t>(from * 37 + to * 11 + message * 5 + i * 13 + (i >> 8) * 3 +
                              (i >> 16) * 7);
}

std::vector<uint8_t> messageBytes(int from, int to, int message, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(from, to, message, i);
  return data;
}

// Collects a message and checks the RecvSink contract on the way.
class CheckingSink final : public RecvSink {
 public:
  explicit CheckingSink(size_t bytes) : data_(bytes), covered_(bytes, 0) {}
  void deliver(size_t offset, const void* data, size_t bytes) override {
    ASSERT_GT(bytes, 0u);
    ASSERT_LE(offset + bytes, data_.size());
    EXPECT_EQ(offset % 16, 0u) << "piece at " << offset;
    if (offset + bytes != data_.size()) {
      EXPECT_EQ(bytes % 16, 0u) << "piece at " << offset;
    }
    for (size_t i = offset; i < offset + bytes; ++i) {
      ASSERT_EQ(covered_[i], 0) << "byte " << i << " delivered twice";
      covered_[i] = 1;
    }
    std::memcpy(data_.data() + offset, data, bytes);
    received_ += bytes;
  }
  const std::vector<uint8_t>& data() const { return data_; }
  size_t received() const { return received_; }

 private:
  std::vector<uint8_t> data_;
  std::vector<uint8_t> covered_;
  size_t received_ = 0;
};

// Drives connections until `done` holds, sleeping in poll() when nothing moves.
void driveUntil(const std::vector<Connection*>& connections, const std::function<bool()>& done,
                std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = Clock::now() + limit;
  std::vector<pollfd> fds;
  while (!done()) {
    bool moved = false;
    for (Connection* connection : connections) moved |= connection->progress();
    if (moved) continue;
    ASSERT_LT(Clock::now(), deadline) << "transport made no progress";
    fds.clear();
    for (Connection* connection : connections) connection->addPollFds(fds);
    ::poll(fds.data(), fds.size(), 20);
  }
}

// Every rank exchanges `sizes` (in order) with both ring neighbours at once and checks them.
void ringExchange(int n, const SocketOptions& options, const std::vector<size_t>& sizes) {
  test::runThreadRanks(n, [&](int rank, Bootstrap& bootstrap) {
    std::vector<int> peers = {(rank + 1) % n};
    if (n > 2) peers.push_back((rank - 1 + n) % n);
    auto transport = createSocketTransport(bootstrap, peers, options);
    std::vector<Connection*> connections;
    for (int peer : peers) {
      connections.push_back(transport->connection(peer));
      EXPECT_EQ(connections.back()->peer(), peer);
      EXPECT_STREQ(connections.back()->kind(), "socket");
    }
    for (int m = 0; m < static_cast<int>(sizes.size()); ++m) {
      std::vector<std::vector<uint8_t>> outgoing;
      std::vector<std::unique_ptr<CheckingSink>> sinks;
      for (size_t p = 0; p < peers.size(); ++p) {
        outgoing.push_back(messageBytes(rank, peers[p], m, sizes[m]));
        sinks.push_back(std::make_unique<CheckingSink>(sizes[m]));
        test::postSend(*connections[p], outgoing.back().data(), sizes[m]);
        connections[p]->postRecv(sizes[m], sinks.back().get());
      }
      driveUntil(connections, [&] {
        for (Connection* c : connections) {
          if (!c->sendDone() || !c->recvDone()) return false;
        }
        return true;
      });
      for (size_t p = 0; p < peers.size(); ++p) {
        ASSERT_EQ(sinks[p]->received(), sizes[m]);
        ASSERT_TRUE(sinks[p]->data() == messageBytes(peers[p], rank, m, sizes[m]))
            << "rank " << rank << " message " << m << " (" << sizes[m] << " bytes) from rank "
            << peers[p];
      }
    }
    bootstrap.barrier();  // nobody closes sockets while a neighbour still reads
  });
}

std::vector<size_t> awkwardSizes(size_t stripe) {
  return {1, 15, 16, stripe - 1, stripe, stripe + 1, 3 * stripe + 17, (size_t{8} << 20) + 3};
}

TEST(SocketTransport, TwoRanksDefaultOptions) {
  SocketOptions options;
  options.timeoutMs = 20000;
  ringExchange(2, options, awkwardSizes(options.stripeBytes));
}

TEST(SocketTransport, TwoRanksThreeSocketsSmallStripes) {
  SocketOptions options{3, 64 * 1024, 20000};
  ringExchange(2, options, awkwardSizes(options.stripeBytes));
}

TEST(SocketTransport, FourRankRingBothDirections) {
  SocketOptions options{2, 64 * 1024, 20000};
  ringExchange(4, options, awkwardSizes(options.stripeBytes));
}

TEST(SocketTransport, TinyStripesAndOneSocket) {
  ringExchange(2, SocketOptions{4, 16, 20000}, {1, 17, 4099, 65536 + 5});
  ringExchange(3, SocketOptions{1, 4096, 20000}, {4095, 4097, 1 << 20});
}

TEST(SocketTransport, WorksOverTheSocketBootstrap) {
  const UniqueIdContents id = decodeUniqueId(startRootServer(nullptr, nullptr));
  const int n = 3;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(n);
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        BootstrapOptions bootOptions;
        bootOptions.timeoutMs = 20000;
        auto bootstrap = createSocketBootstrap(id, rank, n, bootOptions);
        std::vector<int> peers;
        for (int p = 0; p < n; ++p) {
          if (p != rank) peers.push_back(p);
        }
        auto transport = createSocketTransport(*bootstrap, peers, SocketOptions{2, 1024, 20000});
        std::vector<Connection*> connections;
        std::vector<std::vector<uint8_t>> outgoing;
        std::vector<std::unique_ptr<CheckingSink>> sinks;
        const size_t bytes = 100000 + rank;  // sizes differ per sender
        for (int peer : peers) {
          connections.push_back(transport->connection(peer));
          outgoing.push_back(messageBytes(rank, peer, 0, bytes));
          sinks.push_back(std::make_unique<CheckingSink>(100000 + peer));
          test::postSend(*connections.back(), outgoing.back().data(), bytes);
          connections.back()->postRecv(100000 + peer, sinks.back().get());
        }
        driveUntil(connections, [&] {
          for (Connection* c : connections) {
            if (!c->sendDone() || !c->recvDone()) return false;
          }
          return true;
        });
        for (size_t p = 0; p < peers.size(); ++p) {
          if (sinks[p]->data() != messageBytes(peers[p], rank, 0, 100000 + peers[p])) {
            failures[rank] = "wrong data from rank " + std::to_string(peers[p]);
          }
        }
        bootstrap->barrier();
      } catch (const std::exception& error) {
        failures[rank] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(failures[rank], "") << "rank " << rank;
}

// Forwards to another bootstrap and runs a hook after each allGather (to learn the
// transport's listener addresses as they are published).
class SpyBootstrap final : public Bootstrap {
 public:
  SpyBootstrap(Bootstrap& inner, std::function<void(const uint8_t*, size_t)> hook)
      : inner_(inner), hook_(std::move(hook)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void allGather(void* data, size_t bytesPerRank) override {
    inner_.allGather(data, bytesPerRank);
    hook_(static_cast<const uint8_t*>(data), bytesPerRank);
  }
  void barrier() override { inner_.barrier(); }
  const Secret& secret() const override { return inner_.secret(); }
  uint64_t commUid() const override { return inner_.commUid(); }
  sockaddr_storage localAddress() const override { return inner_.localAddress(); }

 private:
  Bootstrap& inner_;
  std::function<void(const uint8_t*, size_t)> hook_;
};

TEST(SocketTransport, StrangersAtTheDataListenerAreDropped) {
  std::mutex mutex;
  std::vector<net::Socket> strangers;
  std::string impostorError;
  const auto start = Clock::now();
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    // Rank 0 (the connecting side) first sends strangers to rank 1's listener.
    SpyBootstrap spy(bootstrap, [&](const uint8_t* table, size_t recordBytes) {
      if (rank != 0) return;
      // Each rank's record starts with its listener's address.
      sockaddr_storage target = net::decodeWireAddress(table + recordBytes, "test");
      auto deadline = net::Deadline::afterMs(5000);
      std::lock_guard lock(mutex);
      for (int i = 0; i < 3; ++i) {
        strangers.push_back(net::connectWithRetry(target, deadline, 5000, nullptr, "stranger"));
      }
      std::vector<uint8_t> junk(100, 0x17);
      ::send(strangers[0].fd(), junk.data(), junk.size(), MSG_NOSIGNAL);  // garbage
      // strangers[1] stalls; strangers[2] runs the handshake with a wrong secret.
      try {
        auth::authenticateClient(strangers[2].fd(), randomSecret(), auth::Purpose::SocketTransport,
                                 deadline, nullptr, "impostor");
      } catch (const Error& error) {
        impostorError = error.what();
      }
    });
    auto transport = createSocketTransport(spy, {1 - rank}, SocketOptions{2, 4096, 20000});
    Connection* connection = transport->connection(1 - rank);
    auto outgoing = messageBytes(rank, 1 - rank, 0, 10000);
    CheckingSink sink(10000);
    test::postSend(*connection, outgoing.data(), outgoing.size());
    connection->postRecv(10000, &sink);
    driveUntil({connection}, [&] { return connection->sendDone() && connection->recvDone(); });
    EXPECT_TRUE(sink.data() == messageBytes(1 - rank, rank, 0, 10000));
    bootstrap.barrier();
  });
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
  EXPECT_NE(impostorError.find("refused"), std::string::npos) << impostorError;
}

TEST(SocketTransport, ClosedPeerGivesAnErrorNotAHang) {
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createSocketTransport(bootstrap, {1 - rank}, SocketOptions{2, 4096, 20000});
    if (rank == 1) {
      transport.reset();  // goes away without a word
      bootstrap.barrier();
      return;
    }
    bootstrap.barrier();
    Connection* connection = transport->connection(1);
    CheckingSink sink(100);
    connection->postRecv(100, &sink);
    try {
      driveUntil(
          {connection}, [&] { return connection->recvDone(); }, std::chrono::seconds(10));
      ADD_FAILURE() << "receive from a closed peer completed";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomRemoteError);
      // The phrase shm and the direct engine use for a peer that left, with its pid.
      const std::string expected = "rank 1 (pid " + std::to_string(getpid()) +
                                   ") left the communicator (loomCommDestroy, loomCommAbort, or its process exited): "
                                   "it closed the connection: rank 0 receiving from peer rank 1 (socket)";
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  });
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createSocketTransport(bootstrap, {1 - rank}, SocketOptions{1, 4096, 20000});
    if (rank == 1) {
      transport.reset();
      bootstrap.barrier();
      return;
    }
    bootstrap.barrier();
    Connection* connection = transport->connection(1);
    std::vector<uint8_t> big(32 << 20, 1);  // more than the socket buffers hold
    test::postSend(*connection, big.data(), big.size());
    EXPECT_THROW(
        driveUntil(
            {connection}, [&] { return connection->sendDone(); }, std::chrono::seconds(10)),
        Error);
  });
}

// Calls throwPeerReport until it throws the peer's report (true) or `limit` passes (false).
// It never blocks, and a report travels on loopback at once; the bound only keeps a broken
// build from hanging.
bool peerReportArrives(Connection& connection, std::string& message, loomResult_t& code,
                       std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    try {
      connection.throwPeerReport();
    } catch (const ExplainedError& error) {
      message = error.what();
      code = error.code();
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// The executor looks for a peer's report on every connection once one breaks, also on a
// connection whose last receive completed: the frame that follows is read as a new header.
TEST(SocketTransport, PeerReportAfterACompletedReceiveIsFound) {
  for (size_t bytes : {size_t{100}, size_t{300000}}) {  // one lane; both lanes
    test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
      auto transport = createSocketTransport(bootstrap, {1 - rank}, SocketOptions{2, 64 * 1024, 20000});
      Connection* connection = transport->connection(1 - rank);
      auto outgoing = messageBytes(rank, 1 - rank, 0, bytes);
      CheckingSink sink(bytes);
      test::postSend(*connection, outgoing.data(), bytes);
      connection->postRecv(bytes, &sink);
      driveUntil({connection}, [&] { return connection->sendDone() && connection->recvDone(); });
      EXPECT_TRUE(sink.data() == messageBytes(1 - rank, rank, 0, bytes));
      bootstrap.barrier();
      if (rank == 1) transport->failAll(loomInvalidUsage, "rank 1 disagreed on purpose");
      bootstrap.barrier();
      if (rank == 1) return;
      std::string message;
      loomResult_t code = loomSuccess;
      ASSERT_TRUE(peerReportArrives(*connection, message, code)) << bytes << " bytes: no report found";
      EXPECT_EQ(code, loomInvalidUsage);
      EXPECT_NE(message.find("peer rank 1 failed: rank 1 disagreed on purpose"), std::string::npos) << message;
    });
  }
}

// A report found mid-message: throwPeerReport first discards the rest of the message, over
// several calls when it is still on its way, and must then read the report at the right place
// (the bytes it discarded count as received).
TEST(SocketTransport, PeerReportAfterADrainedMessageIsFound) {
  const size_t bytes = size_t{64} << 20;  // far more than the socket buffers hold unread
  std::atomic<bool> reported{false};
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createSocketTransport(bootstrap, {1 - rank}, SocketOptions{2, 64 * 1024, 20000});
    Connection* connection = transport->connection(1 - rank);
    if (rank == 1) {
      std::vector<uint8_t> outgoing(bytes, 7);
      test::postSend(*connection, outgoing.data(), bytes);
      while (connection->progress()) {
      }  // until the socket buffers are full
      EXPECT_FALSE(connection->sendDone());
      bootstrap.barrier();  // 1: rank 0 starts receiving
      bootstrap.barrier();  // 2: rank 0 has taken part of the message and started discarding
      driveUntil({connection}, [&] { return connection->sendDone(); });
      transport->failAll(loomRemoteError, "rank 1 gave up on purpose");
      reported = true;
      bootstrap.barrier();  // 3
      return;
    }
    // Only counts: the bytes are discarded anyway (and 64 MiB twice over buys nothing here).
    struct CountingSink final : RecvSink {
      size_t received = 0;
      void deliver(size_t, const void*, size_t n) override { received += n; }
    } sink;
    bootstrap.barrier();  // 1
    connection->postRecv(bytes, &sink);
    driveUntil({connection}, [&] { return sink.received > 0; });
    connection->throwPeerReport();  // discards what is here; the rest is still on its way
    bootstrap.barrier();  // 2
    std::string message;
    loomResult_t code = loomSuccess;
    const bool found = peerReportArrives(*connection, message, code, std::chrono::seconds(60));
    EXPECT_TRUE(reported.load());
    ASSERT_TRUE(found) << "no report found after the discarded message";
    EXPECT_EQ(code, loomRemoteError);
    EXPECT_NE(message.find("peer rank 1 failed: rank 1 gave up on purpose"), std::string::npos) << message;
    bootstrap.barrier();  // 3
  });
}

TEST(SocketTransport, MismatchedSocketCountsFailSetup) {
  std::vector<std::string> errors(2);
  test::runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    try {
      createSocketTransport(bootstrap, {1 - rank}, SocketOptions{rank == 0 ? 2 : 3, 4096, 3000});
    } catch (const Error& error) {
      errors[rank] = error.what();
    }
  });
  EXPECT_NE(errors[1].find("LOOM_SOCKET_NSOCKS must match"), std::string::npos) << errors[1];
}

TEST(SocketTransport, RejectsBadOptionsAndPeers) {
  test::runThreadRanks(1, [&](int, Bootstrap& bootstrap) {
    EXPECT_THROW(createSocketTransport(bootstrap, {}, SocketOptions{0, 4096, 1000}), Error);
    EXPECT_THROW(createSocketTransport(bootstrap, {}, SocketOptions{2, 100, 1000}), Error);
    EXPECT_THROW(createSocketTransport(bootstrap, {0}, SocketOptions{2, 4096, 1000}), Error);
    EXPECT_THROW(createSocketTransport(bootstrap, {5}, SocketOptions{2, 4096, 1000}), Error);
    auto empty = createSocketTransport(bootstrap, {}, SocketOptions{});
    EXPECT_THROW(empty->connection(0), Error);
  });
}

}  // namespace
}  // namespace loom::transport
