// SPDX-License-Identifier: Apache-2.0
// What device buffers cost over shm and TCP, and how much of it the overlapped copies hide
// (core/device_staging.h). Ranks are threads of this process (loomCommInitAll, every rank on
// device 0), through the process's device runtime (LOOM_DEVICE; default here: cuda). Per size,
// all-reduce of float32 is timed in three set-ups of communicators made side by side:
//   host      host buffers: the floor, what the transfer itself costs;
//   whole     device buffers, LOOM_DEVICE_COPY_BYTES=0: the input copied to pinned memory before
//             the transfer starts, the output copied back after it ends;
//   overlap   device buffers, LOOM_DEVICE_COPY_BYTES as set (default 1 MiB): the copies in
//             pieces, alongside the transfer.
// plus "copies", each rank's device-to-host and host-to-device copy of the buffer alone, all
// ranks at once: what `whole` adds at most. "hidden" = (whole - overlap) / (whole - host), the
// share of the copies' cost the overlap removes. Repetitions alternate the set-ups; medians.
//
//   device_staging_perf [--ranks=N] [--mib=1,16,64] [--reps=N] [--iters=N] [--tcp]
// Exit status: 0, 1 on a wrong result or a failed call, 2 on a bad option, 77 without a device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/version.h"
#include "device/device_select.h"
#include "loom.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::DeviceRuntime;
using loom::DeviceStream;

constexpr int kTimeoutMs = 120000;

struct Options {
  int ranks = 2;
  std::vector<size_t> mib{1, 16, 64};
  int reps = 5;
  int iters = 5;
  bool tcp = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "device_staging_perf: %s\nusage: device_staging_perf [--ranks=N] [--mib=A,B,...] [--reps=N] "
               "[--iters=N] [--tcp]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (arg == "--version") {
      std::printf("device_staging_perf (Loom) %s\n", loom::versionString());
      std::exit(0);
    } else if (arg == "--tcp") {
      options.tcp = true;
    } else if (const char* v = value("--ranks")) {
      options.ranks = std::atoi(v);
    } else if (const char* v = value("--reps")) {
      options.reps = std::atoi(v);
    } else if (const char* v = value("--iters")) {
      options.iters = std::atoi(v);
    } else if (const char* v = value("--mib")) {
      options.mib.clear();
      for (std::string list = v; !list.empty();) {
        const size_t comma = list.find(',');
        const long mib = std::atol(list.substr(0, comma).c_str());
        if (mib <= 0) usage("bad --mib list");
        options.mib.push_back(static_cast<size_t>(mib));
        list = comma == std::string::npos ? "" : list.substr(comma + 1);
      }
    } else {
      usage("unknown option " + arg);
    }
  }
  if (options.ranks < 1 || options.ranks > 8 || options.reps < 1 || options.iters < 1) usage("bad count");
  return options;
}

enum Setup { kHost, kWhole, kOverlap, kCopies, kSetups };
const char* const kSetupNames[kSetups] = {"host", "whole", "overlap", "copies"};

// One rank's buffers (the largest size) and streams, kept for the whole run.
struct Rank {
  std::vector<float> host;  // host send/recv for the `host` set-up, and the pattern
  std::vector<float> hostRecv;
  float* deviceSend = nullptr;
  float* deviceRecv = nullptr;
  float* pinned = nullptr;  // the `copies` set-up's staging memory
  DeviceStream stream = nullptr;
};

void check(loomResult_t result, const char* what) {
  if (result != loomSuccess) {
    std::fprintf(stderr, "device_staging_perf: %s failed: %s\n", what, loomGetLastError(nullptr));
    std::exit(1);
  }
}

std::vector<loomComm_t> makeComms(int ranks, const char* copyBytes, bool tcp) {
  if (copyBytes != nullptr) setenv("LOOM_DEVICE_COPY_BYTES", copyBytes, 1);
  if (tcp) setenv("LOOM_SHM_DISABLE", "1", 1);
  std::vector<loomComm_t> comms(ranks);
  const std::vector<int> devices(ranks, 0);
  check(loomCommInitAll(comms.data(), ranks, devices.data()), "loomCommInitAll");
  unsetenv("LOOM_SHM_DISABLE");
  return comms;
}

