// SPDX-License-Identifier: Apache-2.0
// loomCommInitRankStore: ranks that meet in a key-value store (here a directory, as PyTorch's
// FileStore; loom_torch passes c10d's store) instead of at a unique id's root. The data path
// afterwards is the ordinary one, so these tests check the rendezvous and its errors: exact
// results over shm and TCP, several communicators in one store, a split, a reused prefix, a
// missing rank, the reports while ranks are awaited (bounded look-ups), ranks that disagree on
// nranks, a failing store, bad structs, and an abort.
#include <gtest/gtest.h>
#include <loom.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/file_store.h"
#include "tests/support/multiprocess.h"
#include "tests/support/stderr_capture.h"

namespace {

using loom::test::FileStore;
using loom::test::StoreDirectory;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every rank contributes rank + 1 in every element: the sum is n(n+1)/2 everywhere.
void requireExactAllReduce(loomComm_t comm, int rank, int nranks, size_t count) {
  std::vector<int32_t> data(count, rank + 1);
  const loomResult_t result = loomAllReduce(data.data(), data.data(), count, loomInt32, loomSum, comm, nullptr);
  LOOM_REQUIRE(result == loomSuccess, loomGetLastError(comm));
  for (size_t i = 0; i < count; ++i) {
    LOOM_REQUIRE(data[i] == nranks * (nranks + 1) / 2, "element " + std::to_string(i) + " is " + std::to_string(data[i]));
  }
}

loomComm_t initOrThrow(int nranks, int rank, const FileStore& store, const char* prefix, int timeoutMs = 60000) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  loomComm_t comm = nullptr;
  const loomResult_t result = loomCommInitRankStore(&comm, nranks, rank, store.callbacks(), prefix, &config);
  LOOM_REQUIRE(result == loomSuccess, "rank " + std::to_string(rank) + ": " + loomGetLastError(nullptr));
  LOOM_REQUIRE(comm != nullptr, "no communicator");
  int size = 0, me = -1;
  LOOM_REQUIRE(loomCommCount(comm, &size) == loomSuccess && size == nranks, "wrong size");
  LOOM_REQUIRE(loomCommUserRank(comm, &me) == loomSuccess && me == rank, "wrong rank");
  return comm;
}

void expectAllOk(const std::vector<loom::test::RankOutcome>& outcomes) {
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(StoreInit, ProcessesMeetInAStoreAndAllReduceOverShmAndTcp) {
  for (const bool tcp : {false, true}) {
    for (const int nranks : {1, 2, 4}) {
      SCOPED_TRACE((tcp ? "tcp, " : "shm, ") + std::to_string(nranks) + " ranks");
      StoreDirectory directory("allreduce");
      expectAllOk(loom::test::runProcesses(nranks, [&](int rank) {
        setenv("LOOM_TRANSPORT", tcp ? "socket" : "shm", 1);
        FileStore store(directory.path());
        loomComm_t comm = initOrThrow(nranks, rank, store, "job/");
        requireExactAllReduce(comm, rank, nranks, 4097);
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
      }, 120));
    }
  }
}

// Whether an interface other than loopback and docker is up: without one, ranks on several
// hosts have nothing to listen on.
bool haveNonLoopbackInterface() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    const std::string name = entry->ifa_name;
    if (entry->ifa_addr != nullptr && entry->ifa_addr->sa_family == AF_INET && (entry->ifa_flags & IFF_UP) &&
        name.rfind("lo", 0) != 0 && name.rfind("docker", 0) != 0) {
      found = true;
    }
  }
  freeifaddrs(list);
  return found;
}

