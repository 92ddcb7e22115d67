// SPDX-License-Identifier: Apache-2.0
// Soak (issue 5): 4 ranks run a long random sequence of collectives in one communicator —
// random collective, datatype, op, root, in-place or not, and a size skewed towards small
// messages but reaching 4 MiB (odd counts included) — and every result is checked exactly.
// The sequence comes from one seeded PRNG, drawn before the ranks fork, so every rank runs the
// same one (the seed is printed; LOOM_SOAK_SEED replays it). LOOM_SOAK_ITERATIONS sets the length
// (default kDefaultIterations, sized for CI under ASan); tests/soak.sh runs the full 10,000. Runs
// once over the default transport (shared memory and the direct engine) and once over TCP with a
// third of the iterations.
//
// Data and checks are collective_checks.h's: integer-valued data that is exact in every type,
// compared bit for bit. Replicated results of 100k+ elements are checked slice by slice (each
// rank its 1/n) and the parent then requires every rank's hash of the whole output to agree.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/mp/collective_checks.h"

namespace loom::test {
namespace {

constexpr int kRanks = 4;
constexpr size_t kMaxBytes = size_t{4} << 20;  // the largest buffer of any call
constexpr size_t kDefaultIterations = 1000;
constexpr size_t kElementBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};  // by loomDataType_t

size_t envCount(const char* name, size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == 0) return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (end == text || *end != 0) throw std::invalid_argument(std::string(name) + " is not a number");
  return static_cast<size_t>(value);
}

