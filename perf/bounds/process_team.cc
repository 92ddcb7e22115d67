// SPDX-License-Identifier: Apache-2.0
#include "perf/bounds/process_team.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

namespace loom::bounds {

SharedRegion::SharedRegion(size_t bytes) : size_(bytes > 0 ? bytes : 1) {
  memory_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory_ == MAP_FAILED) throw std::bad_alloc();
  std::memset(memory_, 0, size_);
}

SharedRegion::~SharedRegion() { munmap(memory_, size_); }

int runProcesses(int processes, const std::function<int(int rank, const pid_t* pids)>& body) {
  SharedRegion pidTable(sizeof(pid_t) * static_cast<size_t>(processes));
  pid_t* pids = pidTable.as<pid_t>();
  pids[0] = getpid();
  std::vector<pid_t> children;
  for (int rank = 1; rank < processes; ++rank) {
    std::fflush(nullptr);  // nothing buffered is printed twice
    const pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      for (pid_t started : children) kill(started, SIGKILL);
      for (pid_t started : children) waitpid(started, nullptr, 0);
      return 1;
    }
    if (child == 0) {
      // A child never outlives rank 0: a tool stopped by its caller's timeout leaves no ranks
      // spinning behind it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != pids[0]) _exit(1);  // rank 0 died before the line above
      // Every id is published before any body runs (the parent writes them in rank order).
      while (__atomic_load_n(&pids[processes - 1], __ATOMIC_ACQUIRE) == 0) sched_yield();
      int status = 1;
      try {
        status = body(rank, pids);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "rank %d: %s\n", rank, error.what());
      }
      std::fflush(nullptr);
      _exit(status);
    }
    __atomic_store_n(&pids[rank], child, __ATOMIC_RELEASE);
    children.push_back(child);
  }
  const int result = body(0, pids);
  int childFailure = 0;
  for (pid_t child : children) {
    int status = 0;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (childFailure == 0) childFailure = 1;
    }
  }
  return result != 0 ? result : childFailure;
}

}  // namespace loom::bounds
