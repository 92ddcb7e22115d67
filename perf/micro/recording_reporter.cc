// SPDX-License-Identifier: Apache-2.0
#include "recording_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loom::micro {

std::unique_ptr<RecordingReporter> RecordingReporter::forCommandLine(int argc, char** argv) {
  std::string format = "console";
  const char* prefix = "--benchmark_format=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      format = argv[i] + std::strlen(prefix);
    }
  }
  if (format == "console") {
    // Colour escapes would litter a file or a pipe.
    const auto options = isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color
                                               : benchmark::ConsoleReporter::OO_None;
    return std::unique_ptr<RecordingReporter>(
        new RecordingReporter(std::make_unique<benchmark::ConsoleReporter>(options), true));
  }
  if (format == "json") {
    return std::unique_ptr<RecordingReporter>(
        new RecordingReporter(std::make_unique<benchmark::JSONReporter>(), false));
  }
  std::fprintf(stderr,
               "--benchmark_format=%s: this program shows console or json (write CSV with "
               "--benchmark_out=FILE --benchmark_out_format=csv)\n",
               format.c_str());
  std::exit(2);
}

RecordingReporter::RecordingReporter(std::unique_ptr<benchmark::BenchmarkReporter> display,
                                     bool isConsole)
    : display_(std::move(display)), isConsole_(isConsole) {}

bool RecordingReporter::ReportContext(const Context& context) {
  return display_->ReportContext(context);
}

void RecordingReporter::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  for (const Run& run : runs) {
    if (run.error_occurred) {
      anyError_ = true;
      continue;
    }
    const std::string& name = run.run_name.function_name;
    for (const auto& [counterName, counter] : run.counters) {
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") medians_[name][counterName] = counter.value;
      } else {
        samples_[name][counterName].push_back(counter.value);
      }
    }
  }
}

void RecordingReporter::Finalize() { display_->Finalize(); }

double RecordingReporter::counter(const std::string& name, const std::string& counterName) const {
  if (const auto byName = medians_.find(name); byName != medians_.end()) {
    if (const auto value = byName->second.find(counterName); value != byName->second.end()) {
      return value->second;
    }
  }
  const auto byName = samples_.find(name);
  if (byName == samples_.end()) return 0;
  const auto values = byName->second.find(counterName);
  if (values == byName->second.end() || values->second.empty()) return 0;
  std::vector<double> sorted = values->second;
  std::sort(sorted.begin(), sorted.end());
  const size_t middle = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

}  // namespace loom::micro
