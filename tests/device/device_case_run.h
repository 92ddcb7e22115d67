// SPDX-License-Identifier: Apache-2.0
// Runs one case of device_cases.h on one rank: first with host buffers, then with the case's
// placement of host and device buffers (the same starting bytes), and checks that the device
// run's output is bitwise the host run's, that it is the exact reference, and that the bytes
// around each device buffer are untouched. Ranks run as threads (loomCommInitAll) or as
// processes (loomrun); each keeps one RankRunner for all its cases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/device_runtime.h"
#include "loom.h"
#include "tests/device/device_cases.h"

namespace loom::test::device {

class RankRunner {
 public:
  // `runtime` is the process's device runtime; device buffers are made on `deviceIndex`.
  RankRunner(loomComm_t comm, int rank, int nranks, DeviceRuntime& runtime, int deviceIndex);
  ~RankRunner();
  RankRunner(const RankRunner&) = delete;
  RankRunner& operator=(const RankRunner&) = delete;

  // "" when the case passed; otherwise what was wrong. `k` is the case's position in the run
  // (its seed and its placement). Throws when a Loom call fails: the ranks are out of step.
  std::string run(const Case& c, size_t k);
  // The same with the placement given (deterministic mode's cases).
  std::string run(const Case& c, size_t k, Placement placement);

 private:
  struct Layout;
  Layout layoutOf(const Case& c) const;
  void fillImage(const Case& c, uint64_t seed, const Layout& layout);
  void call(const Case& c, const Layout& layout, void* sendBase, void* recvBase, bool sendIsRecv);
  std::string checkReference(const Case& c, uint64_t seed, const Layout& layout, const uint8_t* out) const;
  void* deviceArena(int which, size_t bytes);

  loomComm_t comm_;
  int rank_, nranks_;
  DeviceRuntime& runtime_;
  int device_;
  DeviceStream stream_ = nullptr;
  std::vector<uint8_t> sendImage_, recvImage_;  // starting bytes of each buffer, guards included
  std::vector<uint8_t> hostSend_, hostRecv_, hostOut_, deviceOut_;
  void* deviceArenas_[2] = {nullptr, nullptr};
  size_t deviceArenaBytes_[2] = {0, 0};
};

}  // namespace loom::test::device
