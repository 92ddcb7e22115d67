// SPDX-License-Identifier: Apache-2.0
#include "bandwidth_summary.h"
#include "base/datatype.h"

#include <string>
#include <vector>

#include "kernels/host/host_reduce.h"

namespace loom::micro {

using kernels::HostIsa;

namespace {

// The share of the triad each type's sum should reach at DRAM size.
double targetShare(loomDataType_t type) { return type == loomFloat32 ? 0.90 : 0.70; }

}  // namespace

void printBandwidthSummary(const RecordingReporter& results, const KernelSelection& selection,
                           FILE* out) {
  std::fprintf(out,
               "\nSummary: sum kernels against the triad of the same ISA, timed in alternation\n"
               "(GB/s = 1e9 bytes/s of dst + a + b; medians when repeated)\n");
  std::fprintf(out, "%-5s %-7s %-8s %-9s %9s %9s %8s\n", "level", "size", "isa", "type", "sum GB/s",
               "triad", "share");
  const SizeLevel& dram = kSizeLevels[std::size(kSizeLevels) - 1];
  std::vector<std::string> verdicts;
  for (const SizeLevel& size : kSizeLevels) {
    for (HostIsa isa : selection.isas) {
      for (loomDataType_t type : kPairedTypes) {
        const std::string name = pairedName(isa, type, size.bytes);
        const double share = results.counter(name, "share_of_triad");
        if (share == 0) continue;  // filtered out or failed
        std::fprintf(out, "%-5s %-7s %-8s %-9s %9.2f %9.2f %7.0f%%\n", size.level,
                     sizeText(size.bytes).c_str(), kernels::hostIsaName(isa),
                     typeName(type), results.counter(name, "bytes_per_second") / 1e9,
                     results.counter(name, "triad_bytes_per_second") / 1e9, 100 * share);
        if (&size != &dram) continue;
        const double target = targetShare(type);
        verdicts.push_back(
            std::string(kernels::hostIsaName(isa)) + " " + typeName(type) + " sum at " +
            sizeText(size.bytes) + ": " + std::to_string(static_cast<int>(100 * share + 0.5)) +
            "% of triad (target >= " + std::to_string(static_cast<int>(100 * target)) +
            "%): " + (share >= target ? "met" : "NOT met"));
      }
    }
  }
  for (const std::string& verdict : verdicts) std::fprintf(out, "%s\n", verdict.c_str());
}

}  // namespace loom::micro
