// SPDX-License-Identifier: Apache-2.0
// The device reduction kernel's bandwidth against the device's own copy, and the exactness of
// every device kernel against the host's (device_kernel_exactness.h), through the process's
// device runtime (device/device_select.h): CUDA unless LOOM_DEVICE says otherwise. Prints
// Markdown; tests/gpu/run.sh runs it on the GPU machine.
//
//   device_kernel_bandwidth                  exactness, then 256 MiB float32 sum vs copy
//   device_kernel_bandwidth --bench-only --mib=1024 --iters=30 --batch=10
//   LOOM_DEVICE=emulated device_kernel_bandwidth --quick --mib=4 --iters=3
//
// Bandwidth counts what a call must move: the reduce reads two operands and writes one (3 x
// bytes), the copy reads one and writes one (2 x bytes). Each timed iteration enqueues --batch
// calls and waits for them, so the launch and the wait are spread over several calls; the
// reduce and the copy alternate, iteration by iteration, so both see the same clocks and
// temperature. Medians over --iters iterations (at least 10 unless asked otherwise).
// Exit status: 0, 1 on a mismatch or a failed call, 77 when there is no device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/version.h"
#include "device/device_select.h"
#include "perf/device_kernel_exactness.h"

namespace {

using loom::DeviceRuntime;
using loom::DeviceStream;

constexpr int kTimeoutMs = 60000;

struct Options {
  size_t mib = 256;
  int iters = 20;
  int batch = 10;
  bool check = true;
  bool bench = true;
  bool quick = false;
};

constexpr const char* kUsage =
    "usage: device_kernel_bandwidth [--mib=N] [--iters=N] [--batch=N] [--check-only | "
    "--bench-only] [--quick]\n"
    "  --mib=N       buffer size of the bandwidth run (default 256)\n"
    "  --iters=N     timed iterations; the median is reported (default 20)\n"
    "  --batch=N     calls per timed iteration (default 10)\n"
    "  --check-only  only the exactness check; --bench-only: only the bandwidth run\n"
    "  --quick       exactness on small sizes only (for the emulated GPU)\n"
    "  --version     print the version and exit\n"
    "The device runtime is LOOM_DEVICE's (default here: cuda).\n";

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr, "device_kernel_bandwidth: %s\n%s", problem, kUsage);
  std::exit(2);
}

long numberAfter(const std::string& argument, const std::string& prefix) {
  char* end = nullptr;
  const long value = std::strtol(argument.c_str() + prefix.size(), &end, 10);
  if (end == argument.c_str() + prefix.size() || *end != '\0' || value < 1)
    usage(("bad value in " + argument).c_str());
  return value;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--mib=", 0) == 0) {
      options.mib = static_cast<size_t>(numberAfter(argument, "--mib="));
    } else if (argument.rfind("--iters=", 0) == 0) {
      options.iters = static_cast<int>(numberAfter(argument, "--iters="));
    } else if (argument.rfind("--batch=", 0) == 0) {
      options.batch = static_cast<int>(numberAfter(argument, "--batch="));
    } else if (argument == "--check-only") {
      options.bench = false;
    } else if (argument == "--bench-only") {
      options.check = false;
    } else if (argument == "--quick") {
      options.quick = true;
    } else if (argument == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      usage(("unknown argument " + argument).c_str());
    }
  }
  return options;
}

