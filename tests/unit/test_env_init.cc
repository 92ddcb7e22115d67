// SPDX-License-Identifier: Apache-2.0
// loomCommInitFromEnv under each launcher's environment (loomrun, torchrun, Open MPI, Slurm):
// the ranks are forked processes that set their variables before the call; rank 0 hosts the
// rendezvous at the agreed address and the others retry until it is up. Missing or malformed
// variables fail fast with loomInvalidArgument and a message naming the variables.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/support/multiprocess.h"

namespace loom::test {
namespace {

const char* const kLauncherVariables[] = {
    "LOOM_RANK",    "LOOM_WORLD_SIZE",      "LOOM_COMM_ID",         "LOOM_COMM_SECRET",
    "RANK",         "WORLD_SIZE",           "MASTER_ADDR",          "MASTER_PORT",
    "LOCAL_RANK",   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
    "SLURM_NTASKS", "TORCHELASTIC_RUN_ID",  "SLURM_JOB_ID",         "SLURM_STEP_ID"};

void clearLauncherEnvironment() {
  for (const char* name : kLauncherVariables) unsetenv(name);
}

bool loopbackPortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

// A port p with p and p + 1 free right now (torchrun's MASTER_PORT convention may use either).
int freePortPair() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    close(fd);
    const int port = ntohs(address.sin_port);
    if (port > 0 && port < 65535 && loopbackPortFree(port) && loopbackPortFree(port + 1)) {
      return port;
    }
  }
  return -1;
}

// One rank of an env-initialised job: `setVariables(rank)` fills the environment, then the rank
// joins, checks its place, all-reduces and leaves.
void envRank(int rank, int n, const std::function<void(int)>& setVariables, bool delayRoot) {
  clearLauncherEnvironment();
  setVariables(rank);
  setenv("LOOM_TIMEOUT_MS", "30000", 1);
  // Rank 0 late: the others must retry until the root listens.
  if (delayRoot && rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  loomComm_t comm = nullptr;
  loomResult_t rc = loomCommInitFromEnv(&comm);
  LOOM_REQUIRE(rc == loomSuccess, std::string("loomCommInitFromEnv: ") + loomGetErrorString(rc) +
                                      ": " + loomGetLastError(nullptr));
  int count = -1, me = -1;
  LOOM_REQUIRE(loomCommCount(comm, &count) == loomSuccess && count == n, "loomCommCount");
  LOOM_REQUIRE(loomCommUserRank(comm, &me) == loomSuccess && me == rank, "loomCommUserRank");
  constexpr size_t kCount = 257;
  std::vector<int32_t> values(kCount, rank + 1), sums(kCount, 0);
  rc = loomAllReduce(values.data(), sums.data(), kCount, loomInt32, loomSum, comm, nullptr);
  LOOM_REQUIRE(rc == loomSuccess, std::string("allreduce: ") + loomGetLastError(comm));
  for (int32_t sum : sums) LOOM_REQUIRE(sum == n * (n + 1) / 2, "allreduce result");
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "destroy");
}

void runEnvJob(int n, const std::function<void(int)>& setVariables, bool delayRoot = false) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const auto outcomes = runProcesses(
      n, [&](int rank) { envRank(rank, n, setVariables, delayRoot); }, 90);
  for (const RankOutcome& outcome : outcomes) EXPECT_TRUE(outcome.ok()) << outcome.describe();
}

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

TEST(EnvInit, Loomrun) {
  const int port = freePortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
    setenv("LOOM_WORLD_SIZE", "3", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
    setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789ABCDEF", 1);
  });
}

TEST(EnvInit, LoomrunRootStartsLast) {
  const int port = freePortPair();
  ASSERT_GT(port, 0);
  runEnvJob(
      4,
      [&](int rank) {
        setenv("LOOM_RANK", std::to_string(rank).c_str(), 1);
        setenv("LOOM_WORLD_SIZE", "4", 1);
        setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
        setenv("LOOM_COMM_SECRET", "fedcba9876543210fedcba9876543210", 1);
      },
      /*delayRoot=*/true);
}

