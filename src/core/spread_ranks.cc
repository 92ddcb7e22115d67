// SPDX-License-Identifier: Apache-2.0
#include "core/spread_ranks.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace loom {

int spreadCpu(const cpu_set_t& allowed, int localIndex) {
  const int count = CPU_COUNT(&allowed);
  if (count == 0 || localIndex < 0) return -1;
  int wanted = localIndex % count;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed) && wanted-- == 0) return cpu;
  }
  return -1;
}

int spreadCallingThread(int localIndex) {
  // The first oversubscribed communicator decides: a later one (a split, a subgroup) numbers
  // its local ranks differently and would undo the spread.
  static std::atomic<bool> spread{false};
  if (spread.exchange(true)) return -1;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    LOOM_INFO(INIT, "ranks not spread: sched_getaffinity: %s", std::strerror(errno));
    return -1;
  }
  const int cpu = spreadCpu(allowed, localIndex);
  if (cpu < 0 || CPU_COUNT(&allowed) == 1) return -1;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  // Setting a one-CPU mask migrates the thread before the call returns; giving the old mask
  // back does not move it again.
  if (sched_setaffinity(0, sizeof(one), &one) != 0) {
    LOOM_INFO(INIT, "ranks not spread: sched_setaffinity(cpu %d): %s", cpu, std::strerror(errno));
    return -1;
  }
  if (sched_setaffinity(0, sizeof(allowed), &allowed) != 0) {
    // Never leave the thread pinned: say so loudly if the old mask cannot be restored.
    LOOM_WARN(INIT, "could not restore the CPU mask after moving to cpu %d: %s", cpu, std::strerror(errno));
  }
  LOOM_INFO(INIT, "local rank %d starts on cpu %d (ranks outnumber cores)", localIndex, cpu);
  return cpu;
}

}  // namespace loom
