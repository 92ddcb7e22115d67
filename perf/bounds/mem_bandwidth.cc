// SPDX-License-Identifier: Apache-2.0
// mem_bandwidth: this machine's DRAM bandwidth for read, write, copy and triad, on one core and
// on two cores at once (two threads with their own buffers, as two ranks of a job would run),
// and the single-copy bound it implies for a 2-rank all-reduce. perf/compare reads the --json
// line; without --json it prints a table.
//
//   mem_bandwidth [--mib 64] [--reps 9] [--threads 2] [--json]
//
// Bytes are counted as the kernels name them (STREAM's convention: a store's write-allocate
// read is not counted): read N, write N, copy 2N, triad 3N for N bytes per array. Arrays are
// far larger than the last-level cache and touched before timing.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "perf/bounds/bounds_support.h"

namespace {

using loom::bounds::kGB;
using loom::bounds::kMiB;
using loom::bounds::TouchedBuffer;

// The kernels are cloned per instruction set (and dispatched at load time), so the vector width
// matches what Loom's own kernels use on this CPU; noinline keeps each one a real pass over
// memory that the optimizer cannot fuse or drop.
#define BOUNDS_KERNEL __attribute__((noinline, target_clones("avx512f", "avx2", "default")))

BOUNDS_KERNEL uint64_t readAll(const uint64_t* __restrict a, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i) x ^= a[i];
  return x;
}

BOUNDS_KERNEL void writeAll(float* __restrict a, float value, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = value;
}

// memcpy, not a loop: it is what the transports use to move a message, so its rate (glibc's
// choice of instructions included) is the copy rate that matters for the bound.
__attribute__((noinline)) void copyAll(void* __restrict a, const void* __restrict b, size_t bytes) {
  std::memcpy(a, b, bytes);
}

BOUNDS_KERNEL void triadAll(float* __restrict a, const float* __restrict b,
                            const float* __restrict c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

// One thread's three arrays.
struct Arrays {
  explicit Arrays(size_t bytes) : a(bytes, 0), b(bytes, 1), c(bytes, 2) {}
  TouchedBuffer a, b, c;
};

struct Kernel {
  const char* name;
  double bytesPerArrayByte;  // named bytes moved per byte of one array
};
constexpr Kernel kKernels[] = {{"read", 1}, {"write", 1}, {"copy", 2}, {"triad", 3}};
constexpr size_t kCopy = 2, kTriad = 3;  // indexes into kKernels

volatile uint64_t readSink;  // keeps the read kernel's result alive

void runKernel(const std::string& name, Arrays& arrays) {
  const size_t bytes = arrays.a.size();
  const size_t floats = bytes / sizeof(float);
  if (name == "read") {
    readSink = readAll(arrays.b.as<uint64_t>(), bytes / sizeof(uint64_t));
  } else if (name == "write") {
    writeAll(arrays.a.as<float>(), static_cast<float>(readSink & 7), floats);
  } else if (name == "copy") {
    copyAll(arrays.a.bytes(), arrays.b.bytes(), bytes);
  } else {
    triadAll(arrays.a.as<float>(), arrays.b.as<float>(), arrays.c.as<float>(), 3.0f, floats);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv,
                                     "[--mib MiB per array (64)] [--reps N (9)] "
                                     "[--threads N (2)] [--json]");
  const size_t bytes = static_cast<size_t>(args.number("mib", 64, 1, 1 << 16)) * kMiB;
  const int reps = static_cast<int>(args.number("reps", 9, 1, 1000));
  const int threads = static_cast<int>(args.number("threads", 2, 1, 64));
  const bool json = args.flag("json");
  args.rejectUnknown();

  std::vector<Arrays> arrays;
  arrays.reserve(threads);
  for (int t = 0; t < threads; ++t) arrays.emplace_back(bytes);

  // Memory bandwidth on this VM drifts by 2x within seconds (neighbours), so repetitions are
  // interleaved: each one times every kernel on one core and then on all threads, and the bound
  // is derived within a repetition, from rates measured moments apart; medians are reported.
  constexpr size_t kKernelCount = std::size(kKernels);
  std::vector<double> one[kKernelCount], all[kKernelCount], bounds;
  size_t current = 0;  // the kernel the thread team runs
  loom::bounds::ThreadTeam team(threads,
                                [&](int t) { runKernel(kKernels[current].name, arrays[t]); });
  for (size_t k = 0; k < kKernelCount; ++k) runKernel(kKernels[k].name, arrays[0]);  // warm
  for (int r = 0; r < reps; ++r) {
    double rate[kKernelCount];
    for (current = 0; current < kKernelCount; ++current) {
      const double moved = kKernels[current].bytesPerArrayByte * double(bytes);
      one[current].push_back(
          moved / loom::bounds::timeSeconds([&] { runKernel(kKernels[current].name, arrays[0]); }) /
          kGB);
      rate[current] = threads * moved / team.runOnce() / kGB;
      all[current].push_back(rate[current]);
    }
    // Single-copy bound of a 2-rank all-reduce of N bytes over shared memory. Each rank reduces
    // its half straight from both inputs and copies the peer's reduced half once:
    //   reduce phase: read N/2 own + N/2 peer, write N/2 result -> 1.5 N named bytes,
    //                 triad-shaped (two reads per write), at the per-rank triad rate Rt
    //   copy phase:   read N/2 (the peer's result), write N/2   -> 1.0 N named bytes at the
    //                 per-rank copy rate Rc
    // Both ranks run at once, so each gets half of the two-core rate: Rt = triad_2 / 2,
    // Rc = copy_2 / 2. Time T = 1.5 N / Rt + 1.0 N / Rc, so the bound is
    //   algbw = N / T = 1 / (3 / triad_2 + 2 / copy_2)   (= busbw for 2 ranks).
    bounds.push_back(1.0 / (3.0 / rate[kTriad] + 2.0 / rate[kCopy]));
  }

  loom::bounds::JsonLine line;
  line.add("tool", "mem_bandwidth").add("array_bytes", double(bytes)).add("threads", threads);
  if (!json) {
    std::printf(
        "# arrays of %zu MiB per thread, median of %d interleaved repetitions; GB/s "
        "(1e9 B/s) of named bytes\n",
        bytes / kMiB, reps);
    std::printf("%-6s %12s %16s %12s\n", "kernel", "one core", "all threads", "per thread");
  }
  for (size_t k = 0; k < kKernelCount; ++k) {
    const double oneRate = loom::bounds::median(one[k]), allRate = loom::bounds::median(all[k]);
    line.add(std::string(kKernels[k].name) + "_1core_gbps", oneRate)
        .add(std::string(kKernels[k].name) + "_all_gbps", allRate);
    if (!json) {
      std::printf("%-6s %12.2f %16.2f %12.2f\n", kKernels[k].name, oneRate, allRate,
                  allRate / threads);
    }
  }
  // The formula assumes the two-core rates, i.e. exactly two threads.
  if (threads == 2) {
    const double bound = loom::bounds::median(bounds);
    line.add("allreduce2_single_copy_bound_gbps", bound);
    if (!json) {
      std::printf(
          "# 2-rank all-reduce single-copy bound: algbw = busbw = 1 / (3 / triad_2 + "
          "2 / copy_2) = %.2f GB/s\n",
          bound);
    }
  }
  if (json) std::printf("%s\n", line.str().c_str());
  return 0;
}
