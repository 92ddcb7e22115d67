// SPDX-License-Identifier: Apache-2.0
// Rendezvous under hostile conditions, through the public API only:
//  - a rank holding a unique id whose secret bytes were altered fails to join with an error,
//    and the honest ranks, given a short timeout, fail cleanly too (nobody crashes or hangs);
//  - a rank knowing the address but the wrong secret (a well-formed id, so the root's
//    authentication is what stops it) is refused, and again everybody ends cleanly;
//  - strangers connecting to the root's pinned listener (garbage, silence, a huge length
//    prefix) do not stop 4 honest ranks from initialising and all-reducing within seconds.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <new>
#include <sys/mman.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/mp/collective_checks.h"
#include "tests/support/free_port.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The brief's assumed id layout: 8-byte magic+version, then the root address, then the 16-byte
// secret. Verified at run time below: the secret bytes are random, so two ids differ there.
constexpr size_t kAssumedSecretOffset = 40;

// A port nobody listens on right now (bind to port 0, read it back, close).
// The rank with the bad id/secret: refused by the root, or its id rejected outright.
bool isRefusal(loomResult_t rc) {
  return rc == loomRemoteError || rc == loomInvalidArgument || rc == loomSystemError;
}
// The honest ranks only see that the rendezvous never completes: any error but an internal one
// (which would be a bug) is a clean failure.
bool isCleanFailure(loomResult_t rc) { return isRefusal(rc) || rc == loomInvalidUsage; }

// One rank that is expected NOT to get a communicator: it must return an error (any of the
// clean codes, with a message) within `limitSeconds`.
void expectJoinFails(loomResult_t rc, loomComm_t comm, double elapsed, double limitSeconds,
                     bool isIntruder, const std::string& who) {
  if (rc == loomSuccess && comm != nullptr) loomCommDestroy(comm);
  LOOM_REQUIRE(rc != loomSuccess, who + " joined a communicator it must not be able to join");
  LOOM_REQUIRE(isIntruder ? isRefusal(rc) : isCleanFailure(rc),
               who + " failed with " + loomGetErrorString(rc));
  LOOM_REQUIRE(std::strlen(loomGetLastError(nullptr)) > 0, who + ": no error message");
  LOOM_REQUIRE(elapsed < limitSeconds, who + " took " + std::to_string(elapsed) + " s to fail");
  std::fprintf(stderr, "[%s] failed as expected after %.1f s: %s: %s\n", who.c_str(), elapsed,
               loomGetErrorString(rc), loomGetLastError(nullptr));
}

