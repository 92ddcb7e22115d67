// SPDX-License-Identifier: Apache-2.0
// One rank of a job on the K-host harness (tests/hosts/loomhosts.py). It joins through the
// launcher's environment (loomCommInitFromEnv: torchrun's or mpirun's variables, as the harness
// sets them) and runs one of:
//   host_rank check [BIG_COUNT]   every collective over the case matrix of the multi-process
//                                 suites (tests/mp/collective_checks.h: every type, op, in and out
//                                 of place, odd counts, roots), then all-to-all, all-to-all-v,
//                                 gather, scatter, send/recv (a ring and all pairs in one group)
//                                 and a barrier, each checked exactly; prints "hash <case> <h>"
//                                 for results every rank must hold alike (the runner compares
//                                 them across ranks) and "FAIL <what>" for each wrong result.
//   host_rank deterministic       under LOOM_DETERMINISTIC=1: all-reduce, reduce-scatter and reduce
//                                 of float32/float64 sum and avg on non-integer values; prints
//                                 "det <rank> <case> <hash>" (alike under every layout)
//   host_rank loop COUNT          all-reduces COUNT floats until a call fails (host failures):
//                                 prints "ready" after a few calls, then on failure "error: <last
//                                 error>", aborts the communicator and prints what it still holds
//                                 open ("fds: before B after A memfd M"), exit 3.
//   host_rank latency COUNT N     N timed all-reduces of COUNT floats after a warm-up; rank 0
//                                 prints "median_us <t>".
// Exit codes: 0 right, 1 a wrong result, 2 init failed, 3 a call failed.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "loom.h"
#include "tests/hosts/host_rank_mesh.h"
#include "tests/mp/collective_checks.h"

namespace {

using loom::test::Case;

struct Job {
  loomComm_t comm = nullptr;
  int rank = 0;
  int n = 0;
};

bool join(Job& job) {
  if (loomCommInitFromEnv(&job.comm) != loomSuccess) {
    std::fprintf(stderr, "init failed: %s\n", loomGetLastError(nullptr));
    return false;
  }
  loomCommUserRank(job.comm, &job.rank);
  loomCommCount(job.comm, &job.n);
  return true;
}

int check(const Job& job, size_t bigCount) {
  loom::test::MatrixOptions options;
  options.smallCounts = {0, 1, 7, 1001};
  options.bigCount = bigCount;
  const std::vector<Case> cases = loom::test::buildCases(job.n, options);
  loom::test::reserveCaseArenas(cases, job.n);
  size_t failed = 0;
  double seconds = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    uint64_t hash = 0;
    // A call that fails throws: the ranks are out of step, so the job ends here.
    const std::string problem =
        loom::test::runCase(cases[k], loom::test::mix64(k + 7919), job.rank, job.n, job.comm, &hash, &seconds);
    if (!problem.empty()) {
      ++failed;
      std::printf("FAIL %s:%s\n", cases[k].name().c_str(), problem.c_str());
    }
    if (cases[k].replicated()) std::printf("hash %s %llu\n", cases[k].name().c_str(), (unsigned long long)hash);
  }
  failed += loom::test::checkMeshCollectives(job.comm, job.rank, job.n);
  std::printf("checked %zu collective cases and the mesh collectives: %zu wrong\n", cases.size(), failed);
  return failed == 0 ? 0 : 1;
}

// Deterministic mode's promise: all-reduce, reduce-scatter and reduce give bitwise the same
// result whatever the layout, algorithm or transport. Values are not integers here, spread
// over magnitudes, so that any other order of summation would round differently; each rank
// prints "det <rank> <case> <hash>" and the runner compares the lines between layouts.
template <class T>
void deterministicCase(const Job& job, loomDataType_t type, loomRedOp_t op, size_t count, const char* name) {
  std::vector<T> send(count * job.n), recv(count * job.n);
  for (size_t i = 0; i < send.size(); ++i) {
    const uint64_t bits = loom::test::mix64(static_cast<uint64_t>(job.rank) * 1000003 + i);
    const double unit = static_cast<double>(bits >> 11) / static_cast<double>(1ull << 53) - 0.5;
    send[i] = static_cast<T>(unit * std::pow(10.0, static_cast<double>(bits % 7)));
  }
  const auto require = [&](loomResult_t rc, const char* what) {
    if (rc != loomSuccess) throw std::runtime_error(std::string(what) + ": " + loomGetLastError(job.comm));
  };
  const auto print = [&](const char* what, const T* data, size_t elements) {
    std::printf("det %d %s/%s/%s/count%zu %llu\n", job.rank, what, name, op == loomAvg ? "avg" : "sum", count,
                (unsigned long long)loom::test::hashBytes(data, elements * sizeof(T)));
  };
  require(loomAllReduce(send.data(), recv.data(), count, type, op, job.comm, nullptr), "all-reduce");
  print("allreduce", recv.data(), count);
  require(loomReduceScatter(send.data(), recv.data(), count, type, op, job.comm, nullptr), "reduce-scatter");
  print("reducescatter", recv.data(), count);
  require(loomReduce(send.data(), recv.data(), count, type, op, job.n - 1, job.comm, nullptr), "reduce");
  if (job.rank == job.n - 1) print("reduce", recv.data(), count);
}

