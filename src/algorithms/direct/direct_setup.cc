// SPDX-License-Identifier: Apache-2.0
// How the ranks of a host agree on a direct engine: one shared arena for the communicator, and
// single-copy reads only where every rank may read every other (ptrace rules, Yama's
// ptrace_scope or a container's seccomp profile may forbid them).
#include <sched.h>

#include <cstdio>
#include <cstring>

#include "algorithms/direct/arena_engine.h"
#include "base/log.h"
#include "transport/shm/cross_memory.h"

namespace loom::algo {

uint64_t directProbeAddress() { return transport::crossMemoryProbeAddress(); }

namespace {

// Tries process_vm_readv on every peer; single-copy is used only if every rank could read every
// other, which every rank learns in one exchange.
bool everyRankReadsEveryOther(Bootstrap& bootstrap, const DirectSetup& setup) {
  const int nranks = bootstrap.size();
  std::vector<int32_t> readable(nranks, 0);
  if (setup.crossMemoryWanted) {
    int32_t ok = 1;
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == setup.rank) continue;
      uint64_t value = 0;
      const auto result = transport::crossMemoryRead(setup.pids[peer], setup.probes[peer], &value, sizeof(value));
      if (result.status != transport::CrossMemoryStatus::Ok || value != transport::crossMemoryProbeValue()) {
        LOOM_INFO(INIT, "comm %s: process_vm_readv from rank %d not possible (%s): no single-copy transfers",
                  setup.commName.c_str(), peer, result.error ? std::strerror(result.error) : "wrong value");
        ok = 0;
      }
    }
    readable[setup.rank] = ok;
  }
  bootstrap.allGather(readable.data(), sizeof(int32_t));
  bool all = setup.crossMemoryWanted;
  for (int32_t ok : readable) all = all && ok;
  return all;
}

}  // namespace

std::unique_ptr<DirectEngine> createDirectEngine(Bootstrap& bootstrap, DirectSetup setup) {
  char name[80];
  std::snprintf(name, sizeof(name), "/loom-%016llx-arena", static_cast<unsigned long long>(setup.commUid));
  std::unique_ptr<transport::ShmArena> arena;
  agreeOnOutcome(bootstrap, "shared arena", [&] {
    arena = transport::ShmArena::create(bootstrap, name, setup.settings.eagerBytes, setup.timeoutMs);
  });
  setup.settings.crossMemory = everyRankReadsEveryOther(bootstrap, setup);
  cpu_set_t cpus;
  const int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  setup.settings.oversubscribed = bootstrap.size() > cores;
  LOOM_INFO(INIT, "comm %s: direct collectives on (eager up to %zu bytes, single-copy %s)", setup.commName.c_str(),
            setup.settings.eagerBytes, setup.settings.crossMemory ? "on" : "off");
  return std::make_unique<ArenaEngine>(std::move(arena), std::move(setup.pids), setup.rank, setup.settings,
                                       setup.timeoutMs, setup.abortFlag);
}

}  // namespace loom::algo
