// SPDX-License-Identifier: Apache-2.0
// Ranks that outnumber their cores start spread over them (src/core/spread_ranks.h): through
// the real init, each rank's thread moves to CPU (local rank mod cores) of its mask, keeps its
// mask (a start, not a binding), and the communicator works; LOOM_SPREAD_RANKS=0 moves nobody.
#include <gtest/gtest.h>
#include <loom.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/multiprocess.h"

namespace {

constexpr int kRanks = 3;  // on a mask of 2 CPUs: oversubscribed on any machine

// The first two CPUs this process may run on, or an empty set when it has fewer.
cpu_set_t twoCpus(int* first, int* second) {
  cpu_set_t all, two;
  CPU_ZERO(&two);
  *first = *second = -1;
  if (sched_getaffinity(0, sizeof(all), &all) != 0) return two;
  for (int cpu = 0; cpu < CPU_SETSIZE && *second < 0; ++cpu) {
    if (!CPU_ISSET(cpu, &all)) continue;
    (*first < 0 ? *first : *second) = cpu;
  }
  if (*second >= 0) {
    CPU_SET(*first, &two);
    CPU_SET(*second, &two);
  }
  return two;
}

// Runs the ranks on two CPUs; returns each rank's INFO log of init (stderr during init).
void runOnTwoCpus(const char* spread, const std::function<void(int rank, int cpu0, int cpu1, const std::string& log)>& check) {
  int cpu0 = -1, cpu1 = -1;
  const cpu_set_t two = twoCpus(&cpu0, &cpu1);
  if (cpu1 < 0) GTEST_SKIP() << "this process may run on one CPU only: nothing to spread over";
  // Set before the fork: rank 0 creates the unique id, which reads the log settings, before
  // its body runs.
  setenv("LOOM_SPREAD_RANKS", spread, 1);
  setenv("LOOM_DEBUG", "INFO", 1);
  setenv("LOOM_DEBUG_SUBSYS", "INIT", 1);
  auto outcomes = loom::test::runRanksWithUniqueId(kRanks, [&](int rank, const loomUniqueId& id) {
    LOOM_REQUIRE(sched_setaffinity(0, sizeof(two), &two) == 0, "sched_setaffinity");
    // Init's log lines go to a file this rank reads back.
    char path[] = "/tmp/loom-spread-XXXXXX";
    const int file = mkstemp(path);
    LOOM_REQUIRE(file >= 0, "mkstemp");
    fflush(stderr);
    const int savedErr = dup(2);
    dup2(file, 2);
    loomComm_t comm = nullptr;
    const loomResult_t result = loomCommInitRank(&comm, kRanks, id, rank);
    fflush(stderr);
    dup2(savedErr, 2);
    close(savedErr);
    close(file);
    std::ifstream in(path);
    std::stringstream log;
    log << in.rdbuf();
    unlink(path);
    LOOM_REQUIRE(result == loomSuccess, loomGetLastError(nullptr));

    cpu_set_t after;
    LOOM_REQUIRE(sched_getaffinity(0, sizeof(after), &after) == 0, "sched_getaffinity");
    LOOM_REQUIRE(CPU_EQUAL(&after, &two), "rank " + std::to_string(rank) + " was left pinned");
    check(rank, cpu0, cpu1, log.str());

    // The communicator works: a ring exchange, exact.
    const int next = (rank + 1) % kRanks, prev = (rank + kRanks - 1) % kRanks;
    std::vector<int32_t> out(7, rank * 100), in2(7, -1);
    LOOM_REQUIRE(loomGroupStart() == loomSuccess, "group start");
    LOOM_REQUIRE(loomSend(out.data(), out.size(), loomInt32, next, comm, nullptr) == loomSuccess, loomGetLastError(comm));
    LOOM_REQUIRE(loomRecv(in2.data(), in2.size(), loomInt32, prev, comm, nullptr) == loomSuccess, loomGetLastError(comm));
    LOOM_REQUIRE(loomGroupEnd() == loomSuccess, loomGetLastError(comm));
    for (int32_t value : in2) LOOM_REQUIRE(value == prev * 100, "wrong value from rank " + std::to_string(prev));
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
  }, 120);
  unsetenv("LOOM_SPREAD_RANKS");
  unsetenv("LOOM_DEBUG");
  unsetenv("LOOM_DEBUG_SUBSYS");
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(SpreadRanks, OversubscribedRanksStartRoundRobinAndStayUnpinned) {
  runOnTwoCpus("1", [](int rank, int cpu0, int cpu1, const std::string& log) {
    const int expected = rank % 2 == 0 ? cpu0 : cpu1;
    const std::string line = "local rank " + std::to_string(rank) + " starts on cpu " + std::to_string(expected);
    LOOM_REQUIRE(log.find(line) != std::string::npos, "rank " + std::to_string(rank) + " did not log '" + line + "':\n" + log);
  });
}

TEST(SpreadRanks, SpreadRanksZeroLeavesPlacementToTheKernel) {
  runOnTwoCpus("0", [](int rank, int, int, const std::string& log) {
    LOOM_REQUIRE(log.find("starts on cpu") == std::string::npos, "rank " + std::to_string(rank) + " moved:\n" + log);
  });
}

}  // namespace
