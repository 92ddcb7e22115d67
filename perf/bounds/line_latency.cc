// SPDX-License-Identifier: Apache-2.0
// line_latency: how long one cache line takes to travel from one core to another, the floor of
// every small-message exchange over shared memory (an 8 B sendrecv moves at least one line each
// way, and a rank must see its peer's line before it can answer).
//
//   line_latency [--iters 1000000] [--reps 5] [--json]
//
// Two threads on different CPUs (pinned when there are two) play ping-pong with two lines: each
// waits (spinning, as Loom's and MPI's small-message paths do) for the other's counter, then
// bumps its own. A round trip is two one-way transfers plus two spin-loop detections; the
// figure is the median over repetitions, in nanoseconds.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/backoff.h"
#include "perf/bounds/bounds_support.h"

namespace {

struct alignas(64) Line {
  std::atomic<long> value{0};
};

// Round trips of `iters`, in ns each. `ping` is the caller's line, `pong` the other thread's.
double roundTripNs(long iters) {
  Line ping, pong;
  const bool twoCpus = std::thread::hardware_concurrency() >= 2;
  std::thread other([&] {
    if (twoCpus) loom::bounds::pinToCpu(1);
    for (long i = 1; i <= iters; ++i) {
      while (ping.value.load(std::memory_order_acquire) != i) loom::cpuPause();
      pong.value.store(i, std::memory_order_release);
    }
  });
  if (twoCpus) loom::bounds::pinToCpu(0);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 1; i <= iters; ++i) {
    ping.value.store(i, std::memory_order_release);
    while (pong.value.load(std::memory_order_acquire) != i) loom::cpuPause();
  }
  const auto stop = std::chrono::steady_clock::now();
  other.join();
  cpu_set_t all;
  CPU_ZERO(&all);
  for (unsigned c = 0; c < std::thread::hardware_concurrency(); ++c) CPU_SET(c, &all);
  (void)sched_setaffinity(0, sizeof(all), &all);
  return std::chrono::duration<double, std::nano>(stop - start).count() / double(iters);
}

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv, "[--iters N (1000000)] [--reps N (5)] [--json]");
  const long iters = static_cast<long>(args.number("iters", 1000000, 1000, 1e9));
  const int reps = static_cast<int>(args.number("reps", 5, 1, 1000));
  const bool json = args.flag("json");
  args.rejectUnknown();

  roundTripNs(iters / 10 + 1);  // warm: page faults, frequency, thread start
  std::vector<double> trips;
  for (int r = 0; r < reps; ++r) trips.push_back(roundTripNs(iters));
  const double roundTrip = loom::bounds::median(trips);
  loom::bounds::JsonLine line;
  line.add("tool", "line_latency").add("round_trip_ns", roundTrip).add("one_way_ns", roundTrip / 2);
  if (json) {
    std::printf("%s\n", line.str().c_str());
  } else {
    std::printf("# one cache line between two cores, median of %d repetitions of %ld round trips\n", reps, iters);
    std::printf("round trip %.1f ns, one way %.1f ns\n", roundTrip, roundTrip / 2);
  }
  return 0;
}
