// SPDX-License-Identifier: Apache-2.0
#include "core/schedule_cache.h"

#include <cstring>

#include "base/error.h"

namespace loom {

const algo::Schedule& ScheduleCache::scheduleFor(const algo::CollectiveShape& shape) {
  // Everything a schedule depends on but the rank, the rank count, the piece size and the ring
  // order, which are fixed for the communicator's life.
  const Key key{static_cast<int>(shape.collective), shape.count, shape.elementBytes, shape.root, shape.average};
  auto it = schedules_.find(key);
  if (it != schedules_.end()) return it->second;
  if (schedules_.size() >= 256) schedules_.clear();
  return schedules_.emplace(key, algo::buildSchedule(shape)).first->second;
}

void* ScheduleCache::scratch(size_t bytes, int rank) {
  if (bytes <= scratchBytes_) return scratch_.get();
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* memory = std::aligned_alloc(4096, rounded);
  if (memory == nullptr) throwSystem("rank " + std::to_string(rank) + ": scratch of " + std::to_string(rounded) + " bytes", ENOMEM);
  std::memset(memory, 0, rounded);
  scratch_.reset(static_cast<char*>(memory));
  scratchBytes_ = rounded;
  return memory;
}

}  // namespace loom