// Ranks that see different hosts (LOOM_HOSTID) cannot listen on loopback: with no
// LOOM_SOCKET_IFNAME they take NCCL's default interface, and TCP between them.
TEST(StoreInit, RanksOnSeveralHostsListenOnARealInterface) {
  if (!haveNonLoopbackInterface()) GTEST_SKIP() << "no interface other than loopback is up here";
  StoreDirectory directory("hosts");
  expectAllOk(loom::test::runProcesses(3, [&](int rank) {
    setenv("LOOM_HOSTID", ("host-" + std::to_string(rank)).c_str(), 1);
    unsetenv("LOOM_SOCKET_IFNAME");
    FileStore store(directory.path());
    loomComm_t comm = initOrThrow(3, rank, store, "hosts/");
    requireExactAllReduce(comm, rank, 3, 100003);
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 120));
}

TEST(StoreInit, OneStoreServesSeveralCommunicatorsAndSplits) {
  StoreDirectory directory("several");
  expectAllOk(loom::test::runProcesses(3, [&](int rank) {
    FileStore store(directory.path());
    loomComm_t first = initOrThrow(3, rank, store, "first/");
    loomComm_t second = initOrThrow(3, rank, store, "second/");
    requireExactAllReduce(first, rank, 3, 33);
    requireExactAllReduce(second, rank, 3, 65537);
    // A split of a store communicator meets through its parent, as any split does.
    loomComm_t half = nullptr;
    LOOM_REQUIRE(loomCommSplit(second, rank % 2, rank, &half, nullptr) == loomSuccess, loomGetLastError(second));
    requireExactAllReduce(half, rank / 2, rank % 2 == 0 ? 2 : 1, 7);
    LOOM_REQUIRE(loomCommDestroy(half) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomCommDestroy(second) == loomSuccess, loomGetLastError(nullptr));
    LOOM_REQUIRE(loomCommDestroy(first) == loomSuccess, loomGetLastError(nullptr));
  }, 120));
}

TEST(StoreInit, AReusedPrefixIsRefusedOnEveryRank) {
  StoreDirectory directory("reused");
  expectAllOk(loom::test::runProcesses(2, [&](int rank) {
    FileStore store(directory.path());
    loomComm_t comm = initOrThrow(2, rank, store, "pg0/");
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
  }, 60));
  expectAllOk(loom::test::runProcesses(2, [&](int rank) {
    FileStore store(directory.path());
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRankStore(&comm, 2, rank, store.callbacks(), "pg0/", nullptr);
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(result == loomInvalidUsage, "code " + std::to_string(result) + ": " + message);
    LOOM_REQUIRE(comm == nullptr, "comm must stay NULL on failure");
    LOOM_REQUIRE(message.find("'pg0/'") != std::string::npos && message.find("earlier communicator") != std::string::npos,
                 message);
  }, 60));
}

TEST(StoreInit, AMissingRankIsATimeoutThatNamesIt) {
  StoreDirectory directory("missing");
  FileStore store(directory.path());
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 1500;
  loomComm_t comm = nullptr;
  const auto start = std::chrono::steady_clock::now();
  const loomResult_t result = loomCommInitRankStore(&comm, 3, 0, store.callbacks(), "lonely/", &config);
  const double seconds = secondsSince(start);
  const std::string message = loomGetLastError(nullptr);
  EXPECT_EQ(result, loomSystemError) << message;
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(message.find("rank 1's host"), std::string::npos) << message;
  EXPECT_NE(message.find("lonely/loom/host/1"), std::string::npos) << message;
  EXPECT_NE(message.find("1500 ms"), std::string::npos) << message;
  EXPECT_NE(message.find("arrived 1 of 3: 0; missing: 1-2"), std::string::npos) << message;
  EXPECT_GE(seconds, 1.4);
  EXPECT_LT(seconds, 5.0);
}

// Rank 2 never comes: ranks 0 and 1 say, in their errors and (rank 0, whatever LOOM_DEBUG
// says) every LOOM_INIT_REPORT_MS while they wait, who has published a key and who has not.
TEST(StoreInit, WaitingRanksReportWhoHasArrived) {
  StoreDirectory directory("report");
  std::string log;
  std::vector<loom::test::RankOutcome> outcomes;
  {
    loom::test::StderrCapture capture;
    outcomes = loom::test::runProcesses(2, [&](int rank) {
      setenv("LOOM_INIT_REPORT_MS", "200", 1);
      FileStore store(directory.path());
      loomConfig_t config = LOOM_CONFIG_INITIALIZER;
      config.timeoutMs = 1500;
      loomComm_t comm = nullptr;
      const loomResult_t result = loomCommInitRankStore(&comm, 3, rank, store.callbacks(), "pg/", &config);
      const std::string message = loomGetLastError(nullptr);
      LOOM_REQUIRE(result == loomSystemError && comm == nullptr, message);
      LOOM_REQUIRE(message.find("rank 2's host") != std::string::npos, message);
      LOOM_REQUIRE(message.find("arrived 2 of 3: 0-1; missing: 2") != std::string::npos, message);
    }, 60);
    log = capture.text();
  }
  expectAllOk(outcomes);
  EXPECT_NE(log.find("rank 0: still waiting in the store for rank 2's host after"), std::string::npos) << log;
  EXPECT_NE(log.find("arrived 2 of 3: 0-1; missing: 2"), std::string::npos) << log;
}

// Ranks that come one at a time, each well within LOOM_INIT_REPORT_MS of the one before, but
// all of them over several intervals: rank 0 still reports while it waits (the interval runs
// for the whole rendezvous, not from each key it starts waiting for).
TEST(StoreInit, RanksArrivingOneAtATimeAreStillReported) {
  StoreDirectory directory("trickle");
  std::string log;
  std::vector<loom::test::RankOutcome> outcomes;
  {
    loom::test::StderrCapture capture;
    outcomes = loom::test::runProcesses(4, [&](int rank) {
      setenv("LOOM_INIT_REPORT_MS", "300", 1);
      // The scenario itself: rank r arrives 200 r ms after the others started.
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * rank));
      FileStore store(directory.path());
      loomComm_t comm = initOrThrow(4, rank, store, "trickle/");
      requireExactAllReduce(comm, rank, 4, 5);
      LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(nullptr));
    }, 60);
    log = capture.text();
  }
  expectAllOk(outcomes);
  EXPECT_NE(log.find("rank 0: still waiting in the store for rank "), std::string::npos) << log;
}

