// SPDX-License-Identifier: Apache-2.0
// Mismatched calls, LOOM_CHECK and LOOM_FAULT (issue 5):
// - ranks that disagree on a call (count, op, datatype, root, collective) get loomInvalidUsage
//   on every rank, naming what each called: over TCP, where message headers carry the call,
//   and over shared memory, where the direct engine's posts do; LOOM_CHECK=0 turns it off;
// - LOOM_CHECK=2 reports NaN and infinity in reductions, and the communicator stays usable;
// - injected transport faults: short reads/writes and delays are tolerated with exact results;
//   a connection closed after N bytes and a corrupt header become errors on every rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "loom.h"
#include "tests/support/multiprocess.h"
#include "tests/support/test_env.h"

namespace loom::test {
namespace {

std::string describe(loomComm_t comm, loomResult_t rc) {
  return std::string(loomGetErrorString(rc)) + ": " + loomGetLastError(comm);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What one rank calls in a mismatch test.
struct Call {
  enum Kind { AllReduce, AllGather, Broadcast } kind = AllReduce;
  size_t count = 1000;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
  int root = 0;
};

loomResult_t issue(const Call& call, loomComm_t comm, int nranks) {
  std::vector<double> send(call.count * 1, 1.0), recv(call.count * nranks + 16, 0.0);  // doubles: room for any type
  switch (call.kind) {
    case Call::AllReduce:
      return loomAllReduce(send.data(), recv.data(), call.count, call.type, call.op, comm, nullptr);
    case Call::AllGather:
      return loomAllGather(send.data(), recv.data(), call.count, call.type, comm, nullptr);
    case Call::Broadcast:
      return loomBroadcast(send.data(), recv.data(), call.count, call.type, call.root, comm, nullptr);
  }
  return loomInternalError;
}

// Rank `odd` calls `theirs`, every other rank `mine`. Every rank must fail with
// loomInvalidUsage and a message holding each of `mentions`: in that call, or, over TCP, where
// a rank's part may end before the odd message reaches anyone (a broadcast's root receives
// nothing), in its next call, which carries the peers' failure reports.
void expectMismatchEverywhere(int nranks, int odd, const Call& mine, const Call& theirs,
                              const std::vector<std::string>& mentions, bool allowNextCall = false) {
  const auto outcomes = runRanksWithUniqueId(
      nranks,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, nranks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        LOOM_REQUIRE(issue(mine, comm, nranks) == loomSuccess, "a matching call first: " + describe(comm, loomSuccess));
        loomResult_t rc = issue(rank == odd ? theirs : mine, comm, nranks);
        if (rc == loomSuccess && allowNextCall) {
          std::fprintf(stderr, "rank %d: its part of the odd call went through; the next call must fail\n", rank);
          rc = issue(Call{}, comm, nranks);  // an all-reduce: every rank hears from a neighbour
        }
        const std::string error = loomGetLastError(comm);
        std::fprintf(stderr, "rank %d: %s\n", rank, describe(comm, rc).c_str());
        LOOM_REQUIRE(rc == loomInvalidUsage, "rank " + std::to_string(rank) + ": " + describe(comm, rc));
        for (const std::string& mention : mentions) {
          LOOM_REQUIRE(contains(error, mention), "rank " + std::to_string(rank) + ": no '" + mention + "' in: " + error);
        }
        loomCommDestroy(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

const EnvList kTcp{{"LOOM_SHM_DISABLE", "1"}, {"LOOM_TIMEOUT_MS", "20000"}};
const EnvList kShm{{"LOOM_TRANSPORT", "shm"}, {"LOOM_TIMEOUT_MS", "20000"}};

TEST(Mismatch, CountOverTcpFourRanks) {
  ScopedEnv env(kTcp);
  Call theirs;
  theirs.count = 1001;
  expectMismatchEverywhere(4, 2, Call{}, theirs, {"count 1000", "count 1001"});
}

TEST(Mismatch, CountOverTcpLargeMessages) {
  ScopedEnv env(kTcp);
  Call mine, theirs;
  mine.count = 1 << 20;
  theirs.count = (1 << 20) + 4;
  expectMismatchEverywhere(3, 1, mine, theirs, {"count 1048576", "count 1048580"});
}

TEST(Mismatch, CountOverSharedMemoryFourRanks) {
  ScopedEnv env(kShm);
  Call theirs;
  theirs.count = 1001;
  expectMismatchEverywhere(4, 3, Call{}, theirs, {"count 1000", "count 1001"});
}

// The ring over shared-memory FIFOs (no direct engine): slot headers carry the call, and a
// failed rank puts a failure report in its peers' FIFOs, which travels round the ring.
TEST(Mismatch, CountOverTheShmRingFourRanks) {
  ScopedEnv env(EnvList{{"LOOM_TRANSPORT", "shm"}, {"LOOM_ALGO", "ring"}, {"LOOM_TIMEOUT_MS", "20000"}});
  Call mine, theirs;
  mine.count = 100000;
  theirs.count = 100001;
  expectMismatchEverywhere(4, 1, mine, theirs, {"count 100000", "count 100001"});
}

TEST(Mismatch, OpDatatypeRootAndCollectiveOverTcp) {
  ScopedEnv env(kTcp);
  Call op;
  op.op = loomMax;
  expectMismatchEverywhere(2, 1, Call{}, op, {"sum", "max"});
  Call type;
  type.type = loomInt32;
  expectMismatchEverywhere(2, 0, Call{}, type, {"float32", "int32"});
  Call rootA, rootB;
  rootA.kind = rootB.kind = Call::Broadcast;
  rootB.root = 1;
  expectMismatchEverywhere(3, 2, rootA, rootB, {"root 0", "root 1"}, true);
  Call gather;
  gather.kind = Call::AllGather;
  gather.count = 500;  // the same bytes on the wire as a 1000-element all-reduce's pieces would not be
  expectMismatchEverywhere(2, 1, Call{}, gather, {"allreduce", "allgather"});
}

// LOOM_CHECK=0 trusts the ranks: the same sizes with different ops go through unchecked.
TEST(Mismatch, CheckZeroTrustsTheRanks) {
  ScopedEnv env(EnvList{{"LOOM_SHM_DISABLE", "1"}, {"LOOM_CHECK", "0"}, {"LOOM_TIMEOUT_MS", "20000"}});
  const auto outcomes = runRanksWithUniqueId(
      2,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, 2, id, rank) == loomSuccess, loomGetLastError(nullptr));
        Call call;
        call.op = rank == 0 ? loomSum : loomMax;
        const loomResult_t rc = issue(call, comm, 2);
        LOOM_REQUIRE(rc == loomSuccess, "LOOM_CHECK=0 still checked: " + describe(comm, rc));
        loomCommDestroy(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

// LOOM_CHECK=2: a NaN in rank 1's input is reported on every rank (the sum carries it), and
// the communicator still works afterwards.
void expectNonFiniteReported(const EnvList& transport) {
  ScopedEnv env(transport);
  ScopedEnv check(EnvList{{"LOOM_CHECK", "2"}});
  const auto outcomes = runRanksWithUniqueId(
      3,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, 3, id, rank) == loomSuccess, loomGetLastError(nullptr));
        std::vector<float> send(4097, 1.f), recv(4097, 0.f);
        if (rank == 1) send[1234] = std::numeric_limits<float>::quiet_NaN();
        loomResult_t rc = loomAllReduce(send.data(), recv.data(), send.size(), loomFloat32, loomSum, comm, nullptr);
        const std::string error = loomGetLastError(comm);
        LOOM_REQUIRE(rc == loomInvalidUsage && contains(error, "result has NaN or infinity at element 1234"),
                     "rank " + std::to_string(rank) + ": " + describe(comm, rc));
        LOOM_REQUIRE((rank == 1) == contains(error, "input has NaN or infinity at element 1234"),
                     "rank " + std::to_string(rank) + ": " + error);
        send[1234] = 1.f;
        rc = loomAllReduce(send.data(), recv.data(), send.size(), loomFloat32, loomSum, comm, nullptr);
        LOOM_REQUIRE(rc == loomSuccess && recv[1234] == 3.f, "after the NaN: " + describe(comm, rc));
        loomCommDestroy(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(CheckLevelTwo, NaNIsReportedOverSharedMemory) { expectNonFiniteReported(kShm); }
TEST(CheckLevelTwo, NaNIsReportedOverTcp) { expectNonFiniteReported(kTcp); }

// All-reduces of several sizes, every result exact: what a tolerated fault must not change.
void expectExactUnderFault(const char* fault, int nranks) {
  ScopedEnv env(kTcp);
  ScopedEnv faults(EnvList{{"LOOM_FAULT", fault}});
  const auto outcomes = runRanksWithUniqueId(
      nranks,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, nranks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{65537}, size_t{300001}}) {
          std::vector<int32_t> send(count), recv(count, -1);
          for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>((i % 1000) * (rank + 1));
          const loomResult_t rc = loomAllReduce(send.data(), recv.data(), count, loomInt32, loomSum, comm, nullptr);
          LOOM_REQUIRE(rc == loomSuccess, std::string(fault) + ": " + describe(comm, rc));
          const int32_t factor = nranks * (nranks + 1) / 2;
          for (size_t i = 0; i < count; ++i) {
            LOOM_REQUIRE(recv[i] == static_cast<int32_t>(i % 1000) * factor,
                         std::string(fault) + ": element " + std::to_string(i) + " of " + std::to_string(count));
          }
        }
        LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
      },
      120);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(Fault, ShortReadsAndWritesAreTolerated) { expectExactUnderFault("short_io=7", 3); }
TEST(Fault, DelaysAreTolerated) { expectExactUnderFault("delay_ms=3@1", 3); }

// A fatal fault on one rank: every rank's loop of 1 MiB all-reduces ends in an error (none
// hangs: LOOM_TIMEOUT_MS is 20 s, the test allows 60), and the messages say what happened.
void expectEveryRankFails(const char* fault, int nranks, const std::string& somewhere) {
  ScopedEnv env(kTcp);
  ScopedEnv faults(EnvList{{"LOOM_FAULT", fault}});
  const auto outcomes = runRanksWithUniqueId(
      nranks,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        LOOM_REQUIRE(loomCommInitRank(&comm, nranks, id, rank) == loomSuccess, loomGetLastError(nullptr));
        std::vector<float> send(1 << 18, 1.f), recv(1 << 18);
        const auto start = std::chrono::steady_clock::now();
        loomResult_t rc = loomSuccess;
        for (int i = 0; i < 1000 && rc == loomSuccess; ++i) {
          rc = loomAllReduce(send.data(), recv.data(), send.size(), loomFloat32, loomSum, comm, nullptr);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string error = loomGetLastError(comm);
        std::fprintf(stderr, "rank %d (%.2f s): %s\n", rank, seconds, describe(comm, rc).c_str());
        LOOM_REQUIRE(rc != loomSuccess, std::string(fault) + ": rank " + std::to_string(rank) + " never failed");
        LOOM_REQUIRE(seconds < 15, "rank " + std::to_string(rank) + " took " + std::to_string(seconds) + " s to fail");
        if (!somewhere.empty() && contains(error, somewhere)) std::fprintf(stderr, "rank %d names the fault\n", rank);
        loomCommAbort(comm);
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(Fault, ClosedConnectionFailsEveryRank) { expectEveryRankFails("close_after=3000000@1", 3, "close_after"); }
TEST(Fault, CorruptHeaderFailsEveryRank) { expectEveryRankFails("corrupt_header=5@0", 3, "corrupt message header"); }

TEST(Fault, BadSpecificationIsAnInitError) {
  ScopedEnv env(kTcp);
  ScopedEnv faults(EnvList{{"LOOM_FAULT", "explode=1"}});
  const auto outcomes = runRanksWithUniqueId(
      2,
      [&](int rank, const loomUniqueId& id) {
        loomComm_t comm = nullptr;
        const loomResult_t rc = loomCommInitRank(&comm, 2, id, rank);
        LOOM_REQUIRE(rc != loomSuccess && contains(loomGetLastError(nullptr), "LOOM_FAULT=\"explode=1\": unknown fault 'explode'"),
                     describe(nullptr, rc));
      },
      60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

}  // namespace
}  // namespace loom::test
