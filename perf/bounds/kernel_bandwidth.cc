// SPDX-License-Identifier: Apache-2.0
// kernel_bandwidth: Loom's host reduction kernels against a triad on one core at DRAM size.
// Both move three named bytes per input byte (two reads, one write), so the ratio says how
// close a kernel comes to what one core can stream. There is no public kernel API: this tool
// links the library's internal objects, as the unit tests do.
//
//   kernel_bandwidth [--mib 64] [--reps 15] [--json]
//
// The kernels run through loom::kernels::reduce(), i.e. the instruction-set variant the library
// picks on this CPU (LOOM_HOST_ISA can narrow it). GB/s are decimal; medians over repetitions.
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/host_reduce_isa.h"
#include "perf/bounds/bounds_support.h"

namespace {

using loom::bounds::kGB;
using loom::bounds::kMiB;

// The reference: a[i] = b[i] + s * c[i], cloned per instruction set like the kernels it is
// compared with, so neither side is handicapped by vector width.
__attribute__((noinline, target_clones("avx512f", "avx2", "default"))) void triad(
    float* __restrict a, const float* __restrict b, const float* __restrict c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

struct TypeName {
  loomDataType_t type;
  const char* key;  // for the JSON line
};
constexpr TypeName kTypes[] = {
    {loomFloat32, "float32"}, {loomFloat16, "float16"}, {loomBfloat16, "bfloat16"}};

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv,
                                     "[--mib MiB per array (64)] [--reps N (15)] [--json]");
  const size_t bytes = static_cast<size_t>(args.number("mib", 64, 1, 1 << 16)) * kMiB;
  const int reps = static_cast<int>(args.number("reps", 15, 1, 1000));
  const bool json = args.flag("json");
  args.rejectUnknown();

  // 0x3c / 0x3d bytes are normal numbers in every float type (0x3c3c is about 1.06 in float16),
  // so no kernel takes a slow denormal path.
  const loom::bounds::TouchedBuffer a(bytes, 0x3c), b(bytes, 0x3d), dst(bytes, 0);
  const double moved = 3.0 * double(bytes);
  const size_t floats = bytes / sizeof(float);
  auto runTriad = [&] { triad(dst.as<float>(), a.as<float>(), b.as<float>(), 3.0f, floats); };
  auto runReduce = [&](loomDataType_t type, bool inPlace) {
    // In place as a ring step does it: the running result is both an input and the output
    // (b is added over and over; with these values float16 stays far from overflow).
    const size_t count = bytes / loom::typeSize(type);
    loom::kernels::reduce(type, loomSum, dst.bytes(), inPlace ? dst.bytes() : a.bytes(), b.bytes(),
                          count);
  };
  runTriad();  // warm: the clone's resolution, the kernel table, TLB
  for (const TypeName& entry : kTypes) runReduce(entry.type, false);

  // Memory bandwidth here drifts by 2x within seconds, so every repetition times the triad and
  // then each kernel, and a kernel's ratio is taken against the triad of its own repetition.
  constexpr size_t kTypeCount = std::size(kTypes);
  std::vector<double> triadRates, rates[kTypeCount], ratios[kTypeCount], inPlaceRates[kTypeCount];
  for (int r = 0; r < reps; ++r) {
    const double triadRate = moved / loom::bounds::timeSeconds(runTriad) / kGB;
    triadRates.push_back(triadRate);
    for (size_t k = 0; k < kTypeCount; ++k) {
      const loomDataType_t type = kTypes[k].type;
      const double rate = moved / loom::bounds::timeSeconds([&] { runReduce(type, false); }) / kGB;
      rates[k].push_back(rate);
      ratios[k].push_back(rate / triadRate);
      inPlaceRates[k].push_back(moved / loom::bounds::timeSeconds([&] { runReduce(type, true); }) /
                                kGB);
    }
  }

  using loom::bounds::median;
  const char* isa = loom::kernels::hostIsaName(loom::kernels::bestHostIsa());
  loom::bounds::JsonLine line;
  line.add("tool", "kernel_bandwidth").add("array_bytes", double(bytes)).add("isa", isa);
  line.add("triad_gbps", median(triadRates));
  if (!json) {
    std::printf(
        "# one core, arrays of %zu MiB, median of %d interleaved repetitions, variant %s;"
        " GB/s counts 3 bytes per input byte\n",
        bytes / kMiB, reps, isa);
    std::printf("triad                 %7.2f GB/s\n", median(triadRates));
  }
  for (size_t k = 0; k < kTypeCount; ++k) {
    const std::string key = std::string(kTypes[k].key) + "_sum";
    line.add(key + "_gbps", median(rates[k]))
        .add(key + "_of_triad", median(ratios[k]))
        .add(key + "_inplace_gbps", median(inPlaceRates[k]));
    if (!json) {
      std::printf("%-8s sum          %7.2f GB/s (%3.0f%% of triad)   in place %7.2f GB/s\n",
                  kTypes[k].key, median(rates[k]), 100.0 * median(ratios[k]),
                  median(inPlaceRates[k]));
    }
  }
  if (json) std::printf("%s\n", line.str().c_str());
  return 0;
}
