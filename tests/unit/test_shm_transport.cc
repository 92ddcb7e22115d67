// SPDX-License-Identifier: Apache-2.0
// Shared-memory transport: data integrity over every slot boundary, rings of ranks on an
// oversubscribed machine, name and mapping hygiene, configuration errors, and a real second
// process mapping the segments.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "tests/support/post_send.h"
#include "tests/support/thread_bootstrap.h"
#include "transport/shm/shm_transport.h"

namespace loom::transport {
namespace {

using Clock = std::chrono::steady_clock;
using loom::test::runThreadRanks;
constexpr size_t kMiB = 1024 * 1024;

std::string uniquePrefix(const char* tag) {
  static std::atomic<int> counter{0};
  return "loomtest-" + std::to_string(getpid()) + "-" + tag + "-" + std::to_string(counter++);
}

ShmOptions smallOptions(const std::string& prefix) {
  ShmOptions options;
  options.slotBytes = 4096;
  options.slotCount = 4;
  options.namePrefix = prefix;
  return options;
}

// Names in /dev/shm, and lines of /proc/self/maps, that contain `prefix`.
int shmNamesWith(const std::string& prefix) {
  int found = 0;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  while (dirent* entry = readdir(dir)) {
    if (std::string(entry->d_name).find(prefix) != std::string::npos) ++found;
  }
  closedir(dir);
  return found;
}
int mappingsWith(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  int found = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find(prefix) != std::string::npos) ++found;
  }
  return found;
}

uint8_t patternByte(int sender, uint64_t message, size_t offset) {
  return static_cast<uint8_t>(((offset * 2654435761u) >> 13) ^ (offset >> 4) ^ (message * 97) ^
                              (sender * 53));
}
std::vector<char> pattern(int sender, uint64_t message, size_t bytes) {
  std::vector<char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(patternByte(sender, message, i));
  return data;
}
// Index of the first wrong byte, or -1.
long firstMismatch(const std::vector<char>& data, int sender, uint64_t message) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (static_cast<uint8_t>(data[i]) != patternByte(sender, message, i)) return long(i);
  }
  return -1;
}

// Copies pieces into a buffer and checks the RecvSink contract (16-byte aligned offsets,
// in bounds, no byte twice).
class BufferSink final : public RecvSink {
 public:
  explicit BufferSink(size_t bytes) : data(bytes), seen_(bytes, false) {}
  void deliver(size_t offset, const void* piece, size_t bytes) override {
    if (offset % 16 != 0 || bytes == 0 || offset + bytes > data.size()) {
      throw std::runtime_error("bad piece at " + std::to_string(offset) + " + " +
                               std::to_string(bytes));
    }
    for (size_t i = offset; i < offset + bytes; ++i) {
      if (seen_[i]) throw std::runtime_error("byte delivered twice: " + std::to_string(i));
      seen_[i] = true;
    }
    std::memcpy(data.data() + offset, piece, bytes);
    delivered += bytes;
  }
  std::vector<char> data;
  size_t delivered = 0;

 private:
  std::vector<bool> seen_;
};

// The executor's job in miniature: progress everything, and when nothing moves spin a little,
// yield, then sleep on the wait set (our doorbell, which the connections offer as their bell).
// The sleep returns at once when a connection is ready to progress once the sleeper is
// registered, so a ring that found nobody asleep is never missed.
void driveUntilDone(const std::vector<Connection*>& connections) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  WaitSet waits;
  std::vector<const Connection*> waiting(connections.begin(), connections.end());
  int idle = 0;
  for (;;) {
    bool moved = false;
    bool done = true;
    for (Connection* connection : connections) {
      moved |= connection->progress();
      done = done && connection->sendDone() && connection->recvDone();
    }
    if (done) {
      for (Connection* connection : connections) connection->flushWakeup();
      return;
    }
    if (moved) {
      idle = 0;
      continue;
    }
    if (++idle < 32) continue;
    for (Connection* connection : connections) connection->flushWakeup();  // before yield or sleep
    if (idle < 64) {
      sched_yield();
    } else {
      waits.sleep(waiting, 2000);
    }
    if (Clock::now() > deadline) throw std::runtime_error("shm test: no progress for 30 s");
  }
}

