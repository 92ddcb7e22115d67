// SPDX-License-Identifier: Apache-2.0
// A call whose buffers are host copies of device memory (core/device_staging.h) runs as any
// other, but its copies overlap the transfer, as NCCL's proxy overlaps its device copies with
// the network: the input arrives from the device piece by piece in the order the schedule first
// touches it, a step that touches staged memory starts once its part has arrived, and each part
// of the output goes back to the device as soon as no step is left to write it.
//
// StagedCopies is what the executor sees of the staging (implemented by the core); StagedWrites
// is the executor's bookkeeping of which output bytes are final. Both work on host addresses, so
// a call's buffers that overlap (the in-place forms) are one memory to them, as to the steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"

namespace loom::algo {

struct ExecutionBuffers;

class StagedCopies {
 public:
  virtual ~StagedCopies() = default;
  // Before the first step: the host memory the steps touch, in schedule order (repeats and
  // memory that is not staged included); the input's copies are queued in that order.
  virtual void expect(const char* begin, size_t bytes) = 0;
  virtual void startInput() = 0;
  // Whether every staged input byte of [begin, begin + bytes) is on the host (a step may read
  // or write it). Throws when a copy failed.
  virtual bool arrived(const char* begin, size_t bytes) = 0;
  // No step of the call writes [begin, begin + bytes) any more: its output may go back.
  virtual void finished(const char* begin, size_t bytes) = 0;
};

// Which bytes the steps still have to write, by host address.
class StagedWrites {
 public:
  // The steps' destinations in `buffers` (the scratch buffer aside, which is never staged).
  void build(const Schedule& schedule, const ExecutionBuffers& buffers);
  // Step `index` is done: tells `copies` each run of bytes that it was the last writer of.
  void done(const Schedule& schedule, int index, const ExecutionBuffers& buffers, StagedCopies& copies);

 private:
  std::vector<uintptr_t> bounds_;  // sorted, distinct: intervals [bounds_[i], bounds_[i + 1])
  std::vector<int> writers_;       // by interval: the steps not yet done that write into it
};

// The host memory a step writes (nothing for a send, or a range of the scratch buffer).
bool writesStagedMemory(const Step& step);

}  // namespace loom::algo
