// SPDX-License-Identifier: Apache-2.0
// Device buffers with ranks as processes: loomrun starts device_ranks (exec'd, as a device
// runtime requires), over shared memory and over TCP, 2-4 ranks, ranks alternating between the
// two emulated devices. Each rank checks its own results (device_case_run.h).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/support/device_test_env.h"

namespace {

struct ProcessParam {
  int nranks;
  const char* transport;
};

class DeviceProcesses : public testing::TestWithParam<ProcessParam> {};

TEST_P(DeviceProcesses, EveryCollectiveExactAndEqualToHostBuffers) {
  const char* loomrun = std::getenv("LOOMRUN");
  const char* worker = std::getenv("LOOM_DEVICE_RANKS_EXE");
  ASSERT_NE(loomrun, nullptr) << "LOOMRUN is not set (meson test sets it)";
  ASSERT_NE(worker, nullptr) << "LOOM_DEVICE_RANKS_EXE is not set (meson test sets it)";
  const ProcessParam param = GetParam();
  std::string command = std::string(param.transport) == "tcp" ? "LOOM_SHM_DISABLE=1 " : "LOOM_TRANSPORT=shm ";
  command += std::string(loomrun) + " -n " + std::to_string(param.nranks) + " --timeout 240 " + worker;
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << command;
  EXPECT_EQ(WEXITSTATUS(status), 0) << command;
}

INSTANTIATE_TEST_SUITE_P(Grid, DeviceProcesses,
                         testing::Values(ProcessParam{2, "shm"}, ProcessParam{4, "shm"}, ProcessParam{3, "tcp"}),
                         [](const testing::TestParamInfo<ProcessParam>& info) {
                           return std::to_string(info.param.nranks) + "ranks_" + info.param.transport;
                         });

}  // namespace