// Sends `bytes` of the pattern to `peer` while receiving `bytes` from it; returns what came.
std::vector<char> exchange(Transport& transport, int rank, int peer, uint64_t message,
                           size_t bytes) {
  Connection* connection = transport.connection(peer);
  const std::vector<char> out = pattern(rank, message, bytes);
  BufferSink sink(bytes);
  test::postSend(*connection, out.data(), bytes);
  connection->postRecv(bytes, &sink);
  driveUntilDone({connection});
  EXPECT_EQ(sink.delivered, bytes);
  return std::move(sink.data);
}

std::vector<size_t> boundarySizes(size_t slotBytes) {
  return {1, 15, 16, 17, slotBytes - 1, slotBytes, slotBytes + 1, 10 * slotBytes + 7, 3 * kMiB};
}

void pingPongAllSizes(const ShmOptions& options) {
  runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    const int peer = 1 - rank;
    auto transport = createShmTransport(bootstrap, {peer}, options);
    uint64_t message = 0;
    for (size_t bytes : boundarySizes(options.slotBytes)) {
      // Both directions at once: neither side may wait for the other to drain first.
      std::vector<char> got = exchange(*transport, rank, peer, message, bytes);
      EXPECT_EQ(firstMismatch(got, peer, message), -1) << "exchange of " << bytes << " bytes";
      ++message;
      // Ping-pong: rank 0 sends, rank 1 echoes what it got.
      Connection* connection = transport->connection(peer);
      if (rank == 0) {
        const std::vector<char> out = pattern(0, message, bytes);
        BufferSink echo(bytes);
        test::postSend(*connection, out.data(), bytes);
        connection->postRecv(bytes, &echo);
        driveUntilDone({connection});
        EXPECT_EQ(firstMismatch(echo.data, 0, message), -1) << "echo of " << bytes << " bytes";
      } else {
        BufferSink ping(bytes);
        connection->postRecv(bytes, &ping);
        driveUntilDone({connection});
        test::postSend(*connection, ping.data.data(), bytes);
        driveUntilDone({connection});
      }
      ++message;
    }
  });
}

TEST(ShmTransport, PingPongEverySlotBoundarySmallSlots) {
  pingPongAllSizes(smallOptions(uniquePrefix("pp4k")));
}

TEST(ShmTransport, PingPongEverySlotBoundaryDefaultGeometry) {
  ShmOptions options;
  options.namePrefix = uniquePrefix("ppdef");
  pingPongAllSizes(options);
}

// Each rank sends to its right neighbour while receiving from its left one; message sizes are
// random but reproducible from the sender's rank, so the receiver knows them.
void ringOfRanks(int nranks, int messages, size_t maxBytes, const ShmOptions& options) {
  runThreadRanks(nranks, [&](int rank, Bootstrap& bootstrap) {
    const int right = (rank + 1) % nranks;
    const int left = (rank + nranks - 1) % nranks;
    std::vector<int> peers = {right};
    if (left != right) peers.push_back(left);
    auto transport = createShmTransport(bootstrap, peers, options);
    std::mt19937_64 mySizes(rank), leftSizes(left);
    std::uniform_int_distribution<size_t> size(1, maxBytes);
    Connection* toRight = transport->connection(right);
    Connection* fromLeft = transport->connection(left);
    for (int message = 0; message < messages; ++message) {
      const std::vector<char> out = pattern(rank, message, size(mySizes));
      BufferSink sink(size(leftSizes));
      test::postSend(*toRight, out.data(), out.size());
      fromLeft->postRecv(sink.data.size(), &sink);
      driveUntilDone({toRight, fromLeft});
      ASSERT_EQ(firstMismatch(sink.data, left, message), -1)
          << "rank " << rank << " message " << message << " of " << sink.data.size() << " bytes";
    }
  });
}

TEST(ShmTransport, RingOfFiveRandomSizes) {
  ringOfRanks(5, 300, 40000, smallOptions(uniquePrefix("ring5")));
}

TEST(ShmTransport, RingOfEightOnFewCoresFinishesQuickly) {
  const auto start = Clock::now();
  ringOfRanks(8, 300, 20000, smallOptions(uniquePrefix("ring8")));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 15.0) << "8 ranks should share the cores by sleeping on doorbells";
}

