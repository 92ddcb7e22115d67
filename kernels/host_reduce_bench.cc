// Standalone bandwidth check for the host kernels (not a unit test: timings do not belong in
// tests). Compares reduce() of each instruction-set variant with a STREAM-style triad on one
// core, both moving 3 bytes per input byte (two reads, one write).
//
//   ninja -C build kernels/host_reduce_bench
//   build/kernels/host_reduce_bench [KiB per array] [only this type name, e.g. bfloat16]
// The default (128 MiB) measures memory bandwidth; e.g. 256 KiB measures in-cache speed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/host_reduce.h"
#include "kernels/host_reduce_isa.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRepetitions = 7;

// Seconds per call of fn, best of kRepetitions timings of `calls` back-to-back calls.
template <typename Fn>
double bestSeconds(size_t calls, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < kRepetitions; ++r) {
    const auto start = Clock::now();
    for (size_t c = 0; c < calls; ++c) fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count() / calls);
  }
  return best;
}

// The reference one core can sustain: a[i] = b[i] + s * c[i].
__attribute__((noinline)) void triad(float* __restrict a, const float* __restrict b,
                                     const float* __restrict c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::kernels;
  const size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 128 * 1024) << 10;
  // Touch every page before timing so page faults are not measured. The byte patterns make
  // normal numbers for every float type (0x3c3c is about 1.06 in float16).
  std::vector<unsigned char> a(bytes, 0x3c), b(bytes, 0x3d), dst(bytes, 0);
  const double gb = 3.0 * static_cast<double>(bytes) / 1e9;

  std::vector<float> ta(bytes / 4, 0.0f), tb(bytes / 4, 1.0f), tc(bytes / 4, 2.0f);
  // Small arrays are timed over many calls, so each timing lasts milliseconds.
  const size_t calls = std::max<size_t>(1, (size_t{64} << 20) / bytes);
  const double triadSeconds =
      bestSeconds(calls, [&] { triad(ta.data(), tb.data(), tc.data(), 3.0f, ta.size()); });
  const double triadRate = gb / triadSeconds;
  std::printf("arrays of %zu KiB; triad %.2f GB/s; default variant: %s\n", bytes >> 10, triadRate,
              hostIsaName(bestHostIsa()));

  const loomDataType_t types[] = {loomFloat32, loomFloat16, loomBfloat16,
                                  loomFloat64, loomInt8,    loomInt32};
  for (HostIsa isa : {HostIsa::Generic, HostIsa::Avx2, HostIsa::Avx512}) {
    if (!hostIsaAvailable(isa)) continue;
    for (loomDataType_t type : types) {
      if (argc > 2 && std::strcmp(argv[2], typeName(type)) != 0) continue;
      const size_t count = bytes / typeSize(type);
      for (loomRedOp_t op : {loomSum, loomMax}) {
        const double outOfPlace = bestSeconds(
            calls, [&] { reduceWithIsa(isa, type, op, dst.data(), a.data(), b.data(), count); });
        const double inPlace = bestSeconds(
            calls, [&] { reduceWithIsa(isa, type, op, a.data(), a.data(), b.data(), count); });
        std::printf(
            "%-8s %-9s %-4s  %6.2f GB/s (%3.0f%% of triad)  in place %6.2f GB/s (%3.0f%%)\n",
            hostIsaName(isa), typeName(type), opName(op), gb / outOfPlace,
            100 * gb / outOfPlace / triadRate, gb / inPlace, 100 * gb / inPlace / triadRate);
      }
    }
  }
  return 0;
}