TEST(EnvInit, Torchrun) {
  const int port = freePortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "3", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    setenv("TORCHELASTIC_RUN_ID", "test-run-17", 1);
  });
}

TEST(EnvInit, OpenMpi) {
  const int port = freePortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("OMPI_COMM_WORLD_RANK", std::to_string(rank).c_str(), 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
    setenv("LOOM_COMM_SECRET", "00000000000000000000000000000001", 1);
  });
}

TEST(EnvInit, Slurm) {
  const int port = freePortPair();
  ASSERT_GT(port, 0);
  runEnvJob(3, [&](int rank) {
    setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_NTASKS", "3", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("LOOM_COMM_ID", loopback(port).c_str(), 1);
  });
}

// In this process: every case must fail before any rendezvous, so nothing can hang.
class EnvInitErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    clearLauncherEnvironment();
    setenv("LOOM_TIMEOUT_MS", "2000", 1);  // a wrongly accepted environment fails, not hangs
  }
  void TearDown() override {
    clearLauncherEnvironment();
    unsetenv("LOOM_TIMEOUT_MS");
  }

  // Expects loomInvalidArgument, fast, with a message mentioning every word in `names`.
  void expectInvalid(const std::vector<std::string>& names) {
    loomComm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const loomResult_t rc = loomCommInitFromEnv(&comm);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc == loomSuccess) loomCommDestroy(comm);
    EXPECT_EQ(rc, loomInvalidArgument) << loomGetErrorString(rc);
    EXPECT_LT(seconds, 2.0) << "an environment error must not wait for a rendezvous";
    const std::string message = loomGetLastError(nullptr);
    for (const std::string& name : names) {
      EXPECT_NE(message.find(name), std::string::npos)
          << "message does not name " << name << ": " << message;
    }
  }
};

TEST_F(EnvInitErrors, NoLauncherAtAllNamesEveryConvention) {
  expectInvalid({"LOOM_RANK", "LOOM_WORLD_SIZE", "LOOM_COMM_ID", "RANK", "WORLD_SIZE",
                 "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"});
}

TEST_F(EnvInitErrors, LoomRankWithoutTheRest) {
  setenv("LOOM_RANK", "0", 1);
  expectInvalid({"LOOM_WORLD_SIZE", "LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, OpenMpiWithoutCommId) {
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  expectInvalid({"LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, SlurmWithoutCommId) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "2", 1);
  expectInvalid({"LOOM_COMM_ID"});
}

TEST_F(EnvInitErrors, MalformedRank) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_COMM_ID", "127.0.0.1:1", 1);  // never contacted: the checks come first
  setenv("LOOM_RANK", "one", 1);
  expectInvalid({"LOOM_RANK"});
  setenv("LOOM_RANK", "2", 1);  // not in a world of 2
  expectInvalid({});
  setenv("LOOM_RANK", "-1", 1);
  expectInvalid({});
}

TEST_F(EnvInitErrors, MalformedSecret) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_RANK", "1", 1);
  setenv("LOOM_COMM_ID", "127.0.0.1:1", 1);  // never contacted: the checks come first
  setenv("LOOM_COMM_SECRET", "not-hex", 1);
  expectInvalid({"LOOM_COMM_SECRET"});
  setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdeg", 1);  // 32 chars, 'g' is not hex
  expectInvalid({"LOOM_COMM_SECRET"});
  setenv("LOOM_COMM_SECRET", "0123456789abcdef 123456789abcdef", 1);  // a space inside
  expectInvalid({"LOOM_COMM_SECRET"});
}

TEST_F(EnvInitErrors, MalformedCommId) {
  setenv("LOOM_WORLD_SIZE", "2", 1);
  setenv("LOOM_RANK", "1", 1);
  setenv("LOOM_COMM_SECRET", "0123456789abcdef0123456789abcdef", 1);
  setenv("LOOM_COMM_ID", "no-port-here", 1);
  expectInvalid({"no-port-here"});
  setenv("LOOM_COMM_ID", "127.0.0.1:99999", 1);
  expectInvalid({"99999"});
}

}  // namespace
}  // namespace loom::test