uint64_t soakSeed() {
  const char* text = std::getenv("LOOM_SOAK_SEED");
  if (text != nullptr && *text != 0) return envCount("LOOM_SOAK_SEED", 0);
  return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

// splitmix64 over a counter: the same sequence in every process for the same seed.
class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return mix64(state_++); }
  size_t below(size_t bound) { return static_cast<size_t>(next() % bound); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Buffer bytes skewed towards small calls: 5% empty or single elements, 55% up to 16 KiB (the
// direct engine's eager path), 28% up to 512 KiB, 10% up to 4 MiB, 2% exactly the maximum.
size_t drawBytes(Prng& prng) {
  const size_t bucket = prng.below(100);
  auto logUniform = [&](double lo, double hi) {
    return static_cast<size_t>(
        std::exp(std::log(lo) + prng.unit() * (std::log(hi) - std::log(lo))));
  };
  if (bucket < 5) return 0;
  if (bucket < 60) return logUniform(1, 16 << 10);
  if (bucket < 88) return logUniform(16 << 10, 512 << 10);
  if (bucket < 98) return logUniform(512 << 10, kMaxBytes);
  return kMaxBytes;
}

Case drawCase(Prng& prng, int n) {
  Case c{};
  c.coll = static_cast<Coll>(prng.below(5));
  c.type = allTypes()[prng.below(allTypes().size())];
  c.op = c.reducing() ? allOps()[prng.below(allOps().size())] : loomSum;
  c.root = c.rooted() ? static_cast<int>(prng.below(n)) : 0;
  c.inPlace = prng.below(2) == 1;
  c.nullOnNonRoot = c.rooted() && !c.inPlace && prng.below(8) == 0;
  // Allgather's output and reduce-scatter's input are n counts long: they get the same bytes.
  const bool gathers = c.coll == Coll::AllGather || c.coll == Coll::ReduceScatter;
  const size_t unit = kElementBytes[c.type] * (gathers ? n : 1);
  const size_t bytes = drawBytes(prng);
  size_t count = std::max<size_t>(bytes / unit, 1);
  if (bytes == 0) count = prng.below(2);  // 0 or 1 element
  if (count > 1 && prng.below(2) == 0) count |= 1;
  if (count * unit > kMaxBytes) count = kMaxBytes / unit - (prng.below(2) == 0 ? 1 : 0);
  c.count = count;
  return c;
}

std::vector<Case> drawCases(uint64_t seed, size_t iterations, int n) {
  Prng prng(seed);
  std::vector<Case> cases;
  cases.reserve(iterations);
  for (size_t k = 0; k < iterations; ++k) cases.push_back(drawCase(prng, n));
  return cases;
}

std::string describe(size_t k, size_t iterations, const Case& c) {
  return "iteration " + std::to_string(k) + " of " + std::to_string(iterations) + ": " + c.name();
}

// Mapped shared before the fork: every rank's hash of every replicated result.
class SharedHashes {
 public:
  explicit SharedHashes(size_t entries) : bytes_(std::max<size_t>(entries, 1) * sizeof(uint64_t)) {
    void* memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap of the shared hash table failed");
    hashes_ = static_cast<uint64_t*>(memory);
  }
  ~SharedHashes() { munmap(hashes_, bytes_); }
  SharedHashes(const SharedHashes&) = delete;
  SharedHashes& operator=(const SharedHashes&) = delete;
  uint64_t& at(size_t k, int rank) { return hashes_[k * kRanks + rank]; }

 private:
  size_t bytes_;
  uint64_t* hashes_;
};

// One rank: one communicator, every case in order; wrong results are collected (the ranks must
// stay in step) and reported at the end. A call that returns an error throws at once.
void soakRank(int rank, const loomUniqueId& id, const std::vector<Case>& cases, uint64_t seed,
              SharedHashes& hashes, bool tcp) {
  if (tcp) {
    setenv("LOOM_SHM_DISABLE", "1", 1);
  } else {
    unsetenv("LOOM_SHM_DISABLE");
  }
  // Sized for the largest call and touched once (vector zero-fills): page faults are slow here.
  for (std::vector<uint8_t>& arena : caseArenas()) {
    arena.resize(kMaxBytes + 2 * GuardedBuffer::kGuard);
  }
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;  // a bug must fail the test, not hang it
  config.commName = "soak";
  loomComm_t comm = nullptr;
  const loomResult_t rc = loomCommInitRankConfig(&comm, kRanks, id, rank, &config);
  LOOM_REQUIRE(rc == loomSuccess,
               std::string("init: ") + loomGetErrorString(rc) + ": " + loomGetLastError(nullptr));
  std::string failures;
  size_t failed = 0;
  std::array<size_t, 5> calls{};
  std::array<double, 5> callSeconds{};
  const auto start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    uint64_t hash = 0;
    std::string problem;
    try {
      problem = runCase(c, mix64(seed ^ (k * 0x9e3779b97f4a7c15ull)), rank, kRanks, comm, &hash,
                        &callSeconds[int(c.coll)]);
    } catch (const std::exception& error) {
      throw std::runtime_error(describe(k, cases.size(), c) + ": " + error.what());
    }
    ++calls[int(c.coll)];
    if (c.replicated()) hashes.at(k, rank) = hash;
    if (!problem.empty() && ++failed <= 20) {
      failures += "\n  " + describe(k, cases.size(), c) + ":" + problem;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank == 0) {
    static const char* const names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce"};
    double inLoom = 0;
    std::string perColl;
    for (int i = 0; i < 5; ++i) {
      char part[80];
      std::snprintf(part, sizeof part, " %s %zu (%.2f s)", names[i], calls[i], callSeconds[i]);
      perColl += part;
      inLoom += callSeconds[i];
    }
    std::printf("  rank 0: %zu calls in %.2f s, %.2f s inside Loom:%s\n", cases.size(), seconds,
                inLoom, perColl.c_str());
  }
  LOOM_REQUIRE(loomCommDestroy(comm) == loomSuccess, "loomCommDestroy failed");
  LOOM_REQUIRE(failed == 0, std::to_string(failed) + " of " + std::to_string(cases.size()) +
                                " calls wrong on rank " + std::to_string(rank) + ":" + failures);
}

void runSoak(size_t iterations, bool tcp) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const uint64_t seed = soakSeed();
  const std::vector<Case> cases = drawCases(seed, iterations, kRanks);
  size_t bytes = 0, largest = 0;
  for (const Case& c : cases) {
    const bool gathers = c.coll == Coll::AllGather || c.coll == Coll::ReduceScatter;
    const size_t callBytes = c.count * kElementBytes[c.type] * (gathers ? kRanks : 1);
    bytes += callBytes;
    largest = std::max(largest, callBytes);
  }
  std::printf(
      "soak over %s: %d ranks, %zu calls, %.1f MiB in all, largest %zu bytes, seed 0x%016" PRIx64
      " (LOOM_SOAK_SEED=0x%016" PRIx64 " replays it)\n",
      tcp ? "TCP" : "the default transport", kRanks, iterations, bytes / 1048576.0, largest, seed,
      seed);
  std::fflush(stdout);
  const std::vector<std::string> shmBefore = loomShmEntries();
  SharedHashes hashes(iterations * kRanks);
  const auto start = std::chrono::steady_clock::now();
  // Generous: the communicator's own 60 s timeout turns a hang into an error long before.
  const int timeoutSeconds = static_cast<int>(std::min<size_t>(120 + iterations, 36000));
  const auto outcomes = runRanksWithUniqueId(
      kRanks,
      [&](int rank, const loomUniqueId& id) { soakRank(rank, id, cases, seed, hashes, tcp); },
      timeoutSeconds);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("soak over %s: %zu calls in %.2f s (seed 0x%016" PRIx64 ")\n",
              tcp ? "TCP" : "the default transport", iterations, seconds, seed);
  bool allOk = true;
  for (const RankOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.ok()) << outcome.describe() << " (seed 0x" << std::hex << seed << std::dec
                              << ")";
    allOk = allOk && outcome.ok();
  }
  if (allOk) {
    size_t differing = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      if (!cases[k].replicated()) continue;
      for (int rank = 1; rank < kRanks; ++rank) {
        if (hashes.at(k, rank) == hashes.at(k, 0)) continue;
        if (++differing <= 10) {
          ADD_FAILURE() << describe(k, cases.size(), cases[k]) << ": rank " << rank
                        << "'s result differs from rank 0's (seed 0x" << std::hex << seed
                        << std::dec << ")";
        }
        break;
      }
    }
    EXPECT_EQ(differing, 0u) << "calls whose results differ between ranks";
  }
  EXPECT_EQ(leakedShmSegments(shmBefore), std::vector<std::string>{})
      << "shared-memory segments left behind in /dev/shm";
}

TEST(Soak, RandomCollectivesOverTheDefaultTransport) {
  runSoak(envCount("LOOM_SOAK_ITERATIONS", kDefaultIterations), /*tcp=*/false);
}

TEST(Soak, RandomCollectivesOverTcp) {
  runSoak(std::max<size_t>(1, envCount("LOOM_SOAK_ITERATIONS", kDefaultIterations) / 3),
          /*tcp=*/true);
}

}  // namespace
}  // namespace loom::test
