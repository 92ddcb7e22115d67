// SPDX-License-Identifier: Apache-2.0
// Processes for the perf/bounds tools that measure what ranks (separate processes, as in Loom's
// and MPI's jobs) can do at best: memory they all map, and a fork of n processes that run one
// body each. Processes rather than threads: a switch between two processes also changes the
// address space, and that is part of what an oversubscribed rank pays.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>

namespace loom::bounds {

// Anonymous shared memory, mapped before the fork so every process sees it at the same address;
// every page written once at construction (the VM's first touches are slow).
class SharedRegion {
 public:
  explicit SharedRegion(size_t bytes);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  unsigned char* bytes() const { return static_cast<unsigned char*>(memory_); }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(memory_);
  }

 private:
  void* memory_;
  size_t size_;
};

// Runs body(rank) in `processes` processes: rank 0 in the caller, ranks 1.. in forked children
// that exit with body's return value (1 when it throws; killed if rank 0 dies). Returns rank
// 0's value, or 1 when rank 0 succeeded and a child failed. Every process's id is in
// pids[0..processes) (pids[0] the caller's) before any body runs, for tools that address a peer
// by pid. A rank that dies mid-run leaves its peers waiting: the tools' callers
// (perf/compare_p2p, meson) time them out.
int runProcesses(int processes, const std::function<int(int rank, const pid_t* pids)>& body);

}  // namespace loom::bounds
