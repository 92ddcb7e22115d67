// SPDX-License-Identifier: Apache-2.0
// A transport registered from a test (tests/support/loopback_transport.h: in-process queues)
// carries every collective with exact results, without any edit in core: the registry prefers
// it, and the communicator, the executor and the schedules use it through transport.h alone.
// The direct engine is off (LOOM_ALGO=ring), so every call runs as a schedule over the
// transport, and the loopback's own counters prove that it moved the bytes of every call.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <mutex>
#include <thread>

#include "tests/mp/collective_checks.h"
#include "tests/support/loopback_transport.h"
#include "tests/support/test_env.h"

namespace loom::test {
namespace {

struct RankReport {
  std::vector<uint64_t> hashes;         // by case: replicated results (0 otherwise)
  std::string failures;                 // wrong results, or calls the loopback did not carry
  std::array<uint64_t, 5> bytesByColl{};  // what the loopback sent, per collective
};

void runRank(int rank, int n, const loomUniqueId& id, const std::vector<Case>& cases, RankReport& report) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;  // a bug fails the test instead of hanging it
  loomComm_t comm = nullptr;
  if (loomCommInitRankConfig(&comm, n, id, rank, &config) != loomSuccess) {
    report.failures = std::string("init: ") + loomGetLastError(nullptr);
    return;
  }
  reserveCaseArenas(cases, n);
  report.hashes.assign(cases.size(), 0);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    loopbackCounters() = LoopbackCounters{};
    double seconds = 0;
    std::string problem;
    try {
      problem = runCase(c, mix64(k + 1000 * n), rank, n, comm, &report.hashes[k], &seconds);
    } catch (const std::exception& error) {
      report.failures += "\n  " + c.name() + ": " + error.what();
      break;  // the ranks are out of step now
    }
    const LoopbackCounters counters = loopbackCounters();
    report.bytesByColl[static_cast<int>(c.coll)] += counters.bytesSent;
    // Every rank of a ring or chain sends, but a chain's far end (broadcast) or its root
    // (reduce) only receives: what must hold is that this rank's part moved over the loopback.
    if (c.count > 0 && counters.bytesSent + counters.bytesReceived == 0) problem += " the loopback moved nothing;";
    // A sending call registered its buffers with the transport and released them all after.
    if (counters.bytesSent > 0 && counters.registrations == 0) problem += " sent without registering memory;";
    if (counters.liveRegistrations != 0) problem += " left registrations behind;";
    if (!problem.empty()) report.failures += "\n  " + c.name() + ":" + problem;
  }
  if (loomCommDestroy(comm) != loomSuccess) report.failures += std::string("\n  destroy: ") + loomGetLastError(nullptr);
}

class LoopbackTransportTest : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackTransportTest, CarriesEveryCollectiveExactly) {
  const int n = GetParam();
  ScopedEnv env(EnvList{{"LOOM_ALGO", "ring"}, {"LOOM_SOCKET_IFNAME", "lo"}});
  unsetenv("LOOM_TRANSPORT");
  unsetenv("LOOM_SHM_DISABLE");
  LoopbackRegistration registration;
  loomUniqueId id;
  ASSERT_EQ(loomGetUniqueId(&id), loomSuccess) << loomGetLastError(nullptr);
  MatrixOptions options;
  options.bigCount = 100003;
  const std::vector<Case> cases = buildCases(n, options);
  std::vector<RankReport> reports(n);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < n; ++rank) {
    ranks.emplace_back([&, rank] { runRank(rank, n, id, cases, reports[rank]); });
  }
  for (std::thread& rank : ranks) rank.join();

  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(reports[rank].failures, "") << "rank " << rank;
  for (size_t k = 0; k < cases.size(); ++k) {
    if (!cases[k].replicated()) continue;
    for (int rank = 1; rank < n; ++rank) {
      ASSERT_EQ(reports[rank].hashes.size(), cases.size());
      EXPECT_EQ(reports[rank].hashes[k], reports[0].hashes[k]) << cases[k].name() << " differs on rank " << rank;
    }
  }
  const char* const names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"};
  for (int coll = 0; coll < 5; ++coll) {
    uint64_t bytes = 0;
    for (const RankReport& report : reports) bytes += report.bytesByColl[coll];
    EXPECT_GT(bytes, 0u) << names[coll] << " never went over the loopback transport";
    std::printf("n=%d %s: %llu bytes over the loopback\n", n, names[coll], static_cast<unsigned long long>(bytes));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackTransportTest, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace loom::test
