// SPDX-License-Identifier: Apache-2.0
#include "multiprocess.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <new>
#include <thread>

namespace loom::test {

std::string RankOutcome::describe() const {
  if (timedOut) return "rank " + std::to_string(rank) + " timed out";
  if (signal != 0) {
    return "rank " + std::to_string(rank) + " killed by signal " + std::to_string(signal) + " (" +
           strsignal(signal) + ")";
  }
  return "rank " + std::to_string(rank) + " exited with " + std::to_string(exitCode);
}

void requireFailed(const char* condition, const std::string& what, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": requirement `" +
                           condition + "` failed: " + what);
}

std::vector<RankOutcome> runProcesses(int nranks, const std::function<void(int)>& body,
                                      int timeoutSeconds) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  std::vector<RankOutcome> outcomes(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    outcomes[rank].rank = rank;
    pid_t pid = fork();
    if (pid < 0) {
      throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
      int code = 0;
      try {
        body(rank);
      } catch (const std::exception& error) {
        std::fprintf(stderr, "[rank %d] FAILED: %s\n", rank, error.what());
        code = 1;
      } catch (...) {
        std::fprintf(stderr, "[rank %d] FAILED: unknown exception\n", rank);
        code = 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);  // skip gtest's and static destructors of the parent's state
    }
    pids[rank] = pid;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int remaining = nranks;
  auto sleepFor = std::chrono::microseconds(200);
  while (remaining > 0) {
    bool reaped = false;
    for (int rank = 0; rank < nranks; ++rank) {
      if (pids[rank] < 0) continue;
      int status = 0;
      pid_t done = waitpid(pids[rank], &status, WNOHANG);
      if (done != pids[rank]) continue;
      if (WIFEXITED(status)) outcomes[rank].exitCode = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) outcomes[rank].signal = WTERMSIG(status);
      pids[rank] = -1;
      --remaining;
      reaped = true;
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int rank = 0; rank < nranks; ++rank) {
        if (pids[rank] < 0) continue;
        kill(pids[rank], SIGKILL);
        waitpid(pids[rank], nullptr, 0);
        outcomes[rank].timedOut = true;
        pids[rank] = -1;
      }
      break;
    }
    // Back off: the children need the cores more than we do.
    if (!reaped) {
      std::this_thread::sleep_for(sleepFor);
      sleepFor = std::min(sleepFor * 2, std::chrono::microseconds(20000));
    }
  }
  return outcomes;
}

}  // namespace loom::test

namespace loom::test {

std::vector<RankOutcome> runRanksWithUniqueId(int nranks,
                                              const std::function<void(int, const loomUniqueId&)>& body,
                                              int timeoutSeconds) {
  struct Shared {
    std::atomic<int> state;  // 0 pending, 1 published, 2 rank 0 failed
    loomUniqueId id;
  };
  void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
  auto* shared = new (memory) Shared{};
  auto outcomes = runProcesses(
      nranks,
      [&](int rank) {
        if (rank == 0) {
          loomUniqueId id;
          if (loomGetUniqueId(&id) != loomSuccess) {
            shared->state.store(2);
            throw std::runtime_error(std::string("loomGetUniqueId: ") + loomGetLastError(nullptr));
          }
          shared->id = id;
          shared->state.store(1, std::memory_order_release);
        } else {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
          while (shared->state.load(std::memory_order_acquire) == 0) {
            if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no unique id from rank 0");
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          if (shared->state.load() == 2) throw std::runtime_error("rank 0 could not create the unique id");
        }
        body(rank, shared->id);
      },
      timeoutSeconds);
  munmap(memory, sizeof(Shared));
  return outcomes;
}

bool runOnCommunicators(int nranks, const RankEnv& env, const std::function<void(loomComm_t, int)>& body,
                        int timeoutSeconds) {
  const auto outcomes = runRanksWithUniqueId(
      nranks,
      [&](int rank, const loomUniqueId& id) {
        for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
        loomComm_t comm = nullptr;
        const loomResult_t init = loomCommInitRank(&comm, nranks, id, rank);
        LOOM_REQUIRE(init == loomSuccess, std::string("init: ") + loomGetLastError(nullptr));
        body(comm, rank);
        const loomResult_t destroyed = loomCommDestroy(comm);
        LOOM_REQUIRE(destroyed == loomSuccess, std::string("destroy: ") + loomGetLastError(nullptr));
      },
      timeoutSeconds);
  bool ok = true;
  for (const RankOutcome& outcome : outcomes) {
    if (!outcome.ok()) std::fprintf(stderr, "%s\n", outcome.describe().c_str());
    ok = ok && outcome.ok();
  }
  return ok;
}

std::string awaitChild(pid_t pid, int seconds) {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > giveUp) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "" : "exited with " + std::to_string(WEXITSTATUS(status));
  return "killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace loom::test
