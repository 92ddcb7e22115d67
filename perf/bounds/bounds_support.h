// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the perf/bounds tools, which measure this machine's limits for perf/compare:
// page-touched buffers, timing and medians, running one body on several threads at once, command
// line numbers, and the one-line JSON records the comparison script reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace loom::bounds {

// A page-aligned buffer whose every page is written once at construction, so the slow first-touch
// page faults of this VM (~11-17 us per 4 KiB page) never fall inside a timed region.
class TouchedBuffer {
 public:
  explicit TouchedBuffer(size_t bytes, unsigned char fill = 0);
  unsigned char* bytes() const { return static_cast<unsigned char*>(memory_.get()); }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(memory_.get());
  }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* memory) const;
  };
  std::unique_ptr<void, Free> memory_;
  size_t size_;
};

// Pins the calling thread to one CPU; best effort (an unpinned run still measures).
void pinToCpu(int cpu);

// One look of a wait loop found nothing for the `idle`-th time in a row: a pause instruction
// (loom::cpuPause, base/backoff.h), and from the 100th on the CPU given away (sched_yield), so
// more processes than CPUs still make progress.
void waitBriefly(int idle);

// Median of the samples (the mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> samples);

// Wall seconds one call of body takes.
double timeSeconds(const std::function<void()>& body);

// Threads that run one body together, released at the same moment (as ranks of one job run),
// and stay alive across runs so thread creation is never timed. Thread 0 is the caller's.
// Releasing by a polled counter (not a futex wake) starts every thread within microseconds of
// the others, which matters when the point is to measure them competing for memory; the poll
// yields the core, so more threads than cores still make progress.
class ThreadTeam {
 public:
  ThreadTeam(int threads, std::function<void(int thread)> body);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  // Runs body(t) on every thread t once; returns the wall seconds from the release until the
  // last thread finished.
  double runOnce();

 private:
  void work(int thread);

  std::function<void(int)> body_;
  std::atomic<unsigned> generation_{0};
  std::atomic<int> finished_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

// "--name value" options. Unknown options and malformed numbers print the usage and exit 2;
// --help prints it and exits 0; --version prints "<program> (Loom) <version>" and exits 0.
class Arguments {
 public:
  Arguments(int argc, char** argv, std::string usage);
  // The number after --name, or fallback when absent; must lie in [low, high].
  double number(const std::string& name, double fallback, double low, double high) const;
  // True when the bare flag --name was given.
  bool flag(const std::string& name) const;
  // Fails (usage, exit 2) if any option was not queried by number() or flag().
  void rejectUnknown() const;

 private:
  [[noreturn]] void fail(const std::string& message) const;
  std::string program_;
  std::string usage_;
  std::vector<std::pair<std::string, std::string>> options_;  // name (no dashes), value or ""
  mutable std::vector<std::string> known_;
};

// One flat JSON object printed on a single line, e.g. {"tool": "mem_bandwidth", "x": 1.5}.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, const std::string& value);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& name);
  std::string body_;
};

constexpr double kGB = 1e9;  // bandwidths are decimal GB/s, as in nccl-tests
constexpr size_t kMiB = size_t{1} << 20;

}  // namespace loom::bounds