TEST(ShmTransport, NoNamesLeftAfterSetupAndNoMappingsAfterDestruction) {
  const std::string prefix = uniquePrefix("hygiene");
  const int nranks = 3;
  runThreadRanks(nranks, [&](int rank, Bootstrap& bootstrap) {
    std::vector<int> peers;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer != rank) peers.push_back(peer);
    }
    auto transport = createShmTransport(bootstrap, peers, smallOptions(prefix));
    bootstrap.barrier();  // every rank has returned from setup
    EXPECT_EQ(shmNamesWith(prefix), 0);
    // 3 ranks x (1 doorbell + 2 incoming FIFOs + 2 outgoing FIFOs + 2 peer doorbells).
    EXPECT_EQ(mappingsWith(prefix), nranks * 7);
    // Traffic both ways round the ring, so every FIFO carries a message before teardown.
    for (int step : {1, nranks - 1}) {
      const int to = (rank + step) % nranks;
      const int from = (rank + nranks - step) % nranks;
      const std::vector<char> out = pattern(rank, step, 100);
      BufferSink sink(100);
      test::postSend(*transport->connection(to), out.data(), out.size());
      transport->connection(from)->postRecv(100, &sink);
      driveUntilDone({transport->connection(to), transport->connection(from)});
      EXPECT_EQ(firstMismatch(sink.data, from, step), -1);
    }
    bootstrap.barrier();
    transport.reset();
    bootstrap.barrier();
    EXPECT_EQ(mappingsWith(prefix), 0);
  });
  EXPECT_EQ(shmNamesWith(prefix), 0);
}

TEST(ShmTransport, EmptyPeerListsAreFine) {
  const ShmOptions options = smallOptions(uniquePrefix("empty"));
  runThreadRanks(3, [&](int rank, Bootstrap& bootstrap) {
    const std::vector<int> peers = rank == 2 ? std::vector<int>{} : std::vector<int>{1 - rank};
    auto transport = createShmTransport(bootstrap, peers, options);
    if (rank == 2) {
      EXPECT_THROW(transport->connection(0), Error);
      WaitSet().sleep({}, 10);  // nothing to wait on: returns at once
    } else {
      EXPECT_EQ(firstMismatch(exchange(*transport, rank, 1 - rank, 0, 5000), 1 - rank, 0), -1);
    }
  });
}

// Runs setup on every rank with per-rank options and returns each rank's error code
// (loomSuccess if it succeeded).
std::vector<loomResult_t> setupResults(int nranks, const std::function<ShmOptions(int)>& options,
                                       std::vector<std::string>* messages = nullptr) {
  std::vector<loomResult_t> results(nranks, loomSuccess);
  std::vector<std::string> texts(nranks);
  runThreadRanks(nranks, [&](int rank, Bootstrap& bootstrap) {
    std::vector<int> peers;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer != rank) peers.push_back(peer);
    }
    try {
      createShmTransport(bootstrap, peers, options(rank));
    } catch (const Error& error) {
      results[rank] = error.code();
      texts[rank] = error.what();
    }
  });
  if (messages != nullptr) *messages = texts;
  return results;
}

TEST(ShmTransport, GeometryMismatchIsAnErrorOnBothSides) {
  const std::string prefix = uniquePrefix("geometry");
  std::vector<std::string> messages;
  auto results = setupResults(
      2,
      [&](int rank) {
        ShmOptions options = smallOptions(prefix);
        options.slotBytes = rank == 0 ? 4096 : 8192;
        return options;
      },
      &messages);
  EXPECT_EQ(results[0], loomInvalidUsage);
  EXPECT_EQ(results[1], loomInvalidUsage);
  EXPECT_NE(messages[0].find("disagree"), std::string::npos) << messages[0];
  EXPECT_EQ(shmNamesWith(prefix), 0);
  EXPECT_EQ(mappingsWith(prefix), 0);

  const std::string countPrefix = uniquePrefix("geometry-count");
  results = setupResults(2, [&](int rank) {
    ShmOptions options = smallOptions(countPrefix);
    options.slotCount = rank == 0 ? 4 : 5;
    return options;
  });
  EXPECT_EQ(results[0], loomInvalidUsage);
  EXPECT_EQ(results[1], loomInvalidUsage);
  EXPECT_EQ(shmNamesWith(countPrefix), 0);
}

