// SPDX-License-Identifier: Apache-2.0
// One rank of the device suite's process runs, started by loomrun (test_device_processes.cc):
// initialises from the launcher's environment on device (rank % devices), runs the device grid
// of test_device_threads.cc through RankRunner, prints each failure and exits 1 if there was
// any. A process of its own, exec'd: as with CUDA, a device runtime does not survive fork().
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "device/device_select.h"
#include "tests/device/device_case_run.h"
#include "tests/support/device_test_env.h"

using namespace loom::test::device;

int main() {
  try {
    loom::DeviceRuntime& runtime = loom::device::processRuntime();
    const char* rankText = std::getenv("LOOM_RANK");
    const int launcherRank = rankText != nullptr ? std::atoi(rankText) : 0;
    const int device = runtime.deviceCount() > 0 ? launcherRank % runtime.deviceCount() : 0;
    runtime.setCurrentDevice(device);
    loomComm_t comm = nullptr;
    if (loomCommInitFromEnv(&comm) != loomSuccess) {
      std::fprintf(stderr, "init failed: %s\n", loomGetLastError(nullptr));
      return 1;
    }
    int rank = 0, nranks = 0;
    loomCommUserRank(comm, &rank);
    loomCommCount(comm, &nranks);
    const std::vector<Case> cases = gridCases(nranks);  // LOOM_DEVICE_GRID, as the launcher passed it
    int failures = 0;
    {
      RankRunner runner(comm, rank, nranks, runtime, device);
      for (size_t k = 0; k < cases.size(); ++k) {
        const std::string failure = runner.run(cases[k], k);
        if (failure.empty()) continue;
        if (++failures <= 5) std::fprintf(stderr, "rank %d: %s: %s\n", rank, cases[k].name().c_str(), failure.c_str());
      }
    }
    if (loomCommDestroy(comm) != loomSuccess) return 1;
    if (rank == 0) std::printf("%zu cases on %d ranks, %d failed\n", cases.size(), nranks, failures);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "stopped: %s\n", error.what());
    return 1;
  }
}