int deterministic(const Job& job) {
  for (size_t count : {1, 7, 1001, 65539}) {
    for (loomRedOp_t op : {loomSum, loomAvg}) {
      deterministicCase<float>(job, loomFloat32, op, count, "float32");
      deterministicCase<double>(job, loomFloat64, op, count, "float64");
    }
  }
  return 0;
}

struct OpenFiles {
  int all = 0;
  int memfds = 0;
  std::vector<std::string> targets;  // what each descriptor is ("socket:[123]", "/memfd:x")
};

// "socket:[inode]" -> "listening socket :PORT" when /proc/net/tcp{,6} list it as listening, so a
// test can tell the bootstrap root's listener (kept to answer late ranks: the root's tombstone,
// bootstrap/root_tombstone.h) from a connection left open.
std::string describeSocket(const std::string& target) {
  unsigned long inode = 0;
  if (std::sscanf(target.c_str(), "socket:[%lu]", &inode) != 1) return target;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* file = std::fopen(table, "r");
    if (file == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof(line), file) != nullptr) {
      char local[64] = {};
      unsigned state = 0;
      unsigned long lineInode = 0;
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, " %*s %63s %*s %x %*s %*s %*s %*s %*s %lu", local, &state, &lineInode) == 3 &&
          lineInode == inode && state == 0x0A) {
        std::fclose(file);
        const char* port = std::strrchr(local, ':');
        return "listening socket :" + std::to_string(port ? std::strtoul(port + 1, nullptr, 16) : 0);
      }
    }
    std::fclose(file);
  }
  return target;
}

OpenFiles openFiles() {
  OpenFiles files;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return files;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char target[256] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    if (readlink(link.c_str(), target, sizeof(target) - 1) < 0) continue;
    ++files.all;
    if (std::strncmp(target, "/memfd:", 7) == 0) ++files.memfds;
    files.targets.push_back(target);
  }
  closedir(dir);
  // The directory's own descriptor was counted while open.
  --files.all;
  return files;
}

int loop(Job& job, size_t count, OpenFiles before) {
  std::vector<float> data(count, 1.0f);
  auto lastReturn = std::chrono::steady_clock::now();
  for (long iteration = 1;; ++iteration) {
    if (loomAllReduce(data.data(), data.data(), count, loomFloat32, loomSum, job.comm, nullptr) != loomSuccess) {
      const auto stalled = std::chrono::steady_clock::now() - lastReturn;
      std::printf("error: %s\n", loomGetLastError(job.comm));
      std::printf("failed %lld ms after its last call\n",
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(stalled).count()));
      std::fflush(stdout);
      loomCommAbort(job.comm);
      const OpenFiles after = openFiles();
      std::string added;
      for (const std::string& target : after.targets) {
        if (std::find(before.targets.begin(), before.targets.end(), target) == before.targets.end()) {
          added += " " + describeSocket(target) + ";";
        }
      }
      std::printf("fds: before %d after %d memfd %d new:%s\n", before.all, after.all, after.memfds, added.c_str());
      return 3;
    }
    std::fill(data.begin(), data.end(), 1.0f);
    lastReturn = std::chrono::steady_clock::now();
    if (iteration == 3) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
  }
}

int latency(const Job& job, size_t count, int iterations) {
  std::vector<float> data(count, 1.0f);
  std::vector<double> times;
  for (int i = -iterations / 5 - 10; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (loomAllReduce(data.data(), data.data(), count, loomFloat32, loomSum, job.comm, nullptr) != loomSuccess) {
      std::fprintf(stderr, "error: %s\n", loomGetLastError(job.comm));
      return 3;
    }
    if (i >= 0) times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  if (job.rank == 0 && !times.empty()) std::printf("median_us %.2f\n", times[times.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "check" && mode != "deterministic" && mode != "loop" && mode != "latency") {
    std::fprintf(stderr, "usage: host_rank check [BIG_COUNT] | deterministic | loop COUNT | latency COUNT N\n");
    return 64;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const OpenFiles before = openFiles();
  Job job;
  if (!join(job)) return 2;
  int code = 0;
  try {
    if (mode == "check") code = check(job, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 65539);
    if (mode == "deterministic") code = deterministic(job);
    if (mode == "loop") return loop(job, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024, before);
    if (mode == "latency") {
      code = latency(job, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2, argc > 3 ? std::atoi(argv[3]) : 2000);
    }
  } catch (const std::exception& error) {
    std::printf("FAIL a call failed: %s\n", error.what());
    loomCommAbort(job.comm);
    return 3;
  }
  if (loomCommDestroy(job.comm) != loomSuccess) {
    std::printf("FAIL destroy: %s\n", loomGetLastError(nullptr));
    return 3;
  }
  return code;
}
