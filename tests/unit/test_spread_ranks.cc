// SPDX-License-Identifier: Apache-2.0
// Spreading oversubscribed ranks over cores (src/core/spread_ranks.h): which CPU a local rank
// starts on, and that the move leaves the thread's mask as it was (a start, not a binding).
#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "core/spread_ranks.h"

namespace loom {
namespace {

cpu_set_t cpus(std::initializer_list<int> list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : list) CPU_SET(cpu, &set);
  return set;
}

TEST(SpreadRanks, LocalRanksGoRoundRobinOverTheAllowedCpus) {
  const cpu_set_t two = cpus({0, 1});
  EXPECT_EQ(spreadCpu(two, 0), 0);
  EXPECT_EQ(spreadCpu(two, 1), 1);
  EXPECT_EQ(spreadCpu(two, 2), 0);  // ring neighbours 1 and 2 on different CPUs
  EXPECT_EQ(spreadCpu(two, 3), 1);
  const cpu_set_t gaps = cpus({2, 5, 7});  // a cpuset with holes: the mask's own CPUs only
  EXPECT_EQ(spreadCpu(gaps, 0), 2);
  EXPECT_EQ(spreadCpu(gaps, 1), 5);
  EXPECT_EQ(spreadCpu(gaps, 2), 7);
  EXPECT_EQ(spreadCpu(gaps, 3), 2);
  EXPECT_EQ(spreadCpu(cpus({}), 0), -1);
  EXPECT_EQ(spreadCpu(two, -1), -1);
}

// One test calls spreadCallingThread: it moves a process once.
TEST(SpreadRanks, MovesOnceAndGivesTheMaskBack) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "this process may run on one CPU only: nothing to spread over";
  // In a thread of its own, so the test's main thread keeps its placement.
  int moved = -2, again = -2;
  cpu_set_t after;
  CPU_ZERO(&after);
  std::thread([&] {
    moved = spreadCallingThread(1);
    sched_getaffinity(0, sizeof(after), &after);
    again = spreadCallingThread(0);
  }).join();
  EXPECT_EQ(moved, spreadCpu(before, 1));
  EXPECT_TRUE(CPU_EQUAL(&after, &before)) << "the thread was left pinned";
  EXPECT_EQ(again, -1) << "a second communicator must not move the thread again";
}

}  // namespace
}  // namespace loom
