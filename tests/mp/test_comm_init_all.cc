// SPDX-License-Identifier: Apache-2.0
// loomCommInitAll: n ranks as threads of one process. Collectives on all of them are issued from
// ONE thread inside loomGroupStart/loomGroupEnd (the only way one thread can drive several ranks:
// the calls are queued and run together at GroupEnd), and from n threads each driving its own
// communicator without a group.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/mp/collective_checks.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

class CommInitAll : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("LOOM_SOCKET_IFNAME", "lo", 0);
    // A broken group (calls run at enqueue time) would deadlock one thread against itself:
    // make that a timeout error rather than a hang.
    setenv("LOOM_TIMEOUT_MS", "20000", 1);
    shmBefore_ = loomShmEntries();
    comms_.assign(GetParam(), nullptr);
    ASSERT_EQ(loomCommInitAll(comms_.data(), GetParam(), nullptr), loomSuccess)
        << loomGetLastError(nullptr);
    for (int r = 0; r < GetParam(); ++r) {
      int count = -1, rank = -1;
      ASSERT_EQ(loomCommCount(comms_[r], &count), loomSuccess);
      ASSERT_EQ(loomCommUserRank(comms_[r], &rank), loomSuccess);
      EXPECT_EQ(count, GetParam());
      EXPECT_EQ(rank, r);
    }
  }
  void TearDown() override {
    for (loomComm_t comm : comms_) {
      if (comm != nullptr) {
        EXPECT_EQ(loomCommDestroy(comm), loomSuccess) << loomGetLastError(comm);
      }
    }
    unsetenv("LOOM_TIMEOUT_MS");
    EXPECT_EQ(leakedShmSegments(shmBefore_), std::vector<std::string>{});
  }
  std::vector<loomComm_t> comms_;
  std::vector<std::string> shmBefore_;
};

// Per rank: inputs and outputs of a sequence of grouped collectives.
struct RankBuffers {
  std::vector<float> sumIn, sumOut;  // allreduce float32 sum, out of place
  std::vector<int64_t> chain;        // two in-place int64 sums in a row: order matters
  std::vector<int32_t> gatherIn, gatherOut;
  std::vector<double> bcast;           // in place from root n-1
  std::vector<uint8_t> maxIn, maxOut;  // reduce-scatter uint8 max
};

constexpr size_t kCount = 1003;

TEST_P(CommInitAll, GroupedCollectivesFromOneThread) {
  const int n = GetParam();
  std::vector<RankBuffers> ranks(n);
  for (int r = 0; r < n; ++r) {
    RankBuffers& b = ranks[r];
    b.sumIn.resize(kCount);
    b.sumOut.assign(kCount, -1);
    b.chain.resize(kCount);
    b.gatherIn.resize(kCount);
    b.gatherOut.assign(kCount * n, -1);
    b.bcast.assign(kCount, r == n - 1 ? 0.0 : -1.0);
    b.maxIn.resize(kCount * n);
    b.maxOut.assign(kCount, 0);
    for (size_t i = 0; i < kCount; ++i) {
      b.sumIn[i] = float(r * 3 + int(i % 11));
      b.chain[i] = int64_t(r + 1) * int64_t(i);
      b.gatherIn[i] = int32_t(r * 100000 + int(i));
      if (r == n - 1) b.bcast[i] = 0.5 * double(i);
    }
    for (size_t i = 0; i < kCount * n; ++i) b.maxIn[i] = uint8_t(mix64(r * 7919 + i) & 0xff);
  }

  ASSERT_EQ(loomGroupStart(), loomSuccess);
  ASSERT_EQ(loomGroupStart(), loomSuccess);  // nested: only the outermost End launches
  for (int r = 0; r < n; ++r) {
    RankBuffers& b = ranks[r];
    loomComm_t c = comms_[r];
    ASSERT_EQ(
        loomAllReduce(b.sumIn.data(), b.sumOut.data(), kCount, loomFloat32, loomSum, c, nullptr),
        loomSuccess)
        << loomGetLastError(nullptr);
    ASSERT_EQ(loomAllReduce(b.chain.data(), b.chain.data(), kCount, loomInt64, loomSum, c, nullptr),
              loomSuccess);
    ASSERT_EQ(loomAllReduce(b.chain.data(), b.chain.data(), kCount, loomInt64, loomSum, c, nullptr),
              loomSuccess);
    ASSERT_EQ(loomAllGather(b.gatherIn.data(), b.gatherOut.data(), kCount, loomInt32, c, nullptr),
              loomSuccess);
    ASSERT_EQ(loomBroadcast(b.bcast.data(), b.bcast.data(), kCount, loomFloat64, n - 1, c, nullptr),
              loomSuccess);
    ASSERT_EQ(
        loomReduceScatter(b.maxIn.data(), b.maxOut.data(), kCount, loomUint8, loomMax, c, nullptr),
        loomSuccess);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);  // inner: queues only
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);  // outer: runs it all

  const int64_t rankSum = int64_t(n) * (n + 1) / 2;  // sum of (r + 1)
  for (int r = 0; r < n; ++r) {
    const RankBuffers& b = ranks[r];
    for (size_t i = 0; i < kCount; ++i) {
      const float wantSum = float(3 * n * (n - 1) / 2 + n * int(i % 11));
      ASSERT_EQ(b.sumOut[i], wantSum) << "allreduce rank " << r << " element " << i;
      // First sum: rankSum * i on every rank; second: n times that.
      ASSERT_EQ(b.chain[i], int64_t(n) * rankSum * int64_t(i)) << "chained allreduce rank " << r;
      ASSERT_EQ(b.bcast[i], 0.5 * double(i)) << "broadcast rank " << r << " element " << i;
      uint8_t wantMax = 0;
      for (int q = 0; q < n; ++q) {
        wantMax = std::max(wantMax, uint8_t(mix64(q * 7919 + r * kCount + i) & 0xff));
      }
      ASSERT_EQ(b.maxOut[i], wantMax) << "reduce-scatter max rank " << r << " element " << i;
    }
    for (size_t i = 0; i < kCount * n; ++i) {
      ASSERT_EQ(b.gatherOut[i], int32_t((i / kCount) * 100000 + i % kCount))
          << "allgather rank " << r << " element " << i;
    }
  }
}

