// SPDX-License-Identifier: Apache-2.0
#include "algorithms/staged_copies.h"

#include <algorithm>

#include "algorithms/executor.h"
#include "algorithms/executor_lanes.h"

namespace loom::algo {

using executor_detail::bufferBase;

bool writesStagedMemory(const Step& step) {
  return step.kind != StepKind::Send && step.dst.bytes > 0 && step.dst.buffer != Buffer::Scratch;
}

namespace {
uintptr_t hostBegin(const ExecutionBuffers& buffers, const Range& range) {
  return reinterpret_cast<uintptr_t>(bufferBase(buffers, range.buffer) + range.offset);
}
}  // namespace

void StagedWrites::build(const Schedule& schedule, const ExecutionBuffers& buffers) {
  bounds_.clear();
  for (const Step& step : schedule.steps) {
    if (!writesStagedMemory(step)) continue;
    const uintptr_t begin = hostBegin(buffers, step.dst);
    bounds_.push_back(begin);
    bounds_.push_back(begin + step.dst.bytes);
  }
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  writers_.assign(bounds_.empty() ? 0 : bounds_.size() - 1, 0);
  for (const Step& step : schedule.steps) {
    if (!writesStagedMemory(step)) continue;
    const uintptr_t begin = hostBegin(buffers, step.dst);
    for (size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), begin) - bounds_.begin();
         bounds_[i] < begin + step.dst.bytes; ++i) {
      ++writers_[i];
    }
  }
}

void StagedWrites::done(const Schedule& schedule, int index, const ExecutionBuffers& buffers, StagedCopies& copies) {
  const Step& step = schedule.steps[index];
  if (!writesStagedMemory(step)) return;
  const uintptr_t begin = hostBegin(buffers, step.dst);
  const uintptr_t end = begin + step.dst.bytes;
  uintptr_t runBegin = 0, runEnd = 0;  // the run of final intervals being gathered
  for (size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), begin) - bounds_.begin(); bounds_[i] < end; ++i) {
    if (--writers_[i] != 0) continue;
    if (runEnd != bounds_[i]) {
      if (runEnd != runBegin) copies.finished(reinterpret_cast<const char*>(runBegin), runEnd - runBegin);
      runBegin = bounds_[i];
    }
    runEnd = bounds_[i + 1];
  }
  if (runEnd != runBegin) copies.finished(reinterpret_cast<const char*>(runBegin), runEnd - runBegin);
}

}  // namespace loom::algo
