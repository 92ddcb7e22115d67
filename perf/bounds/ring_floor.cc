// SPDX-License-Identifier: Apache-2.0
// ring_floor: the least time one call of a sendrecv ring can take with n processes on this host,
// the floor under `sendrecv_perf` and `mpi_sendrecv_perf` (each rank sends to the next and
// receives from the one before). In call i each process writes i into its own cache line (its
// send) and waits until the line of the process before it holds i (its receive): one line out
// and one line in per call, and nothing else.
//
//   ring_floor [--ranks 4] [--iters 100000] [--reps 3] [--bind] [--json]
//
// With more processes than CPUs a wait gives its CPU away after every look that finds nothing
// (sched_yield), as Loom's and OpenMPI's oversubscribed waits do, so the floor includes the
// context switches that sharing a CPU costs and the placement the kernel chooses: unbound, the
// processes go where the kernel puts them, as both libraries' ranks do in perf/compare_p2p.
// --bind pins process r to CPU r mod (CPUs), the layout `loomrun --bind core` and `mpirun
// --bind-to core` give. With a CPU each, waits spin. The figure is rank 0's time per call, the
// median over repetitions, in microseconds.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include "base/backoff.h"
#include "perf/bounds/bounds_support.h"
#include "perf/bounds/process_team.h"

namespace {

struct alignas(64) Line {
  std::atomic<long> value;
};

std::vector<int> allowedCpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  }
  return cpus;
}

struct Config {
  int ranks;
  long iters;
  int reps;
  bool bind;
  bool yieldWaits;  // more processes than CPUs
  std::vector<int> cpus;
};

// Runs calls (first, last] of the ring as process `rank`.
void calls(const Config& config, Line* lines, int rank, long first, long last) {
  Line& mine = lines[rank];
  const Line& before = lines[(rank + config.ranks - 1) % config.ranks];
  for (long i = first + 1; i <= last; ++i) {
    mine.value.store(i, std::memory_order_release);
    while (before.value.load(std::memory_order_acquire) < i) {
      if (config.yieldWaits) {
        sched_yield();
      } else {
        loom::cpuPause();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv,
                                     "[--ranks N (4)] [--iters N (100000)] [--reps N (3)] [--bind] [--json]");
  Config config;
  config.ranks = static_cast<int>(args.number("ranks", 4, 2, 256));
  config.iters = static_cast<long>(args.number("iters", 100000, 100, 1e9));
  config.reps = static_cast<int>(args.number("reps", 3, 1, 1000));
  config.bind = args.flag("bind");
  const bool json = args.flag("json");
  args.rejectUnknown();
  config.cpus = allowedCpus();
  if (config.cpus.empty()) config.cpus.push_back(0);
  config.yieldWaits = config.ranks > static_cast<int>(config.cpus.size());

  loom::bounds::SharedRegion shared(sizeof(Line) * (static_cast<size_t>(config.ranks) + 1));
  Line* lines = shared.as<Line>();
  double* perCallUs = reinterpret_cast<double*>(&lines[config.ranks]);  // rank 0's median
  const int status = loom::bounds::runProcesses(config.ranks, [&](int rank, const pid_t*) {
    if (config.bind) loom::bounds::pinToCpu(config.cpus[static_cast<size_t>(rank) % config.cpus.size()]);
    long done = 0;
    calls(config, lines, rank, done, done + config.iters / 10 + 1);  // warm: placement, caches
    done += config.iters / 10 + 1;
    std::vector<double> times;
    for (int rep = 0; rep < config.reps; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      calls(config, lines, rank, done, done + config.iters);
      done += config.iters;
      times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                      double(config.iters));
    }
    if (rank == 0) *perCallUs = loom::bounds::median(times);
    return 0;
  });
  if (status != 0) {
    std::fprintf(stderr, "ring_floor: a process failed\n");
    return 1;
  }
  const char* layout = config.bind ? "bound" : "unbound";
  loom::bounds::JsonLine line;
  line.add("tool", "ring_floor")
      .add("ranks", config.ranks)
      .add("cpus", static_cast<double>(config.cpus.size()))
      .add("layout", layout)
      .add("waits", config.yieldWaits ? "yield" : "spin")
      .add("per_call_us", *perCallUs);
  if (json) {
    std::printf("%s\n", line.str().c_str());
  } else {
    std::printf("# a sendrecv ring of %d processes on %zu CPUs (%s, waits %s), median of %d repetitions of %ld "
                "calls\n",
                config.ranks, config.cpus.size(), layout, config.yieldWaits ? "yield" : "spin", config.reps,
                config.iters);
    std::printf("%.3f us per call\n", *perCallUs);
  }
  return 0;
}