// A loomStore_t over a FileStore that counts the gets that do not wait (timeoutMs 0: the
// look-ups of who has arrived).
struct CountingStore {
  explicit CountingStore(const FileStore& file) : inner(*file.callbacks()) {
    callbacks = inner;
    callbacks.context = this;
    callbacks.set = [](void* self, const char* key, const void* value, size_t bytes) {
      const loomStore_t& store = static_cast<CountingStore*>(self)->inner;
      return store.set(store.context, key, value, bytes);
    };
    callbacks.get = [](void* self, const char* key, void* value, size_t capacity, size_t* length, int timeoutMs) {
      auto* counting = static_cast<CountingStore*>(self);
      if (timeoutMs == 0) ++counting->lookUps;
      return counting->inner.get(counting->inner.context, key, value, capacity, length, timeoutMs);
    };
    callbacks.add = [](void* self, const char* key, int64_t delta, int64_t* result) {
      const loomStore_t& store = static_cast<CountingStore*>(self)->inner;
      return store.add(store.context, key, delta, result);
    };
    callbacks.lastError = [](void* self) {
      const loomStore_t& store = static_cast<CountingStore*>(self)->inner;
      return store.lastError(store.context);
    };
  }
  loomStore_t inner;
  loomStore_t callbacks;
  int lookUps = 0;
};

// Rank 0 of a large job, alone: each report (every 200 ms) and the timeout look up at most 64 of
// the ranks it has not seen, not all 999 (a round trip to the store each), and say how many
// joined by the store's count.
TEST(StoreInit, AReportLooksUpAtMostSixtyFourMissingRanks) {
  StoreDirectory directory("large");
  expectAllOk(loom::test::runProcesses(1, [&](int) {
    setenv("LOOM_INIT_REPORT_MS", "200", 1);
    FileStore file(directory.path());
    CountingStore store(file);
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.timeoutMs = 1000;
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRankStore(&comm, 1000, 0, &store.callbacks, "large/", &config);
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(result == loomSystemError && comm == nullptr, message);
    const std::string summary =
        "arrived 1 of 1000 (the store's count); seen: 0; missing: 1-64; 935 more not looked up";
    LOOM_REQUIRE(message.find(summary) != std::string::npos, message);
    // At most 5 reports and the timeout's look-up.
    LOOM_REQUIRE(store.lookUps <= 6 * 64, std::to_string(store.lookUps) + " look-ups");
  }, 60));
}

