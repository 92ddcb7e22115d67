// SPDX-License-Identifier: Apache-2.0
// Device buffers with ranks as threads of one process (loomCommInitAll, each rank bound to
// its device list's entry): every collective and send/recv x datatype x op x in/out of place x
// odd counts, on 1-4 ranks, over shared memory and over TCP, with host and device buffers
// mixed per rank and per call; each result exact and bitwise the host-buffer result.
// The grid: device_cases.h's gridCases (LOOM_DEVICE_GRID).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "device/device_select.h"
#include "tests/device/device_case_run.h"
#include "tests/support/device_test_env.h"

namespace loom::test::device {
namespace {

struct GridParam {
  int nranks;
  const char* transport;  // "shm" or "tcp"
  bool twoDevices;        // rank r on device r % 2
};

std::string paramName(const testing::TestParamInfo<GridParam>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + info.param.transport +
         (info.param.twoDevices ? "_2devices" : "");
}

class DeviceThreads : public testing::TestWithParam<GridParam> {};

TEST_P(DeviceThreads, EveryCollectiveExactAndEqualToHostBuffers) {
  const GridParam param = GetParam();
  DeviceRuntime& runtime = loom::device::processRuntime();
  ASSERT_TRUE(runtime.available()) << "runtime " << runtime.name();
  if (param.twoDevices && runtime.deviceCount() < 2) GTEST_SKIP() << "needs two devices, the runtime has one";
  if (std::string(param.transport) == "tcp") {
    setenv("LOOM_SHM_DISABLE", "1", 1);
  } else {
    unsetenv("LOOM_SHM_DISABLE");
  }
  std::vector<int> devices(param.nranks);
  for (int rank = 0; rank < param.nranks; ++rank) devices[rank] = param.twoDevices ? rank % 2 : 0;
  std::vector<loomComm_t> comms(param.nranks);
  ASSERT_EQ(loomCommInitAll(comms.data(), param.nranks, devices.data()), loomSuccess) << loomGetLastError(nullptr);
  unsetenv("LOOM_SHM_DISABLE");

  const std::vector<Case> cases = gridCases(param.nranks);
  std::vector<std::vector<std::string>> failures(param.nranks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < param.nranks; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        RankRunner runner(comms[rank], rank, param.nranks, runtime, devices[rank]);
        for (size_t k = 0; k < cases.size(); ++k) {
          const std::string failure = runner.run(cases[k], k);
          if (!failure.empty() && failures[rank].size() < 5) failures[rank].push_back(cases[k].name() + ": " + failure);
        }
      } catch (const std::exception& error) {
        failures[rank].push_back(std::string("stopped: ") + error.what());
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int rank = 0; rank < param.nranks; ++rank) {
    for (const std::string& failure : failures[rank]) ADD_FAILURE() << "rank " << rank << ": " << failure;
    EXPECT_EQ(loomCommDestroy(comms[rank]), loomSuccess);
  }
  std::printf("%zu cases x %d ranks\n", cases.size(), param.nranks);
}

INSTANTIATE_TEST_SUITE_P(Grid, DeviceThreads,
                         testing::Values(GridParam{1, "shm", false}, GridParam{2, "shm", false},
                                         GridParam{4, "shm", true},
                                         GridParam{2, "tcp", true}, GridParam{3, "tcp", false},
                                         GridParam{4, "tcp", false}),
                         paramName);

}  // namespace
}  // namespace loom::test::device