// Runs `body(rank)` on one thread per rank and returns the slowest rank's seconds per iteration.
double timeRanks(int ranks, int iters, const std::function<void(int)>& body) {
  std::vector<double> seconds(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) body(rank);
      seconds[rank] = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    });
  }
  for (std::thread& thread : threads) thread.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  setenv("LOOM_DEVICE", "cuda", 0);
  DeviceRuntime& runtime = loom::device::processRuntime();
  if (!runtime.available() || runtime.deviceCount() < 1) {
    std::printf("device_staging_perf: no device (runtime %s): nothing to measure\n", runtime.name());
    return 77;
  }
  const int n = options.ranks;
  const size_t maxCount = *std::max_element(options.mib.begin(), options.mib.end()) << 18;  // float32
  std::vector<Rank> ranks(n);
  try {
    runtime.setCurrentDevice(0);
    for (int r = 0; r < n; ++r) {
      Rank& rank = ranks[r];
      rank.host.assign(maxCount, static_cast<float>(r + 1));
      rank.hostRecv.assign(maxCount, 0.0f);
      rank.stream = runtime.createStream();
      rank.deviceSend = static_cast<float*>(runtime.allocDevice(maxCount * sizeof(float)));
      rank.deviceRecv = static_cast<float*>(runtime.allocDevice(maxCount * sizeof(float)));
      rank.pinned = static_cast<float*>(runtime.allocPinnedHost(maxCount * sizeof(float)));
      std::memset(rank.pinned, 0, maxCount * sizeof(float));
      runtime.copyAsync(rank.deviceSend, rank.host.data(), maxCount * sizeof(float), rank.stream);
      runtime.copyAsync(rank.deviceRecv, rank.hostRecv.data(), maxCount * sizeof(float), rank.stream);
      runtime.synchronize(rank.stream, kTimeoutMs);
    }
  } catch (const loom::Error& error) {
    std::fprintf(stderr, "device_staging_perf: %s\n", error.what());
    return 1;
  }
  const char* overlapBytes = std::getenv("LOOM_DEVICE_COPY_BYTES");
  const std::string overlapText = overlapBytes != nullptr ? overlapBytes : "1048576 (default)";
  std::vector<loomComm_t> comms[kSetups];
  comms[kHost] = makeComms(n, nullptr, options.tcp);
  comms[kWhole] = makeComms(n, "0", options.tcp);
  comms[kOverlap] = makeComms(n, overlapBytes != nullptr ? overlapBytes : "1048576", options.tcp);

  std::printf("# device_staging_perf (Loom %s): all-reduce float32 sum, %d ranks (threads) over %s, runtime %s\n",
              loom::versionString(), n, options.tcp ? "TCP" : "shared memory", runtime.name());
  std::printf("# LOOM_DEVICE_COPY_BYTES of `overlap`: %s; medians of %d alternating repetitions of %d calls\n\n",
              overlapText.c_str(), options.reps, options.iters);
  std::printf("| MiB | host ms | whole ms | overlap ms | copies ms | whole/host | overlap/host | hidden |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int wrong = 0;
  for (size_t mib : options.mib) {
    const size_t count = mib << 18;
    std::vector<double> times[kSetups];
    for (int rep = 0; rep < options.reps; ++rep) {
      for (int s = 0; s < kSetups; ++s) {
        const Setup setup = static_cast<Setup>((s + rep) % kSetups);  // alternate which runs first
        try {
          times[setup].push_back(timeRanks(n, options.iters, [&](int r) {
            Rank& rank = ranks[r];
            if (setup == kCopies) {
              runtime.setCurrentDevice(0);
              runtime.copyAsync(rank.pinned, rank.deviceSend, count * sizeof(float), rank.stream);
              runtime.copyAsync(rank.deviceRecv, rank.pinned, count * sizeof(float), rank.stream);
              runtime.synchronize(rank.stream, kTimeoutMs);
              return;
            }
            const bool onDevice = setup != kHost;
            const void* send = onDevice ? static_cast<const void*>(rank.deviceSend) : rank.host.data();
            void* recv = onDevice ? static_cast<void*>(rank.deviceRecv) : rank.hostRecv.data();
            check(loomAllReduce(send, recv, count, loomFloat32, loomSum, comms[setup][r], nullptr), "loomAllReduce");
          }));
        } catch (const loom::Error& error) {
          std::fprintf(stderr, "device_staging_perf: %s\n", error.what());
          return 1;
        }
      }
    }
    // Every element of every rank's result is n (n + 1) / 2: one more call of each device
    // set-up (the `copies` runs overwrite the device output), then each rank's result's ends.
    const float expected = static_cast<float>(n * (n + 1) / 2);
    for (Setup setup : {kWhole, kOverlap}) {
      timeRanks(n, 1, [&](int r) {
        check(loomAllReduce(ranks[r].deviceSend, ranks[r].deviceRecv, count, loomFloat32, loomSum, comms[setup][r],
                            nullptr),
              "loomAllReduce");
      });
      for (int r = 0; r < n; ++r) {
        float ends[2] = {0, 0};
        runtime.copyAsync(&ends[0], ranks[r].deviceRecv, sizeof(float), ranks[r].stream);
        runtime.copyAsync(&ends[1], ranks[r].deviceRecv + count - 1, sizeof(float), ranks[r].stream);
        runtime.synchronize(ranks[r].stream, kTimeoutMs);
        if (ends[0] != expected || ends[1] != expected || ranks[r].hostRecv[count - 1] != expected) ++wrong;
      }
    }
    const double host = median(times[kHost]), whole = median(times[kWhole]), overlap = median(times[kOverlap]),
                 copies = median(times[kCopies]);
    std::printf("| %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f%% |\n", mib, host * 1e3, whole * 1e3,
                overlap * 1e3, copies * 1e3, whole / host, overlap / host,
                whole > host ? 100.0 * (whole - overlap) / (whole - host) : 0.0);
  }
  for (auto& set : comms) {
    for (loomComm_t comm : set) loomCommDestroy(comm);
  }
  for (Rank& rank : ranks) {
    runtime.freeDevice(rank.deviceSend);
    runtime.freeDevice(rank.deviceRecv);
    runtime.freePinnedHost(rank.pinned);
    runtime.destroyStream(rank.stream);
  }
  if (wrong != 0) std::printf("\n%d ranks' results were wrong\n", wrong);
  return wrong != 0 ? 1 : 0;
}
