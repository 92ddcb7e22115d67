// SPDX-License-Identifier: Apache-2.0
// Communicator inits inside loomGroupStart/End, as NCCL allows: one thread makes several ranks
// of one communicator, blocking (End waits) or non-blocking (End returns loomInProgress); a group
// that mixes inits with calls, or blocking with non-blocking configs, is refused and its inits
// fail; splits are queued the same way; loomCommInitRankScalable meets at the first id; an id made
// with LOOM_UNIQUE_ID_ROOT_AT_INIT starts no root until rank 0 inits; loomGroupSimulateEnd ends a
// group without running it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/support/free_port.h"

namespace {

loomConfig_t configOf(int blocking) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.blocking = blocking;
  return config;
}

// Waits (bounded) for a non-blocking init to finish; its final state.
loomResult_t settle(loomComm_t comm) {
  loomResult_t state = loomInProgress;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (state == loomInProgress && std::chrono::steady_clock::now() < deadline) {
    if (loomCommGetAsyncError(comm, &state) != loomSuccess) return loomInternalError;
    if (state == loomInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// An all-reduce over `comms` (all driven from this thread, in one group): rank r gives r + 1.
void expectAllReduce(const std::vector<loomComm_t>& comms, int nranks) {
  std::vector<std::vector<int>> data(comms.size(), std::vector<int>(1001));
  for (size_t i = 0; i < comms.size(); ++i) {
    int rank = -1;
    ASSERT_EQ(loomCommUserRank(comms[i], &rank), loomSuccess);
    for (int& value : data[i]) value = rank + 1;
  }
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (size_t i = 0; i < comms.size(); ++i) {
    ASSERT_EQ(loomAllReduce(data[i].data(), data[i].data(), data[i].size(), loomInt32, loomSum, comms[i], nullptr),
              loomSuccess);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  for (const auto& values : data) {
    for (int value : values) ASSERT_EQ(value, nranks * (nranks + 1) / 2);
  }
}

// This thread makes `ranks` of an nranks communicator in one group.
std::vector<loomComm_t> initInGroup(const loomUniqueId& id, int nranks, const std::vector<int>& ranks, int blocking,
                                    loomResult_t* ended) {
  std::vector<loomComm_t> comms(ranks.size(), nullptr);
  loomConfig_t config = configOf(blocking);
  EXPECT_EQ(loomGroupStart(), loomSuccess);
  for (size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(loomCommInitRankConfig(&comms[i], nranks, id, ranks[i], &config), loomSuccess) << loomGetLastError(nullptr);
    EXPECT_NE(comms[i], nullptr);  // the handle exists at once
  }
  *ended = loomGroupEnd();
  return comms;
}

void destroyAll(const std::vector<loomComm_t>& comms) {
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(GroupInit, OneThreadMakesTwoRanksBlocking) {
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  loomResult_t ended = loomInternalError;
  const std::vector<loomComm_t> comms = initInGroup(id, 2, {0, 1}, 1, &ended);
  ASSERT_EQ(ended, loomSuccess) << loomGetLastError(nullptr);
  for (loomComm_t comm : comms) EXPECT_EQ(settle(comm), loomSuccess);
  expectAllReduce(comms, 2);
  destroyAll(comms);
}

TEST(GroupInit, TwoThreadsMakeTwoRanksEachNonBlocking) {
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  std::vector<loomComm_t> upper;
  loomResult_t upperEnded = loomInternalError;
  std::thread other([&] { upper = initInGroup(id, 4, {2, 3}, 0, &upperEnded); });
  loomResult_t ended = loomInternalError;
  const std::vector<loomComm_t> lower = initInGroup(id, 4, {0, 1}, 0, &ended);
  other.join();
  EXPECT_EQ(ended, loomInProgress);
  EXPECT_EQ(upperEnded, loomInProgress);
  for (loomComm_t comm : lower) ASSERT_EQ(settle(comm), loomSuccess) << loomGetLastError(comm);
  for (loomComm_t comm : upper) ASSERT_EQ(settle(comm), loomSuccess) << loomGetLastError(comm);
  std::thread upperRun([&] { expectAllReduce(upper, 4); });
  expectAllReduce(lower, 4);
  upperRun.join();
  destroyAll(lower);
  destroyAll(upper);
}

TEST(GroupInit, InitsMixedWithCallsAreRefused) {
  loomComm_t single = nullptr;
  ASSERT_EQ(loomCommInitAll(&single, 1, nullptr), loomSuccess);
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  int value = 1;
  loomComm_t pending = nullptr;
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomCommInitRank(&pending, 1, id, 0), loomSuccess);
  ASSERT_EQ(loomAllReduce(&value, &value, 1, loomInt32, loomSum, single, nullptr), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("mixes 1 communicator init with 1 other calls"),
            std::string::npos)
      << loomGetLastError(nullptr);
  loomResult_t state = loomSuccess;
  ASSERT_EQ(loomCommGetAsyncError(pending, &state), loomSuccess);
  EXPECT_EQ(state, loomInvalidUsage);  // failed, not left in progress
  EXPECT_EQ(loomCommDestroy(pending), loomSuccess);
  EXPECT_EQ(loomCommDestroy(single), loomSuccess);
}

TEST(GroupInit, BlockingMixedWithNonBlockingIsRefused) {
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  loomConfig_t blocking = configOf(1);
  loomConfig_t nonBlocking = configOf(0);
  loomComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomCommInitRankConfig(&comms[0], 2, id, 0, &blocking), loomSuccess);
  ASSERT_EQ(loomCommInitRankConfig(&comms[1], 2, id, 1, &nonBlocking), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("blocking and non-blocking"), std::string::npos);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(GroupInit, SplitsAreQueuedToo) {
  loomComm_t parents[4];
  ASSERT_EQ(loomCommInitAll(parents, 4, nullptr), loomSuccess);
  loomComm_t children[4] = {nullptr, nullptr, nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_EQ(loomCommSplit(parents[rank], rank % 2, -rank, &children[rank], nullptr), loomSuccess);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  for (int rank = 0; rank < 4; ++rank) {
    int size = 0;
    int childRank = -1;
    ASSERT_EQ(loomCommCount(children[rank], &size), loomSuccess);
    ASSERT_EQ(loomCommUserRank(children[rank], &childRank), loomSuccess);
    EXPECT_EQ(size, 2);
    EXPECT_EQ(childRank, rank / 2 == 0 ? 1 : 0);  // key -rank: the higher parent rank first
  }
  expectAllReduce({children[0], children[2]}, 2);
  for (loomComm_t comm : children) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  for (loomComm_t comm : parents) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

TEST(GroupInit, ScalableMeetsAtTheFirstIdAndStopsTheOthers) {
  loomUniqueId ids[3];
  for (loomUniqueId& id : ids) ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  loomComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(loomCommInitRankScalable(&comms[rank], 2, rank, 3, ids, nullptr), loomSuccess)
        << loomGetLastError(nullptr);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  expectAllReduce({comms[0], comms[1]}, 2);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  // The roots of ids 1 and 2 were stopped: an init on one of them finds no rendezvous.
  setenv("LOOM_TIMEOUT_MS", "3000", 1);
  loomComm_t late = nullptr;
  EXPECT_NE(loomCommInitRank(&late, 2, ids[1], 1), loomSuccess);
  unsetenv("LOOM_TIMEOUT_MS");
  loomComm_t none = nullptr;
  EXPECT_EQ(loomCommInitRankScalable(&none, 2, 0, 0, ids, nullptr), loomInvalidArgument);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("nId 0"), std::string::npos);
}

bool listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return connected;
}

TEST(GroupInit, RootAtInitStartsWithRankZero) {
  const int port = loom::test::freePortBelowEphemeralRange();
  setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  setenv("LOOM_COMM_SECRET", "00112233445566778899aabbccddeeff", 1);
  loomUniqueId first;
  loomUniqueId second;
  ASSERT_EQ(loomGetUniqueIdFlags(&first, LOOM_UNIQUE_ID_ROOT_AT_INIT), loomSuccess) << loomGetLastError(nullptr);
  EXPECT_FALSE(listening(port));  // no root yet: rank 0 starts it
  EXPECT_EQ(loomGetUniqueIdFlags(&second, 7), loomInvalidArgument);
  loomResult_t ended = loomInternalError;
  const std::vector<loomComm_t> comms = initInGroup(first, 2, {1, 0}, 1, &ended);  // rank 1 comes first
  ASSERT_EQ(ended, loomSuccess) << loomGetLastError(nullptr);
  expectAllReduce(comms, 2);
  destroyAll(comms);
  unsetenv("LOOM_COMM_ID");
  unsetenv("LOOM_COMM_SECRET");
}

// A destroy (or abort) of an init still queued in its group returns at once (it used to wait the
// whole timeout for an init that only the group's end, on this thread, could run).
TEST(GroupInit, DestroyOfAQueuedInitReturnsAtOnce) {
  setenv("LOOM_TIMEOUT_MS", "20000", 1);
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess);
  loomComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomCommInitRank(&comms[0], 2, id, 0), loomSuccess);
  ASSERT_EQ(loomCommInitRank(&comms[1], 2, id, 1), loomSuccess);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(loomCommDestroy(comms[0]), loomSuccess);
  EXPECT_EQ(loomCommAbort(comms[1]), loomSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("destroyed or aborted before its group ended"),
            std::string::npos)
      << loomGetLastError(nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  unsetenv("LOOM_TIMEOUT_MS");
}

// The same id twice: the root everyone meets at is not stopped as "another" id.
TEST(GroupInit, ScalableWithARepeatedFirstId) {
  loomUniqueId ids[2];
  ASSERT_EQ(loomGetUniqueId(&ids[0]), loomSuccess);
  ids[1] = ids[0];
  loomComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (int rank = 0; rank < 2; ++rank) ASSERT_EQ(loomCommInitRankScalable(&comms[rank], 2, rank, 2, ids, nullptr), loomSuccess);
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  expectAllReduce({comms[0], comms[1]}, 2);
  for (loomComm_t comm : comms) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

// A group that never runs leaves no root behind for a ROOT_AT_INIT id: rank 0 starts it at the
// group's end, so a refused group (mixed modes) can be retried at once at the same address.
TEST(GroupInit, RefusedGroupLeavesNoRootAtInit) {
  const int port = loom::test::freePortBelowEphemeralRange();
  setenv("LOOM_COMM_ID", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  setenv("LOOM_COMM_SECRET", "00112233445566778899aabbccddeeff", 1);
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueIdFlags(&id, LOOM_UNIQUE_ID_ROOT_AT_INIT), loomSuccess);
  loomConfig_t blocking = configOf(1);
  loomConfig_t nonBlocking = configOf(0);
  loomComm_t refused[2] = {nullptr, nullptr};
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomCommInitRankConfig(&refused[0], 2, id, 0, &blocking), loomSuccess);
  ASSERT_EQ(loomCommInitRankConfig(&refused[1], 2, id, 1, &nonBlocking), loomSuccess);
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);
  EXPECT_FALSE(listening(port));
  for (loomComm_t comm : refused) EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
  loomUniqueId again;
  ASSERT_EQ(loomGetUniqueIdFlags(&again, LOOM_UNIQUE_ID_ROOT_AT_INIT), loomSuccess);
  loomResult_t ended = loomInternalError;
  const std::vector<loomComm_t> comms = initInGroup(again, 2, {0, 1}, 1, &ended);
  ASSERT_EQ(ended, loomSuccess) << loomGetLastError(nullptr);
  expectAllReduce(comms, 2);
  destroyAll(comms);
  unsetenv("LOOM_COMM_ID");
  unsetenv("LOOM_COMM_SECRET");
}

TEST(GroupInit, SimulateEndRunsNothing) {
  loomComm_t comm = nullptr;
  ASSERT_EQ(loomCommInitAll(&comm, 1, nullptr), loomSuccess);
  int sent = 5;
  int received = -1;
  float estimate = 0;
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomAllReduce(&sent, &received, 1, loomInt32, loomSum, comm, nullptr), loomSuccess);
  EXPECT_EQ(loomGroupSimulateEnd(&estimate), loomInvalidUsage);
  EXPECT_NE(std::string(loomGetLastError(nullptr)).find("no performance model"), std::string::npos);
  EXPECT_EQ(estimate, -1.0f);
  EXPECT_EQ(received, -1);                       // nothing ran
  EXPECT_EQ(loomGroupEnd(), loomInvalidUsage);  // and the group is over
  EXPECT_EQ(loomCommDestroy(comm), loomSuccess);
}

}  // namespace