// A device allocation, owned.
class DeviceBuffer {
 public:
  DeviceBuffer(DeviceRuntime& runtime, size_t bytes)
      : runtime_(runtime), data_(runtime.allocDevice(bytes)) {}
  ~DeviceBuffer() { runtime_.freeDevice(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }

 private:
  DeviceRuntime& runtime_;
  void* data_;
};

// A stream of the runtime, owned.
class Stream {
 public:
  explicit Stream(DeviceRuntime& runtime) : runtime_(runtime), stream_(runtime.createStream()) {}
  ~Stream() { runtime_.destroyStream(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  DeviceStream get() const { return stream_; }

 private:
  DeviceRuntime& runtime_;
  DeviceStream stream_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// Seconds per call of `enqueue` (called `batch` times, then one wait), one value per iteration.
template <typename Enqueue>
double timeBatch(DeviceRuntime& runtime, DeviceStream stream, int batch, const Enqueue& enqueue) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < batch; ++i) enqueue();
  runtime.synchronize(stream, kTimeoutMs);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batch;
}

void bench(DeviceRuntime& runtime, DeviceStream stream, const Options& options) {
  const size_t bytes = options.mib << 20;
  const size_t count = bytes / sizeof(float);
  DeviceBuffer a(runtime, bytes), b(runtime, bytes), dst(runtime, bytes);
  {
    // Small integers: every sum is exact, and no operand is a NaN or a subnormal that could
    // take a slower path on some GPU.
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1024);
    runtime.copyAsync(a.get(), host.data(), bytes, stream);
    runtime.copyAsync(b.get(), host.data(), bytes, stream);
    runtime.synchronize(stream, kTimeoutMs);
  }
  const auto reduce = [&] {
    runtime.reduceAsync(loomFloat32, loomSum, dst.get(), a.get(), b.get(), count, stream);
  };
  const auto copy = [&] { runtime.copyAsync(dst.get(), a.get(), bytes, stream); };
  timeBatch(runtime, stream, 2, reduce);  // warm-up: module load, clocks, TLB
  timeBatch(runtime, stream, 2, copy);
  std::vector<double> reduceSeconds, copySeconds;
  for (int i = 0; i < options.iters; ++i) {
    reduceSeconds.push_back(timeBatch(runtime, stream, options.batch, reduce));
    copySeconds.push_back(timeBatch(runtime, stream, options.batch, copy));
  }
  const double reduceMedian = median(reduceSeconds), copyMedian = median(copySeconds);
  const auto gbps = [](double movedBytes, double seconds) { return movedBytes / seconds / 1e9; };
  const auto range = [&](const std::vector<double>& seconds, double moved) {
    const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
    char text[64];
    std::snprintf(text, sizeof(text), "%.1f - %.1f", gbps(moved, *slowest), gbps(moved, *fastest));
    return std::string(text);
  };
  const double reduceMoved = 3.0 * static_cast<double>(bytes),
               copyMoved = 2.0 * static_cast<double>(bytes);
  std::printf("\n### Bandwidth: %zu MiB float32, median of %d iterations of %d calls\n\n",
              options.mib, options.iters, options.batch);
  std::printf(
      "| operation | bytes counted per call | median time per call | GB/s (median) | GB/s (min - "
      "max) |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  std::printf("| reduce float32 sum (2 reads + 1 write) | %zu MiB | %.1f us | %.1f | %s |\n",
              3 * options.mib, reduceMedian * 1e6, gbps(reduceMoved, reduceMedian),
              range(reduceSeconds, reduceMoved).c_str());
  std::printf("| device-to-device copy (1 read + 1 write) | %zu MiB | %.1f us | %.1f | %s |\n",
              2 * options.mib, copyMedian * 1e6, gbps(copyMoved, copyMedian),
              range(copySeconds, copyMoved).c_str());
  std::printf("\nreduce / copy bandwidth: %.3f\n",
              gbps(reduceMoved, reduceMedian) / gbps(copyMoved, copyMedian));
}

// The runtime this process uses, or exit 77 with the reason when it is "none".
DeviceRuntime& deviceOrExit() {
  setenv("LOOM_DEVICE", "cuda", /*overwrite=*/0);  // a GPU benchmark: CUDA unless told otherwise
  try {
    DeviceRuntime& runtime = loom::device::processRuntime();
    if (runtime.available()) return runtime;
    std::string why;
    loom::device::cudaRuntime(&why);
    std::printf("no CUDA device: the device runtime is \"none\" (%s)\n", why.c_str());
  } catch (const loom::Error& error) {
    std::printf("no CUDA device: %s\n", error.what());
  }
  std::exit(77);
}

}  // namespace

int main(int argc, char** argv) {
  loom::exitOnVersionFlag(argc, argv, "device_kernel_bandwidth");
  const Options options = parse(argc, argv);
  DeviceRuntime& runtime = deviceOrExit();
  try {
    std::printf("device runtime: %s, %d device(s), device %d\n", runtime.name(),
                runtime.deviceCount(), runtime.currentDevice());
    const Stream stream(runtime);
    int status = 0;
    if (options.check) {
      std::printf("\n### Exactness: every kernel against the host kernels%s\n\n",
                  options.quick ? " (quick sizes)" : "");
      const auto summary =
          loom::perf::checkDeviceKernels(runtime, stream.get(), options.quick, stdout);
      std::printf("\n%s: %d of %d cases bit-exact\n", summary.failures == 0 ? "PASS" : "FAIL",
                  summary.cases - summary.failures, summary.cases);
      if (summary.failures != 0) status = 1;
    }
    if (options.bench) bench(runtime, stream.get(), options);
    return status;
  } catch (const loom::Error& error) {
    std::printf("FAIL: %s\n", error.what());
    return 1;
  }
}