// A ring exchange from one thread, every rank's send issued before any receive, so the calls
// alternate between communicators (A B .. A B ..) and then repeat one (a send and a receive on
// A, then on B): the group holds a reference per run of calls on one communicator, and every
// communicator's batch must still find its own.
TEST_P(CommInitAll, GroupedRingExchangeInterleavedAndInRuns) {
  const int n = GetParam();
  std::vector<std::vector<int32_t>> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    in[r].assign(kCount, 0);
    for (size_t i = 0; i < kCount; ++i) in[r][i] = int32_t(r * 1000000 + int(i));
  }
  auto expectFromLeft = [&](const char* shape) {
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(out[r], in[(r + n - 1) % n]) << shape << ": rank " << r;
    }
  };
  for (int r = 0; r < n; ++r) out[r].assign(kCount, -1);
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(loomSend(in[r].data(), kCount, loomInt32, (r + 1) % n, comms_[r], nullptr), loomSuccess);
  }
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(loomRecv(out[r].data(), kCount, loomInt32, (r + n - 1) % n, comms_[r], nullptr), loomSuccess);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  expectFromLeft("interleaved");

  for (int r = 0; r < n; ++r) out[r].assign(kCount, -1);
  ASSERT_EQ(loomGroupStart(), loomSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(loomSend(in[r].data(), kCount, loomInt32, (r + 1) % n, comms_[r], nullptr), loomSuccess);
    ASSERT_EQ(loomRecv(out[r].data(), kCount, loomInt32, (r + n - 1) % n, comms_[r], nullptr), loomSuccess);
  }
  ASSERT_EQ(loomGroupEnd(), loomSuccess) << loomGetLastError(nullptr);
  expectFromLeft("in runs");
}

TEST_P(CommInitAll, ThreadPerCommunicatorWithoutGroup) {
  const int n = GetParam();
  // Every thread walks the same case matrix (all types, ops, roots, in/out of place) on its own
  // communicator, exactly as a process would; results are checked exactly per rank.
  MatrixOptions options;
  options.smallCounts = {0, 1, 7, 1000};
  options.bigCount = 0;
  const std::vector<Case> cases = buildCases(n, options);
  std::vector<std::string> failures(n);
  std::vector<std::vector<uint64_t>> hashes(n, std::vector<uint64_t>(cases.size(), 0));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        double callSeconds = 0;
        for (size_t k = 0; k < cases.size(); ++k) {
          const std::string problem =
              runCase(cases[k], mix64(k), r, n, comms_[r], &hashes[r][k], &callSeconds);
          if (!problem.empty() && failures[r].size() < 2000) {
            failures[r] += "\n  " + cases[k].name() + ":" + problem;
          }
        }
      } catch (const std::exception& error) {
        failures[r] += std::string("\n  stopped: ") + error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
  for (size_t k = 0; k < cases.size(); ++k) {
    if (!cases[k].replicated()) continue;
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(hashes[r][k], hashes[0][k]) << cases[k].name() << " differs on rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommInitAll, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace loom::test
