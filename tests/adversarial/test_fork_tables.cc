// SPDX-License-Identifier: Apache-2.0
// Loom's process-wide tables (communicator and stream handles, PreMulSum operators) are locked
// for a moment by every init, destroy, operator creation and call. fork copies only the thread
// that calls it: a lock another thread holds at that instant would stay held in the child for
// good, and the child's first init or destroy would hang. A fork at any instant must leave the
// child tables that work.
#include <gtest/gtest.h>
#include <loom.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

// Not under a sanitizer: the child of a process whose threads allocate may inherit its
// allocator locked (AddressSanitizer) or must not start threads (ThreadSanitizer).
TEST(ForkTables, AForkWhileAnotherThreadUsesTheTablesLeavesAWorkingChild) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "forks a process whose threads allocate";
#endif
  const auto outcomes = runProcesses(1, [&](int) {
    unsetenv("LOOM_TIMEOUT_MS");
    loomUniqueId id;
    LOOM_REQUIRE(loomGetUniqueId(&id) == loomSuccess, loomGetLastError(nullptr));
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, 1, id, 0) == loomSuccess, loomGetLastError(nullptr));
    {  // the first operator before any fork: a fork while another thread runs a one-time
       // initialization (a function-local static) leaves the child waiting for it, in any C++ program
      loomRedOp_t op;
      float scalar = 2;
      LOOM_REQUIRE(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarHostImmediate, comm) == loomSuccess,
                   loomGetLastError(comm));
      LOOM_REQUIRE(loomRedOpDestroy(op, comm) == loomSuccess, loomGetLastError(comm));
    }
    std::atomic<bool> done{false};
    std::thread churn([&] {  // takes the handle and operator tables' locks as often as it can
      float scalar = 2;
      while (!done.load()) {
        loomRedOp_t op;
        LOOM_REQUIRE(loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarHostImmediate, comm) ==
                         loomSuccess,
                     loomGetLastError(comm));
        LOOM_REQUIRE(loomRedOpDestroy(op, comm) == loomSuccess, loomGetLastError(comm));
      }
    });
    for (int child = 0; child < 100; ++child) {
      const pid_t pid = fork();
      LOOM_REQUIRE(pid >= 0, "fork failed");
      if (pid == 0) {  // a communicator of its own, made and destroyed: both take every table
        loomUniqueId own;
        loomComm_t mine = nullptr;
        if (loomGetUniqueId(&own) != loomSuccess) _exit(2);
        if (loomCommInitRank(&mine, 1, own, 0) != loomSuccess) _exit(3);
        loomRedOp_t op;
        float scalar = 3;
        if (loomRedOpCreatePreMulSum(&op, &scalar, loomFloat32, loomScalarHostImmediate, mine) != loomSuccess) _exit(4);
        if (loomCommDestroy(mine) != loomSuccess) _exit(5);
        _exit(0);
      }
      const std::string ended = awaitChild(pid, 5);
      if (!ended.empty()) {
        done.store(true);
        churn.join();
        LOOM_REQUIRE(false, "child " + std::to_string(child) + " " + ended);
      }
    }
    done.store(true);
    churn.join();
    LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, loomGetLastError(comm));
  }, 300);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace
}  // namespace loom::test
