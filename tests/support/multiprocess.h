// SPDX-License-Identifier: Apache-2.0
// Multi-process test support: fork N ranks, run a body in each, collect how each ended.
// A child reports failure by throwing (the message goes to stderr, exit code 1) or by
// exiting non-zero; the parent asserts on the collected results.
#pragma once

#include <loom.h>

#include <sys/mman.h>
#include <time.h>

#include <cstdint>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace loom::test {

struct RankOutcome {
  int rank = -1;
  int exitCode = -1;   // valid when signal == 0
  int signal = 0;      // the signal that killed it, 0 if it exited
  bool timedOut = false;
  bool ok() const { return signal == 0 && exitCode == 0 && !timedOut; }
  std::string describe() const;
};

// Forks `nranks` children; child `rank` runs body(rank) and _exits 0 on return, 1 on an
// exception (printed). Children still alive after `timeoutSeconds` are killed (timedOut).
std::vector<RankOutcome> runProcesses(int nranks, const std::function<void(int rank)>& body,
                                      int timeoutSeconds = 300);

// Like runProcesses, for ranks that rendezvous through a unique id: rank 0's child calls
// loomGetUniqueId and hands the id to the others through shared memory. The parent starts
// no thread before forking — a thread that holds an allocator lock at fork time leaves the
// child's allocator locked forever (glibc guards against that, AddressSanitizer does not).
std::vector<RankOutcome> runRanksWithUniqueId(
    int nranks, const std::function<void(int rank, const loomUniqueId& id)>& body,
    int timeoutSeconds = 300);

// Waits at most `seconds` for the forked child `pid` (killed if it is still running then):
// "" when it exited 0, else what became of it ("hung", "exited with 3", "killed by signal 6").
std::string awaitChild(pid_t pid, int seconds);

// Environment variables each rank sets before it initialises (LOOM_SHM_DISABLE, ...).
using RankEnv = std::vector<std::pair<std::string, std::string>>;

// Forks `nranks` ranks that set `env`, initialise one communicator together, run
// body(comm, rank) and destroy it (init and destroy must succeed). Returns whether every rank
// succeeded; a failed rank's outcome is printed on stderr.
bool runOnCommunicators(int nranks, const RankEnv& env, const std::function<void(loomComm_t, int)>& body,
                        int timeoutSeconds = 280);

// Microseconds on CLOCK_MONOTONIC: one clock for every process of the machine, so forked ranks
// can compare the times they record.
inline int64_t monotonicUs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

// A T in memory shared with the children forked while it lives (MAP_SHARED | MAP_ANONYMOUS):
// how ranks tell the test, and each other, when things happened. T must be trivially
// destructible (atomics, plain values).
template <class T>
class SharedAcrossFork {
 public:
  SharedAcrossFork() {
    void* memory = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap of the shared test state failed");
    value_ = new (memory) T();
  }
  ~SharedAcrossFork() { munmap(value_, sizeof(T)); }
  SharedAcrossFork(const SharedAcrossFork&) = delete;
  SharedAcrossFork& operator=(const SharedAcrossFork&) = delete;
  T* operator->() const { return value_; }
  T& operator*() const { return *value_; }

 private:
  T* value_;
};

// Throws std::runtime_error with `what` and the location when `condition` is false. For use
// inside children, where gtest assertions cannot report to the parent.
#define LOOM_REQUIRE(condition, what)                                                    \
  do {                                                                                   \
    if (!(condition))                                                                    \
      ::loom::test::requireFailed(#condition, (what), __FILE__, __LINE__);               \
  } while (0)
[[noreturn]] void requireFailed(const char* condition, const std::string& what, const char* file,
                                int line);

}  // namespace loom::test