TEST(ShmTransport, BadOptionsAreArgumentErrorsOnEveryRank) {
  for (size_t slotBytes : {size_t{0}, size_t{100}, size_t{32}}) {
    const std::string prefix = uniquePrefix("badslot");
    auto results = setupResults(2, [&](int) {
      ShmOptions options = smallOptions(prefix);
      options.slotBytes = slotBytes;
      return options;
    });
    EXPECT_EQ(results[0], loomInvalidArgument) << slotBytes;
    EXPECT_EQ(results[1], loomInvalidArgument) << slotBytes;
  }
  auto results = setupResults(2, [&](int) {
    ShmOptions options = smallOptions("has/slash");
    return options;
  });
  EXPECT_EQ(results[0], loomInvalidArgument);
  // A rank listing itself fails; its peer learns that it published no segments: a remote error.
  const ShmOptions selfOptions = smallOptions(uniquePrefix("self"));
  runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    try {
      createShmTransport(bootstrap, {0}, selfOptions);
      ADD_FAILURE() << "rank " << rank << " should fail";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), rank == 0 ? loomInvalidArgument : loomRemoteError) << error.what();
    }
  });
}

// Segments are anonymous memory (issue 14, finding 4): a file a crashed run (or a stranger)
// left in /dev/shm under a name Loom used to make cannot get in the way, and stays untouched.
TEST(ShmTransport, StaleNameInDevShmIsIrrelevant) {
  const std::string prefix = uniquePrefix("stale");
  const std::string staleName = "/" + prefix + "-b0";
  int fd = shm_open(staleName.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  std::vector<std::string> messages;
  auto results = setupResults(
      2, [&](int) { return smallOptions(prefix); }, &messages);
  EXPECT_EQ(results[0], loomSuccess) << messages[0];
  EXPECT_EQ(results[1], loomSuccess) << messages[1];
  EXPECT_EQ(shmNamesWith(prefix), 1);  // only the stranger's file
  shm_unlink(staleName.c_str());
}

TEST(ShmTransport, UsageErrors) {
  const ShmOptions options = smallOptions(uniquePrefix("usage"));
  runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createShmTransport(bootstrap, {1 - rank}, options);
    Connection* connection = transport->connection(1 - rank);
    EXPECT_STREQ(connection->kind(), "shm");
    EXPECT_EQ(connection->peer(), 1 - rank);
    EXPECT_TRUE(connection->sendDone());
    EXPECT_TRUE(connection->recvDone());
    EXPECT_FALSE(connection->progress());
    char byte = 1;
    BufferSink sink(1);
    try {
      test::postSend(*connection, &byte, 0);
      ADD_FAILURE() << "zero-byte send accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
    }
    try {
      connection->postRecv(0, &sink);
      ADD_FAILURE() << "zero-byte receive accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
    }
    test::postSend(*connection, &byte, 1);
    try {
      test::postSend(*connection, &byte, 1);
      ADD_FAILURE() << "second send in flight accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
    }
    connection->postRecv(1, &sink);
    try {
      connection->postRecv(1, &sink);
      ADD_FAILURE() << "second receive in flight accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
    }
    driveUntilDone({connection});
    EXPECT_EQ(sink.data[0], 1);
    try {
      transport->connection(rank);
      ADD_FAILURE() << "connection to self";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
    }
  });
}

TEST(ShmTransport, SizeDisagreementIsARemoteErrorNamingThePeer) {
  const ShmOptions options = smallOptions(uniquePrefix("size"));
  runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createShmTransport(bootstrap, {1 - rank}, options);
    Connection* connection = transport->connection(1 - rank);
    if (rank == 0) {
      std::vector<char> out(100, 7);
      test::postSend(*connection, out.data(), out.size());
      driveUntilDone({connection});  // done once handed over
    } else {
      BufferSink sink(200);
      connection->postRecv(200, &sink);
      try {
        driveUntilDone({connection});
        ADD_FAILURE() << "a 100-byte message was taken for a 200-byte one";
      } catch (const Error& error) {
        EXPECT_EQ(error.code(), loomRemoteError);
        EXPECT_NE(std::string(error.what()).find("peer 0"), std::string::npos) << error.what();
      }
    }
    bootstrap.barrier();
  });
}

