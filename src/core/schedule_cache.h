// SPDX-License-Identifier: Apache-2.0
// Schedules a communicator has built, and the scratch memory they run with. Applications repeat
// the same few calls, and building a schedule costs more than a small message takes, so they
// are kept (up to 256 shapes; then the cache starts over). The scratch buffer is persistent and
// pre-faulted: fresh pages cost ~11 us each on this class of VM. Used by the turn holder only.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "algorithms/schedule.h"

namespace loom {

class ScheduleCache {
 public:
  const algo::Schedule& scheduleFor(const algo::CollectiveShape& shape);
  // At least `bytes` of zeroed, page-aligned memory; `rank` is for errors.
  void* scratch(size_t bytes, int rank);

 private:
  using Key = std::tuple<int, size_t, size_t, int, bool>;
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };

  std::map<Key, algo::Schedule> schedules_;
  std::unique_ptr<char, FreeDeleter> scratch_;
  size_t scratchBytes_ = 0;
};

}  // namespace loom
