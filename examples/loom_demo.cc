// SPDX-License-Identifier: Apache-2.0
// The README's main job: under `loomrun -n N`, run every collective on a few sizes, verify
// every result exactly, and print a short summary (time = slowest rank, median of 5 runs).
//   loomrun -n 4 build/examples/loom_demo [--max-mib M]
#include <loom.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

#define CHECK(call)                                                                         \
  do {                                                                                      \
    loomResult_t result_ = (call);                                                          \
    if (result_ != loomSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s: %s\n", #call, loomGetErrorString(result_),        \
                   loomGetLastError(nullptr));                                              \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

struct Case {
  const char* name;
  double busFactor;  // nccl-tests' bus bandwidth factor for n ranks
};

// Input of rank r at element i: small integers, so every sum is exact in float32.
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * ((i % 13) + 1)); }

// Checks recv against the exact expected result; elements a collective leaves alone are skipped.
bool verify(std::string_view name, const std::vector<float>& recv, int rank, int n, int root, size_t block) {
  const double ranksSum = n * (n + 1) / 2.0;
  size_t checked = recv.size();
  if (name == "allgather") checked = n * block;
  if (name == "reducescatter") checked = block;
  if (name == "reduce" && rank != root) checked = 0;
  for (size_t i = 0; i < checked; ++i) {
    float expected = 0;
    if (name == "allreduce" || name == "reduce") expected = static_cast<float>(ranksSum * ((i % 13) + 1));
    else if (name == "allgather") expected = input(static_cast<int>(i / block), i % block);
    else if (name == "reducescatter") expected = static_cast<float>(ranksSum * (((rank * block + i) % 13) + 1));
    else expected = input(root, i);
    if (recv[i] != expected) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t maxMiB = 16;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) maxMiB = std::strtoul(argv[++i], nullptr, 10);
  }
  loomComm_t comm;
  CHECK(loomCommInitFromEnv(&comm));
  int rank = 0, n = 1;
  CHECK(loomCommUserRank(comm, &rank));
  CHECK(loomCommCount(comm, &n));
  const int root = n - 1;

  if (rank == 0) {
    std::printf("Loom demo: %d ranks, float32, every result verified (time: slowest rank, median of 5)\n", n);
    std::printf("%-14s %10s %12s %12s %12s %8s\n", "collective", "bytes", "time (us)", "algbw GB/s",
                "busbw GB/s", "check");
  }
  size_t failures = 0;
  for (size_t bytes = 4096; bytes <= maxMiB * 1024 * 1024; bytes *= 64) {
    const size_t count = bytes / sizeof(float);
    const size_t block = count / n;  // all-gather / reduce-scatter move n blocks
    std::vector<float> send(count), recv(count);
    const Case cases[] = {{"allreduce", 2.0 * (n - 1) / n}, {"allgather", double(n - 1) / n},
                          {"reducescatter", double(n - 1) / n}, {"broadcast", 1}, {"reduce", 1}};
    for (const Case& c : cases) {
      const std::string_view name = c.name;
      std::vector<double> times;
      bool ok = true;
      for (int repeat = 0; repeat < 6; ++repeat) {
        for (size_t i = 0; i < count; ++i) send[i] = input(rank, i);
        std::fill(recv.begin(), recv.end(), -1.0f);
        // Start together: otherwise a rank still checking the last result delays the others.
        int token = 0;
        CHECK(loomAllReduce(&token, &token, 1, loomInt32, loomSum, comm, nullptr));
        auto start = std::chrono::steady_clock::now();
        if (name == "allreduce") CHECK(loomAllReduce(send.data(), recv.data(), count, loomFloat32, loomSum, comm, nullptr));
        if (name == "allgather") CHECK(loomAllGather(send.data(), recv.data(), block, loomFloat32, comm, nullptr));
        if (name == "reducescatter") CHECK(loomReduceScatter(send.data(), recv.data(), block, loomFloat32, loomSum, comm, nullptr));
        if (name == "broadcast") CHECK(loomBroadcast(send.data(), recv.data(), count, loomFloat32, root, comm, nullptr));
        if (name == "reduce") CHECK(loomReduce(send.data(), recv.data(), count, loomFloat32, loomSum, root, comm, nullptr));
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (repeat > 0) times.push_back(seconds);  // the first run warms up
        ok = ok && verify(name, recv, rank, n, root, block);
      }
      std::sort(times.begin(), times.end());
      double slowest = times[times.size() / 2];
      CHECK(loomAllReduce(&slowest, &slowest, 1, loomFloat64, loomMax, comm, nullptr));
      int wrong = ok ? 0 : 1;
      CHECK(loomAllReduce(&wrong, &wrong, 1, loomInt32, loomSum, comm, nullptr));
      failures += wrong;
      const double moved = name == "allgather" || name == "reducescatter" ? double(block) * n * 4 : double(bytes);
      if (rank == 0) {
        std::printf("%-14s %10zu %12.1f %12.3f %12.3f %8s\n", c.name, bytes, slowest * 1e6,
                    moved / slowest / 1e9, moved / slowest / 1e9 * c.busFactor,
                    wrong ? "WRONG" : "ok");
      }
    }
  }
  if (rank == 0) {
    std::printf("%s: %zu collective/size combinations wrong\n", failures ? "FAILED" : "PASSED", failures);
  }
  CHECK(loomCommDestroy(comm));
  return failures ? 1 : 0;
}
