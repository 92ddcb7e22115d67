// SPDX-License-Identifier: Apache-2.0
// The direct collectives (src/algorithms/direct/direct_engine.h) in each of their modes, over the full
// case matrix of collective_checks.h: exact results, identical on every rank, nothing left in
// /dev/shm. The environment picks the mode for the communicators the ranks create:
//   eager:       everything up to 1 MiB per rank staged through the shared arena;
//   single-copy: process_vm_readv with 4 KiB chunks (many chunks per segment) and streaming
//                (non-temporal) output from 64 KiB;
//   ring:        LOOM_ALGO=ring, schedules only, with streaming output for every size.
// Plus: ranks that disagree on a call fail with loomInvalidUsage instead of hanging.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "tests/mp/collective_checks.h"

namespace loom::test {
namespace {

struct Mode {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;
  size_t bigCount;
};

const Mode kModes[] = {
    {"eager", {{"LOOM_DIRECT_EAGER_BYTES", "1048576"}}, 100003},
    {"single_copy",
     {{"LOOM_CMA", "1"}, {"LOOM_DIRECT_EAGER_BYTES", "0"}, {"LOOM_DIRECT_CHUNK_BYTES", "4096"},
      {"LOOM_STREAM_COPY_BYTES", "65536"}},
     300007},
    {"ring_streaming",
     {{"LOOM_ALGO", "ring"}, {"LOOM_STREAM_COPY_BYTES", "0"}, {"LOOM_STREAM_REDUCE_BYTES", "0"}},
     300007},
};

class CollectivesDirect : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  void SetUp() override {
    setenv("LOOM_TRANSPORT", "shm", 1);
    unsetenv("LOOM_SHM_DISABLE");
    for (const auto& [name, value] : mode().env) setenv(name, value, 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : mode().env) unsetenv(name);
  }
  const Mode& mode() const { return kModes[std::get<0>(GetParam())]; }
};

TEST_P(CollectivesDirect, FullMatrixIsExactAndIdenticalOnEveryRank) {
  MatrixOptions options;
  options.bigCount = mode().bigCount;
  runCollectiveSuite(std::get<1>(GetParam()), options);
}

INSTANTIATE_TEST_SUITE_P(Modes, CollectivesDirect,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(2, 3, 8)),
                         [](const auto& info) {
                           return std::string(kModes[std::get<0>(info.param)].name) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// Rank `odd` calls something else than the others; every rank must get loomInvalidUsage
// naming the disagreement, promptly.
void expectMismatchDetected(int nranks, const std::function<loomResult_t(int rank, loomComm_t comm, float* data)>& call) {
  const auto outcomes = runRanksWithUniqueId(nranks, [&](int rank, const loomUniqueId& id) {
    loomComm_t comm = nullptr;
    LOOM_REQUIRE(loomCommInitRank(&comm, nranks, id, rank) == loomSuccess, loomGetLastError(nullptr));
    std::vector<float> data(131072, 1.0f);
    const loomResult_t result = call(rank, comm, data.data());
    const std::string error = loomGetLastError(comm);
    LOOM_REQUIRE(result == loomInvalidUsage, "rank " + std::to_string(rank) + " got " +
                                                 std::to_string(result) + ": " + error);
    LOOM_REQUIRE(error.find("disagree") != std::string::npos, error);
    loomCommAbort(comm);
  }, 60);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

TEST(CollectivesDirectMismatch, DifferentCountsFailOnEveryRank) {
  setenv("LOOM_TRANSPORT", "shm", 1);
  expectMismatchDetected(3, [](int rank, loomComm_t comm, float* data) {
    return loomAllReduce(data, data, rank == 1 ? 100 : 64, loomFloat32, loomSum, comm, nullptr);
  });
}

TEST(CollectivesDirectMismatch, DifferentCollectivesFailOnEveryRank) {
  setenv("LOOM_TRANSPORT", "shm", 1);
  expectMismatchDetected(2, [](int rank, loomComm_t comm, float* data) {
    if (rank == 0) return loomAllReduce(data, data, 16, loomFloat32, loomSum, comm, nullptr);
    return loomBroadcast(data, data, 16, loomFloat32, 0, comm, nullptr);
  });
}

TEST(CollectivesDirectMismatch, DifferentOpsFailOnEveryRankEvenForLargeMessages) {
  setenv("LOOM_TRANSPORT", "shm", 1);
  expectMismatchDetected(2, [](int rank, loomComm_t comm, float* data) {
    return loomAllReduce(data, data, 131072, loomFloat32, rank == 0 ? loomSum : loomMax, comm, nullptr);
  });
}

}  // namespace
}  // namespace loom::test
