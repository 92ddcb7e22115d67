// SPDX-License-Identifier: Apache-2.0
// A display reporter that also remembers every result, so a benchmark program can print a
// summary that relates one benchmark to another (e.g. a kernel's bandwidth as a share of the
// triad's) after benchmark::RunSpecifiedBenchmarks().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace loom::micro {

class RecordingReporter final : public benchmark::BenchmarkReporter {
 public:
  // Wraps the reporter Google Benchmark would show for --benchmark_format: console (coloured
  // only on a terminal) or json. Reads argv without changing it; call before
  // benchmark::Initialize. Exits with a message for other formats.
  static std::unique_ptr<RecordingReporter> forCommandLine(int argc, char** argv);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // The value of a counter (e.g. "bytes_per_second") of the benchmark registered as `name`:
  // its median aggregate when it ran with repetitions, else the median of its runs. 0 when it
  // did not run (filtered out) or failed.
  double counter(const std::string& name, const std::string& counterName) const;
  // True if any benchmark reported an error (SkipWithError).
  bool anyError() const { return anyError_; }
  // True when the display is the console (a summary may go to stdout without breaking JSON).
  bool isConsole() const { return isConsole_; }

 private:
  RecordingReporter(std::unique_ptr<benchmark::BenchmarkReporter> display, bool isConsole);

  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  bool isConsole_;
  bool anyError_ = false;
  // Per benchmark name and counter: the median aggregate, or each run's value.
  std::map<std::string, std::map<std::string, double>> medians_;
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
};

}  // namespace loom::micro