TEST(Security, AlteredSecretInUniqueIdFailsEveryRankCleanly) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  unsetenv("LOOM_COMM_ID");
  // The layout check runs in a child: root servers started here would be threads of this
  // process when the next test forks (see runRanksWithUniqueId).
  const auto layout = runProcesses(
      1,
      [&](int) {
        loomUniqueId ids[4];
        for (loomUniqueId& one : ids) {
          LOOM_REQUIRE(loomGetUniqueId(&one) == loomSuccess, loomGetLastError(nullptr));
        }
        std::string differing;
        for (size_t i = 0; i < LOOM_UNIQUE_ID_BYTES; ++i) {
          if (ids[0].internal[i] != ids[1].internal[i]) differing += std::to_string(i) + " ";
        }
        std::printf("bytes that differ between two unique ids: %s\n", differing.c_str());
        // Secret bytes are random: across four ids the byte must take more than one value (a
        // false alarm has probability 2^-24).
        bool varies = false;
        for (const loomUniqueId& one : ids) {
          varies = varies || one.internal[kAssumedSecretOffset] != ids[0].internal[kAssumedSecretOffset];
        }
        LOOM_REQUIRE(varies, "byte " + std::to_string(kAssumedSecretOffset) + " is not in the random part of the id");
        std::_Exit(0);  // skip the root servers' wait for ranks that never come
      },
      60);
  ASSERT_TRUE(layout[0].ok()) << layout[0].describe();

  constexpr int n = 3, kBadRank = 2;
  const auto outcomes = loom::test::runRanksWithUniqueId(
      n,
      [&](int rank, const loomUniqueId& id) {
        loomUniqueId altered = id;
        altered.internal[kAssumedSecretOffset] ^= 0x5a;
        loomConfig_t config = LOOM_CONFIG_INITIALIZER;
        config.timeoutMs = 3000;
        loomComm_t comm = nullptr;
        const auto start = Clock::now();
        const loomResult_t rc =
            loomCommInitRankConfig(&comm, n, rank == kBadRank ? altered : id, rank, &config);
        expectJoinFails(rc, comm, secondsSince(start), 20.0, rank == kBadRank,
                        "rank " + std::to_string(rank) + (rank == kBadRank ? " (altered id)" : ""));
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// Environment for an env-initialised rank of a job rendezvousing at 127.0.0.1:port.
void setJobEnvironment(int rank, int n, int port, const char* secretHex) {
  for (const char* name :
       {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
    unsetenv(name);
  }
  setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
  setenv("LOOM_WORLD_SIZE", std::to_string(n).c_str(), 1);
  setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  setenv("LOOM_COMM_SECRET", secretHex, 1);
}

constexpr const char* kSecret = "00112233445566778899aabbccddeeff";
constexpr const char* kWrongSecret = "00112233445566778899aabbccddeefe";

TEST(Security, WrongSecretIsRefusedAndNobodyHangs) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  constexpr int n = 4, kBadRank = 3;
  const auto outcomes = runProcesses(
      n,
      [&](int rank) {
        setJobEnvironment(rank, n, port, rank == kBadRank ? kWrongSecret : kSecret);
        setenv("LOOM_TIMEOUT_MS", "3000", 1);
        loomComm_t comm = nullptr;
        const auto start = Clock::now();
        const loomResult_t rc = loomCommInitFromEnv(&comm);
        expectJoinFails(
            rc, comm, secondsSince(start), 20.0, rank == kBadRank,
            "rank " + std::to_string(rank) + (rank == kBadRank ? " (wrong secret)" : ""));
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// A stranger: connects to 127.0.0.1:port as soon as something listens there, sends `payload`
// and keeps the connection open (silently) until told to stop.
class Stranger {
 public:
  // Connecting to a loopback port nobody listens on can, rarely, pick that very port as the
  // local one and connect to itself (TCP simultaneous open), stealing it from rank 0.
  static bool connectedToItself(int fd, int port) {
    sockaddr_in local{};
    socklen_t length = sizeof local;
    return getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
           ntohs(local.sin_port) == port;
  }

  Stranger(int port, std::vector<uint8_t> payload)
      : thread_([this, port, payload = std::move(payload)] { run(port, payload); }) {}
  ~Stranger() {
    stop_ = true;
    thread_.join();
  }
  bool connected() const { return connected_; }

 private:
  void run(int port, const std::vector<uint8_t>& payload) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    int fd = -1;
    while (!stop_ && Clock::now() < deadline) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(uint16_t(port));
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, ever
      if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
          !connectedToItself(fd, port)) {
        break;
      }
      close(fd);
      fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (fd < 0) return;
    connected_ = true;
    size_t sent = 0;
    while (sent < payload.size()) {
      const ssize_t k = send(fd, payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL);
      if (k <= 0) break;  // the root may rightly hang up on us
      sent += size_t(k);
    }
    while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    close(fd);
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> connected_{false};
  std::thread thread_;
};

TEST(Security, StrangersAtTheRootListenerDoNotBlockRendezvous) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  const std::vector<std::string> shmBefore = loomShmEntries();
  std::vector<uint8_t> garbage(4096);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = uint8_t(mix64(i));
  // The strangers start before the ranks: they connect the moment rank 0 listens, ahead of
  // the honest ranks (which wait 300 ms), so the root must serve the ranks past them. They
  // live in a child of their own (the last one): the parent starts no thread before
  // forking, since a thread inside malloc at fork time can leave a child's allocator locked.
  constexpr int n = 4;
  auto* ranksDone = static_cast<std::atomic<int>*>(
      mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(ranksDone, MAP_FAILED);
  new (ranksDone) std::atomic<int>(0);
  constexpr int kStrangerMissed = 3;
  const auto outcomes = runProcesses(
      n + 1,
      [&](int rank) {
        if (rank == n) {
          Stranger garbageSender(port, garbage);
          Stranger silent(port, {});
          Stranger hugeLength(port, std::vector<uint8_t>(16, 0xff));
          const auto deadline = Clock::now() + std::chrono::seconds(40);
          while (ranksDone->load() < n && Clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          const bool all = garbageSender.connected() && silent.connected() && hugeLength.connected();
          std::fflush(stdout);
          std::_Exit(all ? 0 : kStrangerMissed);
        }
        struct Done {
          std::atomic<int>* counter;
          ~Done() { counter->fetch_add(1); }
        } done{ranksDone};
        setJobEnvironment(rank, n, port, kSecret);
        setenv("LOOM_TIMEOUT_MS", "20000", 1);
        if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        loomComm_t comm = nullptr;
        const auto start = Clock::now();
        loomResult_t rc = loomCommInitFromEnv(&comm);
        const double elapsed = secondsSince(start);
        LOOM_REQUIRE(rc == loomSuccess, std::string("init: ") + loomGetErrorString(rc) + ": " +
                                            loomGetLastError(nullptr));
        LOOM_REQUIRE(elapsed < 8.0, "init took " + std::to_string(elapsed) + " s");
        constexpr size_t kCount = 4099;
        std::vector<int32_t> values(kCount), sums(kCount, -1);
        for (size_t i = 0; i < kCount; ++i) values[i] = int32_t(rank * 1000 + int(i));
        rc = loomAllReduce(values.data(), sums.data(), kCount, loomInt32, loomSum, comm, nullptr);
        LOOM_REQUIRE(rc == loomSuccess, std::string("allreduce: ") + loomGetLastError(comm));
        for (size_t i = 0; i < kCount; ++i) {
          LOOM_REQUIRE(sums[i] == int32_t(6000 + 4 * int(i)),
                       "allreduce element " + std::to_string(i));
        }
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
      },
      60);
  munmap(ranksDone, sizeof(std::atomic<int>));
  for (int rank = 0; rank < n; ++rank) EXPECT_TRUE(outcomes[rank].ok()) << outcomes[rank].describe();
  EXPECT_NE(outcomes[n].exitCode, kStrangerMissed)
      << "a stranger never reached the root listener: the test did not test anything";
  EXPECT_TRUE(outcomes[n].ok()) << "stranger process: " << outcomes[n].describe();
  EXPECT_EQ(leakedShmSegments(shmBefore), std::vector<std::string>{});
}

}  // namespace
}  // namespace loom::test