// The executor looks for a peer's report on every connection once one breaks, also on a
// connection whose last receive completed: the report in the FIFO's next slot is read.
TEST(ShmTransport, PeerReportAfterACompletedReceiveIsFound) {
  const ShmOptions options = smallOptions(uniquePrefix("report"));
  runThreadRanks(2, [&](int rank, Bootstrap& bootstrap) {
    auto transport = createShmTransport(bootstrap, {1 - rank}, options);
    Connection* connection = transport->connection(1 - rank);
    std::vector<char> got = exchange(*transport, rank, 1 - rank, 0, 5000);  // two slots
    EXPECT_EQ(firstMismatch(got, 1 - rank, 0), -1);
    bootstrap.barrier();
    if (rank == 1) transport->failAll(loomInvalidUsage, "rank 1 disagreed on purpose");
    bootstrap.barrier();  // the report is in rank 0's FIFO now
    if (rank == 1) return;
    try {
      connection->throwPeerReport();
      ADD_FAILURE() << "no report found after a completed receive";
    } catch (const ExplainedError& error) {
      EXPECT_EQ(error.code(), loomInvalidUsage);
      EXPECT_NE(std::string(error.what()).find("peer rank 1 failed: rank 1 disagreed on purpose"), std::string::npos)
          << error.what();
    }
  });
}

// ---- A second process ---------------------------------------------------------------------
// Bootstrap for two processes over one socketpair: each rank writes its block, then reads the
// other's. A receive timeout turns a dead peer into an error instead of a hang.
class PairBootstrap final : public Bootstrap {
 public:
  PairBootstrap(int rank, int fd) : rank_(rank), fd_(fd) {
    timeval timeout{20, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void allGather(void* data, size_t bytesPerRank) override {
    char* blocks = static_cast<char*>(data);
    for (size_t done = 0; done < bytesPerRank;) {
      ssize_t n = write(fd_, blocks + rank_ * bytesPerRank + done, bytesPerRank - done);
      if (n <= 0) throwSystem("pair bootstrap write");
      done += size_t(n);
    }
    for (size_t done = 0; done < bytesPerRank;) {
      ssize_t n = read(fd_, blocks + (1 - rank_) * bytesPerRank + done, bytesPerRank - done);
      if (n <= 0) throwRemote("pair bootstrap: peer gone");
      done += size_t(n);
    }
  }
  void barrier() override {
    char scratch[2] = {};
    allGather(scratch, 1);
  }
  const Secret& secret() const override { return secret_; }
  uint64_t commUid() const override { return 1; }
  sockaddr_storage localAddress() const override { return {}; }

 private:
  int rank_;
  int fd_;
  Secret secret_{};
};

// What both processes run; throws on any wrong byte.
void crossProcessBody(int rank, Bootstrap& bootstrap, const std::string& prefix) {
  const int peer = 1 - rank;
  auto transport = createShmTransport(bootstrap, {peer}, smallOptions(prefix));
  bootstrap.barrier();
  if (shmNamesWith(prefix) != 0) throw std::runtime_error("names left in /dev/shm");
  uint64_t message = 0;
  for (size_t bytes : boundarySizes(4096)) {
    std::vector<char> got = exchange(*transport, rank, peer, message, bytes);
    if (firstMismatch(got, peer, message) != -1) {
      throw std::runtime_error("wrong bytes in a message of " + std::to_string(bytes));
    }
    ++message;
  }
  bootstrap.barrier();
}

TEST(ShmTransport, TwoProcessesExchangeThroughMappedSegments) {
  const std::string prefix = uniquePrefix("fork");
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    alarm(60);  // never outlive a broken parent
    int status = 0;
    try {
      PairBootstrap bootstrap(1, fds[1]);
      crossProcessBody(1, bootstrap, prefix);
    } catch (const std::exception& error) {
      fprintf(stderr, "child: %s\n", error.what());
      status = 1;
    }
    _exit(status);
  }
  close(fds[1]);
  try {
    PairBootstrap bootstrap(0, fds[0]);
    crossProcessBody(0, bootstrap, prefix);
  } catch (const std::exception& error) {
    ADD_FAILURE() << "parent: " << error.what();
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(shmNamesWith(prefix), 0);
}

}  // namespace
}  // namespace loom::transport
