// SPDX-License-Identifier: Apache-2.0
#include "perf/perf_report.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <utility>

namespace loom::perf {
namespace {

const char* averageName(TimeAverage average) {
  switch (average) {
    case TimeAverage::kRank0:
      return "rank 0";
    case TimeAverage::kMean:
      return "mean over ranks";
    case TimeAverage::kMin:
      return "min over ranks";
    case TimeAverage::kMax:
      return "max over ranks";
  }
  return "?";
}

std::string wrongText(const PlaceResult& place) {
  return place.checked ? std::to_string(place.wrong) : "N/A";
}

// A JSON number; non-finite values (never expected) become null to keep the file valid.
std::string jsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string jsonPlace(const PlaceResult& place) {
  // The same keys either way, so every tool's file has one schema.
  if (!place.measured) {
    return "{\"time_us\": null, \"algbw_gbps\": null, \"busbw_gbps\": null, \"wrong\": null}";
  }
  return "{\"time_us\": " + jsonNumber(place.timeUs) +
         ", \"algbw_gbps\": " + jsonNumber(place.algbw) +
         ", \"busbw_gbps\": " + jsonNumber(place.busbw) +
         ", \"wrong\": " + (place.checked ? std::to_string(place.wrong) : "null") + "}";
}

}  // namespace

std::string formatTimeUs(double us) {
  char text[32];
  const char* format = us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f";
  std::snprintf(text, sizeof text, format, us);
  return text;
}

Report::Report(std::string tool, const BackendIdentity& backend, const Options& options, int nranks,
               bool printing)
    : tool_(std::move(tool)),
      backend_(backend),
      options_(options),
      nranks_(nranks),
      printing_(printing) {}

void Report::header(const std::vector<RankPlace>& places, const std::string& note) {
  if (!printing_) return;
  const bool factor = options_.stepFactor > 1;
  std::printf("# Collective test starting: %s\n", tool_.c_str());
  std::printf(
      "# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: 0\n",
      options_.threads, options_.minBytes, options_.maxBytes,
      factor ? options_.stepFactor : options_.stepBytes, factor ? "factor" : "bytes",
      options_.warmupIters, options_.iters, options_.aggIters, options_.check);
  if (options_.blocking) {
    std::printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  }
  std::printf("# %s, %d ranks, host memory; time: %s (-a %d)\n", backend_.banner.c_str(), nranks_,
              averageName(options_.average), static_cast<int>(options_.average));
  std::printf("# Backend: %s%s%s\n", backend_.name.c_str(), backend_.notes.empty() ? "" : "; ",
              backend_.notes.c_str());
  if (!note.empty()) std::printf("# %s\n", note.c_str());
  std::printf("#\n# Using devices\n");
  for (const RankPlace& place : places) {
    std::printf("#  Rank %2d Group  0 Pid %6d on %10.*s device  - [host] host memory\n", place.rank,
                place.pid, static_cast<int>(strnlen(place.host, sizeof place.host)), place.host);
  }
  std::printf("#\n");
  std::printf(
      "#                                                              out-of-place       "
      "                in-place          \n");
  std::printf(
      "#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n");
  std::printf(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)    "
      "        (us)  (GB/s)  (GB/s)       \n");
  std::fflush(stdout);
}

void Report::row(const Row& row) {
  for (const PlaceResult* place : {&row.outOfPlace, &row.inPlace}) {
    if (!place->measured) continue;
    if (place->checked) wrong_ += place->wrong;
    busbwSum_ += place->busbw;
    ++busbwCount_;
  }
  if (!options_.jsonPath.empty()) rows_.push_back(row);
  if (!printing_) return;
  std::printf("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, typeName(row.type), row.op,
              row.root);
  for (const PlaceResult* place : {&row.outOfPlace, &row.inPlace}) {
    if (!place->measured) {
      std::printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
      continue;
    }
    std::printf("  %7s  %6.2f  %6.2f  %5s", formatTimeUs(place->timeUs).c_str(), place->algbw,
                place->busbw, wrongText(*place).c_str());
  }
  if (options_.reportTimestamps) {
    // nccl-tests' -S: when the row finished, local time.
    char stamp[32] = "";
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
    std::printf("%21s", stamp);
  }
  std::printf("\n");
  std::fflush(stdout);
}

uint64_t Report::finish() {
  const double avgBusbw = busbwCount_ > 0 ? busbwSum_ / double(busbwCount_) : 0.0;
  if (printing_) {
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(wrong_),
                wrong_ != 0 ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g \n", avgBusbw);
    std::printf("#\n# Collective test concluded: %s\n", tool_.c_str());
    std::fflush(stdout);
    if (!options_.jsonPath.empty()) jsonFailed_ = !writeJson(wrong_);
  }
  return wrong_;
}

bool Report::writeJson(uint64_t wrong) const {
  std::FILE* file = std::fopen(options_.jsonPath.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s: %s\n", tool_.c_str(), options_.jsonPath.c_str(),
                 std::strerror(errno));
    return false;
  }
  double busbwSum = 0;
  size_t busbwCount = 0;
  std::fprintf(file,
               "{\n  \"tool\": %s,\n  \"backend\": %s,\n  \"library\": %s,\n  \"nranks\": %d,\n",
               jsonString(tool_).c_str(), jsonString(backend_.name).c_str(),
               jsonString(backend_.library).c_str(), nranks_);
  std::fprintf(file,
               "  \"options\": {\"minbytes\": %zu, \"maxbytes\": %zu, \"stepbytes\": %zu, "
               "\"stepfactor\": %zu, \"iters\": %d, \"warmup_iters\": %d, \"check\": %d, "
               "\"average\": %d, \"cycles\": %d, \"nthreads\": %d},\n",
               options_.minBytes, options_.maxBytes, options_.stepBytes, options_.stepFactor,
               options_.iters, options_.warmupIters, options_.check,
               static_cast<int>(options_.average), options_.cycles, options_.threads);
  std::fprintf(file, "  \"results\": [");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    for (const PlaceResult* place : {&row.outOfPlace, &row.inPlace}) {
      if (!place->measured) continue;
      busbwSum += place->busbw;
      ++busbwCount;
    }
    std::fprintf(file,
                 "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": %s, \"redop\": %s, "
                 "\"root\": %d,\n     \"out_of_place\": %s,\n     \"in_place\": %s}",
                 i == 0 ? "" : ",", row.bytes, row.count, jsonString(typeName(row.type)).c_str(),
                 jsonString(row.op).c_str(), row.root, jsonPlace(row.outOfPlace).c_str(),
                 jsonPlace(row.inPlace).c_str());
  }
  const double avg = busbwCount == 0 ? 0.0 : busbwSum / double(busbwCount);
  std::fprintf(file, "\n  ],\n  \"out_of_bounds\": %llu,\n  \"avg_bus_bandwidth\": %s\n}\n",
               static_cast<unsigned long long>(wrong), jsonNumber(avg).c_str());
  if (std::fclose(file) != 0) {
    std::fprintf(stderr, "%s: error writing %s\n", tool_.c_str(), options_.jsonPath.c_str());
    return false;
  }
  return true;
}

}  // namespace loom::perf
