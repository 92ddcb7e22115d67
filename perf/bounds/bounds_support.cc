// SPDX-License-Identifier: Apache-2.0
#include "perf/bounds/bounds_support.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>
#include <utility>

#include "base/backoff.h"
#include "base/version.h"

namespace loom::bounds {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

TouchedBuffer::TouchedBuffer(size_t bytes, unsigned char fill) : size_(bytes) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, std::max<size_t>(bytes, 64)) != 0) throw std::bad_alloc();
  memory_.reset(memory);
  std::memset(memory, fill, bytes);
}

void TouchedBuffer::Free::operator()(void* memory) const { std::free(memory); }

void pinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
}

void waitBriefly(int idle) {
  if (idle >= 100) {
    sched_yield();
    return;
  }
  loom::cpuPause();
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const size_t middle = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[middle] : 0.5 * (samples[middle - 1] + samples[middle]);
}

double timeSeconds(const std::function<void()>& body) {
  const Clock::time_point start = Clock::now();
  body();
  return secondsSince(start);
}

ThreadTeam::ThreadTeam(int threads, std::function<void(int)> body) : body_(std::move(body)) {
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { work(t); });
}

ThreadTeam::~ThreadTeam() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  for (std::thread& worker : workers_) worker.join();
}

double ThreadTeam::runOnce() {
  finished_.store(0, std::memory_order_release);
  const Clock::time_point start = Clock::now();
  generation_.fetch_add(1, std::memory_order_acq_rel);
  body_(0);
  const int others = static_cast<int>(workers_.size());
  while (finished_.load(std::memory_order_acquire) < others) std::this_thread::yield();
  return secondsSince(start);
}

void ThreadTeam::work(int thread) {
  unsigned seen = 0;
  for (;;) {
    unsigned now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    body_(thread);
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }
}

Arguments::Arguments(int argc, char** argv, std::string usage)
    : program_(argc > 0 ? argv[0] : "?"), usage_(std::move(usage) + " [--help] [--version]") {
  // Before any other argument is checked: --version answers whatever else is given.
  // npos + 1 == 0: a name without a folder is taken whole.
  const std::string_view name = std::string_view(program_).substr(program_.rfind('/') + 1);
  exitOnVersionFlag(argc, argv, name);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s %s\n", program_.c_str(), usage_.c_str());
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) fail("unexpected argument '" + arg + "'");
    const size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      options_.emplace_back(arg.substr(2, equals - 2), arg.substr(equals + 1));
    } else if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
      options_.emplace_back(arg.substr(2), argv[++i]);
    } else {
      options_.emplace_back(arg.substr(2), "");
    }
  }
}

double Arguments::number(const std::string& name, double fallback, double low, double high) const {
  known_.push_back(name);
  for (const auto& [key, text] : options_) {
    if (key != name) continue;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value) || value < low || value > high) {
      char range[64];
      std::snprintf(range, sizeof range, "[%g, %g]", low, high);
      fail("--" + name + " needs a number in " + range + ", got '" + text + "'");
    }
    return value;
  }
  return fallback;
}

bool Arguments::flag(const std::string& name) const {
  known_.push_back(name);
  for (const auto& [key, text] : options_) {
    if (key != name) continue;
    if (!text.empty()) fail("--" + name + " takes no value");
    return true;
  }
  return false;
}

void Arguments::rejectUnknown() const {
  for (const auto& option : options_) {
    if (std::find(known_.begin(), known_.end(), option.first) == known_.end()) {
      fail("unknown option --" + option.first);
    }
  }
}

void Arguments::fail(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_.c_str(), message.c_str(),
               program_.c_str(), usage_.c_str());
  std::exit(2);
}

void JsonLine::key(const std::string& name) {
  if (!body_.empty()) body_ += ", ";
  body_ += "\"" + name + "\": ";
}

JsonLine& JsonLine::add(const std::string& name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    body_ += "null";
    return *this;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  body_ += text;
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, const std::string& value) {
  key(name);
  // Keys and values here are fixed identifiers chosen by the tools: no escaping is needed.
  body_ += "\"" + value + "\"";
  return *this;
}

}  // namespace loom::bounds
