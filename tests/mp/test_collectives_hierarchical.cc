// SPDX-License-Identifier: Apache-2.0
// The hierarchical collectives on the real data path: ranks of one machine told apart as hosts
// by LOOM_HOSTID (ranks with different ids talk over TCP, on loopback here; host mates over
// shared memory), LOOM_ALGO=hierarchical. The collective matrix of collective_checks.h (all-reduce,
// reduce-scatter and reduce with every op, avg included, on integer-valued data; all-gather;
// broadcast; in and out of place; odd counts; several roots) must be exact and bitwise the same
// on every rank, for
//   4 ranks as 2 hosts x 2, host-major (ranks 0, 1 | 2, 3) and interleaved (0, 2 | 1, 3: srun's
//     cyclic distribution), which take the hierarchical schedules;
//   6 ranks as 3 hosts x 2, interleaved, with LOOM_ALGO=auto, which chooses them too;
//   3 ranks as 2 + 1, which falls back to the flat ring.
// Each rank logs at INFO into a file of its own, and the test checks the line init wrote about
// the choice. Small pieces (LOOM_PIECE_BYTES) make the larger counts move as many pieces, so the
// phases overlap.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/mp/collective_checks.h"

namespace loom::test {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

MatrixOptions hierarchicalMatrix() {
  MatrixOptions options;
  options.smallCounts = {0, 1, 3, 7, 1001};
  options.bigCount = 20011;  // odd; with 4 KiB pieces, many pieces a unit
  return options;
}

// Runs the matrix on ranks whose hosts are `hostOfRank` with LOOM_ALGO=`algorithm`;
// `expectedLine` must be in every rank's INFO log.
void runOnHosts(const std::vector<int>& hostOfRank, const std::string& expectedLine,
                const char* algorithm = "hierarchical") {
  const int n = static_cast<int>(hostOfRank.size());
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const std::vector<std::string> shmBefore = loomShmEntries();
  char dirTemplate[] = "/tmp/loom-hierarchical-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  std::vector<std::string> hashFiles, logFiles;
  for (int r = 0; r < n; ++r) {
    hashFiles.push_back(dir + "/hashes" + std::to_string(r));
    logFiles.push_back(dir + "/log" + std::to_string(r));
  }
  const MatrixOptions options = hierarchicalMatrix();
  // Before the fork: rank 0 makes the unique id, which reads the log settings, before its body
  // runs.
  setenv("LOOM_DEBUG", "INFO", 1);
  setenv("LOOM_DEBUG_SUBSYS", "INIT", 1);
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = runRanksWithUniqueId(
      n,
      [&](int rank, const loomUniqueId& id) {
        // Read at init (LOOM_HOSTID by the host identity, the others by the settings).
        setenv("LOOM_HOSTID", ("hierarchical-test-host-" + std::to_string(hostOfRank[rank])).c_str(), 1);
        setenv("LOOM_ALGO", algorithm, 1);
        setenv("LOOM_PIECE_BYTES", "4096", 1);
        unsetenv("LOOM_TRANSPORT");
        unsetenv("LOOM_SHM_DISABLE");
        LOOM_REQUIRE(std::freopen(logFiles[rank].c_str(), "w", stderr) != nullptr, "redirect stderr");
        runCollectiveRank(rank, n, id, options, hashFiles[rank]);
      },
      120);
  unsetenv("LOOM_DEBUG");
  unsetenv("LOOM_DEBUG_SUBSYS");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("hosts of ranks");
  for (int host : hostOfRank) std::printf(" %d", host);
  std::printf(": %zu cases in %.2f s\n", buildCases(n, options).size(), seconds);
  bool allOk = true;
  for (const RankOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.ok()) << outcome.describe() << "\n" << readFile(logFiles[outcome.rank]);
    allOk = allOk && outcome.ok();
  }
  if (allOk) {
    EXPECT_EQ(compareHashFiles(hashFiles), "") << "results differ between ranks";
  }
  for (int r = 0; r < n; ++r) {
    const std::string log = readFile(logFiles[r]);
    EXPECT_NE(log.find(expectedLine), std::string::npos) << "rank " << r << " logged:\n" << log;
    // Ranks on other hosts were reached over TCP, host mates over shared memory.
    for (int peer = 0; peer < n; ++peer) {
      if (peer == r) continue;
      const std::string link = "rank " + std::to_string(r) + " <-> rank " + std::to_string(peer) + " over ";
      const size_t at = log.find(link);
      ASSERT_NE(at, std::string::npos) << log;
      const bool sameHost = hostOfRank[r] == hostOfRank[peer];
      EXPECT_EQ(log.compare(at + link.size(), 3, "shm") == 0, sameHost) << log.substr(at, 80);
    }
  }
  for (const std::string& file : hashFiles) std::remove(file.c_str());
  for (const std::string& file : logFiles) std::remove(file.c_str());
  rmdir(dir.c_str());
  EXPECT_EQ(leakedShmSegments(shmBefore), std::vector<std::string>{})
      << "shared-memory segments left behind in /dev/shm";
}

TEST(CollectivesHierarchical, TwoHostsOfTwoRanksHostMajor) {
  runOnHosts({0, 0, 1, 1}, "hierarchical collectives: 2 hosts x 2 ranks (host-major) (LOOM_ALGO=hierarchical)");
}

TEST(CollectivesHierarchical, TwoHostsOfTwoRanksInterleaved) {
  runOnHosts({0, 1, 0, 1}, "hierarchical collectives: 2 hosts x 2 ranks (interleaved) (LOOM_ALGO=hierarchical)");
}

// Three hosts (a ring between hosts of three), chosen by LOOM_ALGO=auto.
TEST(CollectivesHierarchical, ThreeHostsOfTwoRanksInterleavedByDefault) {
  runOnHosts({0, 1, 2, 0, 1, 2}, "hierarchical collectives: 3 hosts x 2 ranks (interleaved) (LOOM_ALGO=auto)", "auto");
}

TEST(CollectivesHierarchical, TwoPlusOneFallsBackToTheFlatRing) {
  runOnHosts({0, 0, 1}, "flat ring across hosts: hosts hold 2, 1 ranks (non-uniform)");
}

}  // namespace
}  // namespace loom::test
