// SPDX-License-Identifier: Apache-2.0
// Host reduction kernels in GB/s per datatype x op, beside memcpy and a STREAM triad, with
// operands in L1, in L2 and in DRAM (Google Benchmark). Ends with a summary of the float sums
// as a share of one core's triad bandwidth, measured in alternation with the triad (paired/*).
//
//   build/perf/micro/kernel_bench                       the variant the library uses
//   build/perf/micro/kernel_bench --isa=all             every variant this CPU supports
//   build/perf/micro/kernel_bench --all_ops             every op for every type
//   build/perf/micro/kernel_bench --benchmark_filter=64MiB --benchmark_repetitions=5
//
// --isa=best follows LOOM_HOST_ISA like the library. Times are CPU time of this one thread.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bandwidth_summary.h"
#include "base/version.h"
#include "kernel_cases.h"
#include "kernels/host/host_reduce_isa.h"
#include "micro_flags.h"
#include "recording_reporter.h"

namespace {

using loom::kernels::HostIsa;

std::vector<HostIsa> chosenIsas(const std::string& choice) {
  std::vector<HostIsa> isas;
  for (HostIsa isa : {HostIsa::Generic, HostIsa::Avx2, HostIsa::Avx512}) {
    if (!loom::kernels::hostIsaAvailable(isa)) continue;
    if (choice == "all" || choice == loom::kernels::hostIsaName(isa)) isas.push_back(isa);
  }
  if (choice == "best") isas.push_back(loom::kernels::bestHostIsa());
  if (isas.empty()) {
    std::fprintf(stderr, "--isa=%s: not available on this CPU\n", choice.c_str());
    std::exit(2);
  }
  return isas;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom::micro;
  loom::exitOnVersionFlag(argc, argv, "kernel_bench");
  const MicroFlags flags(argc, argv, {"isa", "all_ops"});
  KernelSelection selection;
  selection.isas =
      chosenIsas(flags.choice("isa", "best", {"best", "all", "generic", "avx2", "avx512"}));
  selection.allOps = flags.boolean("all_ops", false);

  auto reporter = RecordingReporter::forCommandLine(argc, argv);
  benchmark::Initialize(&argc, argv, printHelp);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  benchmark::AddCustomContext("loom_host_isa",
                              loom::kernels::hostIsaName(loom::kernels::bestHostIsa()));
  const KernelOperands operands(kSizeLevels[std::size(kSizeLevels) - 1].bytes);
  registerKernelCases(operands, selection);
  benchmark::RunSpecifiedBenchmarks(reporter.get());
  printBandwidthSummary(*reporter, selection, reporter->isConsole() ? stdout : stderr);
  benchmark::Shutdown();
  return reporter->anyError() ? 1 : 0;
}