TEST(StoreInit, RanksThatDisagreeOnNranksFail) {
  StoreDirectory directory("nranks");
  expectAllOk(loom::test::runProcesses(2, [&](int rank) {
    FileStore store(directory.path());
    loomConfig_t config = LOOM_CONFIG_INITIALIZER;
    config.timeoutMs = 2000;
    loomComm_t comm = nullptr;
    const int nranks = rank == 0 ? 2 : 3;
    const loomResult_t result = loomCommInitRankStore(&comm, nranks, rank, store.callbacks(), "pg/", &config);
    const std::string message = loomGetLastError(nullptr);
    LOOM_REQUIRE(result != loomSuccess && comm == nullptr, "rank " + std::to_string(rank) + " initialised");
    if (rank == 1) {
      LOOM_REQUIRE(result == loomInvalidUsage, message);
      LOOM_REQUIRE(message.find("rank 0 initialises a communicator of 2 ranks") != std::string::npos, message);
    } else {
      // Rank 1 arrived (its host key is there) but failed before it published its address.
      LOOM_REQUIRE(result == loomSystemError, message);
      LOOM_REQUIRE(message.find("rank 1 arrived but went no further") != std::string::npos, message);
    }
  }, 60));
}

// A store whose every call fails, as a store that lost its server would.
loomResult_t failingSet(void*, const char*, const void*, size_t) { return loomSystemError; }
loomResult_t failingGet(void*, const char*, void*, size_t, size_t*, int) { return loomSystemError; }
loomResult_t failingAdd(void*, const char*, int64_t, int64_t*) { return loomRemoteError; }
const char* failingReason(void*) { return "connection to the store server lost"; }

TEST(StoreInit, AFailingStoreIsNamedWithItsReason) {
  loomStore_t store{sizeof(loomStore_t), nullptr, failingSet, failingGet, failingAdd, failingReason};
  loomComm_t comm = nullptr;
  const loomResult_t result = loomCommInitRankStore(&comm, 2, 1, &store, "x/", nullptr);
  const std::string message = loomGetLastError(nullptr);
  EXPECT_EQ(result, loomRemoteError) << message;
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(message.find("store add of key 'x/loom/joined' failed"), std::string::npos) << message;
  EXPECT_NE(message.find("connection to the store server lost"), std::string::npos) << message;
}

TEST(StoreInit, BadArgumentsAreRefusedClearly) {
  StoreDirectory directory("arguments");
  FileStore good(directory.path());
  loomComm_t comm = reinterpret_cast<loomComm_t>(0x1);
  auto expectRefused = [&](const loomStore_t* store, int nranks, int rank, const std::string& mention) {
    comm = reinterpret_cast<loomComm_t>(0x1);
    const loomResult_t result = loomCommInitRankStore(&comm, nranks, rank, store, "p/", nullptr);
    const std::string message = loomGetLastError(nullptr);
    EXPECT_EQ(result, loomInvalidArgument) << message;
    EXPECT_NE(message.find(mention), std::string::npos) << message;
  };
  expectRefused(nullptr, 2, 0, "store is NULL");
  loomStore_t small = *good.callbacks();
  small.size = 8;
  expectRefused(&small, 2, 0, "store->size is 8");
  loomStore_t noGet = *good.callbacks();
  noGet.get = nullptr;
  expectRefused(&noGet, 2, 0, "store->get is NULL");
  expectRefused(good.callbacks(), 2, 2, "rank 2 is not in [0, 2)");
  expectRefused(good.callbacks(), 0, 0, "nranks 0");
  EXPECT_EQ(loomCommInitRankStore(nullptr, 1, 0, good.callbacks(), "p/", nullptr), loomInvalidArgument);
}

TEST(StoreInit, AbortStopsANonBlockingInitThatWaitsInTheStore) {
  StoreDirectory directory("abort");
  FileStore store(directory.path());
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.timeoutMs = 60000;
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitRankStore(&comm, 2, 1, store.callbacks(), "waiting/", &config), loomInProgress)
      << loomGetLastError(nullptr);
  ASSERT_NE(comm, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it waits for rank 0's secret
  loomResult_t state = loomSuccess;
  ASSERT_EQ(loomCommGetAsyncError(comm, &state), loomSuccess);
  EXPECT_EQ(state, loomInProgress);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(loomCommAbort(comm), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_LT(secondsSince(start), 3.0) << "abort waited for the store's slice to end, and more";
}

}  // namespace
