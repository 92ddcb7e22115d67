// SPDX-License-Identifier: Apache-2.0
// What the perf tools print (nccl-tests' layout, so existing log parsers keep working) and the
// optional JSON file (-J). Only rank 0 prints; the other ranks' Report stays silent.
#pragma once

#include <loom.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "perf/perf_backend.h"
#include "perf/perf_common.h"
#include "perf/perf_options.h"

namespace loom::perf {

struct PlaceResult {
  double timeUs = 0;
  double algbw = 0;  // GB/s (1e9 bytes per second)
  double busbw = 0;
  uint64_t wrong = 0;  // summed over ranks; meaningful when checked
  bool checked = false;
  bool measured = true;  // false: the collective has no such form; the columns print N/A
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;  // elements, all ranks' for all-gather / reduce-scatter
  loomDataType_t type = loomFloat32;
  const char* op = "none";
  int root = -1;
  PlaceResult outOfPlace, inPlace;
};

class Report {
 public:
  // `tool` is the program's name ("all_reduce_perf", "mpi_all_reduce_perf").
  Report(std::string tool, const BackendIdentity& backend, const Options& options, int nranks,
         bool printing);

  // `note`, when not empty, is one more "# " line after the backend's (lines joined by "\n# ").
  void header(const std::vector<RankPlace>& places, const std::string& note = "");
  void row(const Row& row);
  // Prints the footers, writes the JSON file; returns the total of wrong elements.
  uint64_t finish();
  // True when the JSON file could not be written (the tool then exits non-zero).
  bool failed() const { return jsonFailed_; }

 private:
  bool writeJson(uint64_t wrong) const;

  std::string tool_;
  BackendIdentity backend_;
  const Options& options_;
  int nranks_;
  bool printing_;
  bool jsonFailed_ = false;
  uint64_t wrong_ = 0;
  double busbwSum_ = 0;
  size_t busbwCount_ = 0;
  std::vector<Row> rows_;  // kept only for -J
};

// nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above.
std::string formatTimeUs(double us);

}  // namespace loom::perf
