// SPDX-License-Identifier: Apache-2.0
// The multi-process collective suites' engine (collective_checks.h), compiled once into the
// tests' support library.
#include "tests/mp/collective_checks.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "loom.h"
#include "tests/mp/collective_data.h"
#include "tests/support/multiprocess.h"

namespace loom::test {

std::vector<int> rootsFor(int n) {
  std::vector<int> roots = {0, n / 2, n - 1};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

std::vector<Case> buildCases(int n, const MatrixOptions& options) {
  std::vector<Case> cases;
  for (size_t count : options.smallCounts) {
    for (loomDataType_t t : options.smallTypes) {
      for (bool ip : {false, true}) {
        for (loomRedOp_t op : allOps()) {
          cases.push_back({Coll::AllReduce, t, op, ip, count, 0});
          cases.push_back({Coll::ReduceScatter, t, op, ip, count, 0});
          for (int root : rootsFor(n)) cases.push_back({Coll::Reduce, t, op, ip, count, root});
        }
        cases.push_back({Coll::AllGather, t, loomSum, ip, count, 0});
        for (int root : rootsFor(n))
          cases.push_back({Coll::Broadcast, t, loomSum, ip, count, root});
      }
      cases.push_back({Coll::Reduce, t, loomSum, false, count, n - 1, true});
      cases.push_back({Coll::Broadcast, t, loomSum, false, count, n - 1, true});
    }
  }
  const size_t big = options.bigCount;
  if (big == 0) return cases;
  // Reduced matrix at the big count: every type with sum and every op with float32 and int32
  // (allreduce). Reduce-scatter and allgather move n * count elements per rank, so most of
  // their big cases use ~big/n per rank (odd, so chunks stay unaligned): same total bytes.
  const size_t spread = (big / n) | 1;
  for (loomDataType_t t : allTypes()) {
    cases.push_back({Coll::AllReduce, t, loomSum, false, big, 0});
    cases.push_back({Coll::ReduceScatter, t, loomSum, false, spread, 0});
  }
  // Broadcast and allgather only move bytes: one type per element size is enough.
  for (loomDataType_t t : {loomInt8, loomBfloat16, loomFloat32, loomUint64}) {
    cases.push_back({Coll::Broadcast, t, loomSum, false, big, n - 1});
  }
  for (loomDataType_t t : {loomFloat32, loomInt32}) {
    for (loomRedOp_t op : allOps()) {
      if (op != loomSum) cases.push_back({Coll::AllReduce, t, op, false, big, 0});
      if (op != loomSum) cases.push_back({Coll::ReduceScatter, t, op, false, spread, 0});
    }
  }
  cases.push_back({Coll::AllReduce, loomFloat32, loomSum, true, big, 0});
  cases.push_back({Coll::ReduceScatter, loomFloat32, loomSum, false, big, 0});
  cases.push_back({Coll::ReduceScatter, loomBfloat16, loomSum, true, big, 0});
  cases.push_back({Coll::AllGather, loomInt8, loomSum, false, big, 0});
  cases.push_back({Coll::AllGather, loomFloat16, loomSum, true, spread, 0});
  cases.push_back({Coll::AllGather, loomFloat64, loomSum, false, spread, 0});
  cases.push_back({Coll::Broadcast, loomFloat32, loomSum, true, big, 0});
  cases.push_back({Coll::Reduce, loomFloat32, loomAvg, false, big, n - 1});
  cases.push_back({Coll::Reduce, loomUint8, loomProd, true, big, n / 2});
  cases.push_back({Coll::Reduce, loomFloat64, loomMax, false, big, 0, true});
  return cases;
}

// This thread's buffers, reused by every case (send, recv, copy of send).
std::array<std::vector<uint8_t>, 3>& caseArenas() {
  thread_local std::array<std::vector<uint8_t>, 3> arenas;
  return arenas;
}

// Sizes the arenas once for the largest case: growing them case by case costs a memset and a
// round of page faults per step.
void reserveCaseArenas(const std::vector<Case>& cases, int n) {
  size_t largest = 0;
  for (const Case& c : cases) {
    static const size_t kTypeBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    const size_t perRank = c.count * kTypeBytes[c.type];
    const bool gathers = c.coll == Coll::AllGather || c.coll == Coll::ReduceScatter;
    largest = std::max(largest, gathers ? perRank * n : perRank);
  }
  for (std::vector<uint8_t>& arena : caseArenas()) {
    if (arena.size() < largest + 2 * GuardedBuffer::kGuard) {
      arena.resize(largest + 2 * GuardedBuffer::kGuard);
    }
  }
}

uint64_t hashBytes(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix64(h ^ w);
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

namespace {

// Compares got[begin, end) against expected(i); describes the first few mismatches.
template <class T, class Expected>
size_t compareElements(const T* got, size_t begin, size_t end, Expected expected,
                       std::string* report) {
  size_t bad = 0;
  for (size_t i = begin; i < end; ++i) {
    const T want = expected(i);
    if (std::memcmp(&got[i], &want, sizeof(T)) == 0) continue;
    if (++bad <= 3) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, &got[i], sizeof(T));
      std::memcpy(&w, &want, sizeof(T));
      char line[160];
      std::snprintf(line, sizeof line, " [%zu] got 0x%llx (%g) want 0x%llx (%g);", i,
                    (unsigned long long)g, double(toWide(got[i])), (unsigned long long)w,
                    double(toWide(want)));
      *report += line;
    }
  }
  return bad;
}

constexpr size_t kSliceCheckFrom = 100000;

// One case with elements of type T (runCase below).
template <class T>
std::string runCaseTyped(const Case& c, uint64_t seed, int rank, int n, loomComm_t comm,
                         uint64_t* resultHash, double* callSeconds) {
  const size_t count = c.count, es = sizeof(T);
  const bool isRoot = rank == c.root;
  const Distribution dist = c.reducing() ? distributionFor(c.op, kIsFloat<T>) : Distribution::Bits;
  auto input = [&](int r, size_t i) { return generate<T>(dist, seed, r, n, i); };
  auto reduced = [&](size_t i) { return reduceReference<T>(c.op, seed, n, i); };
  const size_t inCount = c.coll == Coll::ReduceScatter ? count * n : count;
  const size_t outCount = c.coll == Coll::AllGather ? count * n : count;
  // In place, the input lives inside the output (allgather) or the output inside the input
  // (reduce-scatter); otherwise they are separate buffers.
  auto& [sendArena, recvArena, copyArena] = caseArenas();
  const bool feedsInput = c.coll != Coll::Broadcast || isRoot;
  GuardedBuffer sendBuf(sendArena, c.inPlace ? 0 : inCount * es, /*fill=*/!feedsInput);
  GuardedBuffer recvBuf(recvArena, std::max(inCount, outCount) * es);
  T* recv = reinterpret_cast<T*>(recvBuf.data());
  T* send = c.inPlace ? recv : reinterpret_cast<T*>(sendBuf.data());
  if (c.inPlace && c.coll == Coll::AllGather) send = recv + size_t(rank) * count;
  if (feedsInput) {
    for (size_t i = 0; i < inCount; ++i) send[i] = input(rank, i);
  }
  // Out of place, the (const) send buffer must come back unchanged: keep a copy to compare.
  const size_t sendBytes = feedsInput && !c.inPlace ? inCount * es : 0;
  if (copyArena.size() < sendBytes) copyArena.resize(sendBytes);
  if (sendBytes) std::memcpy(copyArena.data(), send, sendBytes);
  const void* sendArg = send;
  void* recvArg = recv;
  T* out = recv;
  if (c.coll == Coll::ReduceScatter && c.inPlace) out = recv + size_t(rank) * count;
  recvArg = out;
  if (c.nullOnNonRoot && !isRoot && c.coll == Coll::Reduce) recvArg = nullptr;
  if (c.nullOnNonRoot && !isRoot && c.coll == Coll::Broadcast) sendArg = nullptr;

  loomResult_t rc = loomSuccess;
  const auto callStart = std::chrono::steady_clock::now();
  switch (c.coll) {
    case Coll::AllReduce:
      rc = loomAllReduce(sendArg, recvArg, count, c.type, c.op, comm, nullptr);
      break;
    case Coll::AllGather:
      rc = loomAllGather(sendArg, recvArg, count, c.type, comm, nullptr);
      break;
    case Coll::ReduceScatter:
      rc = loomReduceScatter(sendArg, recvArg, count, c.type, c.op, comm, nullptr);
      break;
    case Coll::Broadcast:
      rc = loomBroadcast(sendArg, recvArg, count, c.type, c.root, comm, nullptr);
      break;
    case Coll::Reduce:
      rc = loomReduce(sendArg, recvArg, count, c.type, c.op, c.root, comm, nullptr);
      break;
  }
  *callSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - callStart).count();
  LOOM_REQUIRE(rc == loomSuccess,
               c.name() + " returned " + loomGetErrorString(rc) + ": " + loomGetLastError(comm));

  // Replicated results of big cases: each rank checks its 1/n slice against the reference and
  // the parent checks that all ranks hold identical bytes, which together cover every element
  // at 1/n of the reference cost.
  size_t begin = 0, end = outCount;
  if (c.replicated() && outCount >= kSliceCheckFrom) {
    begin = outCount * rank / n;
    end = outCount * (rank + 1) / n;
  }
  std::string report;
  size_t bad = 0;
  switch (c.coll) {
    case Coll::AllReduce:
      bad = compareElements(out, begin, end, reduced, &report);
      break;
    case Coll::ReduceScatter:
      bad = compareElements(
          out, 0, count, [&](size_t i) { return reduced(rank * count + i); }, &report);
      break;
    case Coll::AllGather:
      bad = compareElements(
          out, begin, end, [&](size_t i) { return input(int(i / count), i % count); }, &report);
      break;
    case Coll::Broadcast:
      bad = compareElements(
          out, begin, end, [&](size_t i) { return input(c.root, i); }, &report);
      break;
    case Coll::Reduce:
      if (isRoot) {
        bad = compareElements(out, 0, count, reduced, &report);
      } else if (c.inPlace) {  // recvbuff is written on root only: our input must be intact
        bad = compareElements(
            out, 0, count, [&](size_t i) { return input(rank, i); }, &report);
      } else {  // the untouched fill pattern
        for (size_t i = 0; i < count * es; ++i) bad += recvBuf.data()[i] != GuardedBuffer::kFill;
        if (bad) report += " non-root recvbuff was written;";
      }
      break;
  }
  if (bad) report = std::to_string(bad) + " wrong elements:" + report;
  if (!sendBuf.guardsIntact() || !recvBuf.guardsIntact()) report += " wrote outside its buffer;";
  if (sendBytes && std::memcmp(copyArena.data(), send, sendBytes) != 0) {
    report += " modified the (const) send buffer;";
  }
  *resultHash = hashBytes(out, outCount * es);
  return report;
}

}  // namespace

std::string runCase(const Case& c, uint64_t seed, int rank, int n, loomComm_t comm,
                           uint64_t* hash, double* callSeconds) {
  switch (c.type) {
    case loomInt8:
      return runCaseTyped<int8_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomUint8:
      return runCaseTyped<uint8_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomInt32:
      return runCaseTyped<int32_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomUint32:
      return runCaseTyped<uint32_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomInt64:
      return runCaseTyped<int64_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomUint64:
      return runCaseTyped<uint64_t>(c, seed, rank, n, comm, hash, callSeconds);
    case loomFloat16:
      return runCaseTyped<Half>(c, seed, rank, n, comm, hash, callSeconds);
    case loomFloat32:
      return runCaseTyped<float>(c, seed, rank, n, comm, hash, callSeconds);
    case loomFloat64:
      return runCaseTyped<double>(c, seed, rank, n, comm, hash, callSeconds);
    case loomBfloat16:
      return runCaseTyped<BFloat16>(c, seed, rank, n, comm, hash, callSeconds);
    default:
      return "unsupported type in test";
  }
}

// ---- /dev/shm hygiene -----------------------------------------------------------------------
std::vector<std::string> loomShmEntries() {
  std::vector<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) {
      if (std::strncmp(entry->d_name, "loom", 4) == 0) names.push_back(entry->d_name);
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Segments that appeared since `before` and are still there after a short grace period (other
// test binaries may run concurrently and own short-lived segments of their own).
std::vector<std::string> leakedShmSegments(const std::vector<std::string>& before) {
  std::vector<std::string> leaked;
  for (int attempt = 0; attempt < 20; ++attempt) {
    leaked.clear();
    for (const std::string& name : loomShmEntries()) {
      if (!std::binary_search(before.begin(), before.end(), name)) leaked.push_back(name);
    }
    if (leaked.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return leaked;
}

// ---- Per-rank body and parent-side checks ----------------------------------------------------
// One rank: join, run every case in order, write "<case> <hash>" for replicated results to
// hashFile, and throw at the end if any case was wrong (after finishing all, so that the
// other ranks are never left waiting in a collective we skipped).
void runCollectiveRank(int rank, int n, const loomUniqueId& id, const MatrixOptions& options,
                              const std::string& hashFile) {
  loomConfig_t config = LOOM_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;  // a bug must fail the test, not hang it
  config.commName = "collective-suite";
  loomComm_t comm = nullptr;
  loomResult_t rc = loomCommInitRankConfig(&comm, n, id, rank, &config);
  LOOM_REQUIRE(rc == loomSuccess,
               std::string("init: ") + loomGetErrorString(rc) + ": " + loomGetLastError(nullptr));
  int count = -1, user = -1;
  LOOM_REQUIRE(loomCommCount(comm, &count) == loomSuccess && count == n, "loomCommCount");
  LOOM_REQUIRE(loomCommUserRank(comm, &user) == loomSuccess && user == rank, "loomCommUserRank");
  std::ofstream hashes(hashFile);
  std::string failures;
  size_t failed = 0;
  const std::vector<Case> cases = buildCases(n, options);
  reserveCaseArenas(cases, n);
  // Where the time goes (printed by rank 0): inside the library calls vs the whole case.
  double callSeconds[2] = {0, 0}, caseSeconds[2] = {0, 0};
  for (size_t k = 0; k < cases.size(); ++k) {
    uint64_t hash = 0;
    const int big = cases[k].count > 1000;
    const auto caseStart = std::chrono::steady_clock::now();
    const std::string problem =
        runCase(cases[k], mix64(k + 1000 * n), rank, n, comm, &hash, &callSeconds[big]);
    caseSeconds[big] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - caseStart).count();
    if (!problem.empty() && ++failed <= 20) failures += "\n  " + cases[k].name() + ":" + problem;
    if (cases[k].replicated()) hashes << cases[k].name() << ' ' << hash << '\n';
  }
  hashes.close();
  if (rank == 0) {
    std::printf("  rank 0: counts<=1000 %.2f s (%.2f s in loom), big %.2f s (%.2f s in loom)\n",
                caseSeconds[0], callSeconds[0], caseSeconds[1], callSeconds[1]);
  }
  rc = loomCommDestroy(comm);
  LOOM_REQUIRE(rc == loomSuccess, std::string("destroy: ") + loomGetErrorString(rc));
  LOOM_REQUIRE(failed == 0, std::to_string(failed) + " of " + std::to_string(cases.size()) +
                                " cases wrong on rank " + std::to_string(rank) + ":" + failures);
}

// Returns a description of the first case whose result differs between ranks ("" if none).
std::string compareHashFiles(const std::vector<std::string>& files) {
  std::vector<std::string> reference;
  for (size_t r = 0; r < files.size(); ++r) {
    std::ifstream in(files[r]);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (r == 0) reference = lines;
    if (lines.size() != reference.size()) {
      return "rank " + std::to_string(r) + " reported " + std::to_string(lines.size()) +
             " results, rank 0 " + std::to_string(reference.size());
    }
    for (size_t k = 0; k < lines.size(); ++k) {
      if (lines[k] != reference[k])
        return "rank " + std::to_string(r) + ": " + lines[k] + " vs rank 0: " + reference[k];
    }
  }
  return "";
}

// The parent side of one suite run with n ranks: rendezvous id, fork, collect, compare.
void runCollectiveSuite(int n, const MatrixOptions& options) {
  setenv("LOOM_SOCKET_IFNAME", "lo", 0);
  const std::vector<std::string> shmBefore = loomShmEntries();
  char dirTemplate[] = "/tmp/loom-hashes-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  std::vector<std::string> files;
  for (int r = 0; r < n; ++r) files.push_back(dir + "/rank" + std::to_string(r));
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = loom::test::runRanksWithUniqueId(
      n, [&](int rank, const loomUniqueId& id) { runCollectiveRank(rank, n, id, options, files[rank]); }, 240);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("n=%d: %zu cases in %.2f s\n", n, buildCases(n, options).size(), seconds);
  bool allOk = true;
  for (const RankOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.ok()) << outcome.describe();
    allOk = allOk && outcome.ok();
  }
  if (allOk) {
    EXPECT_EQ(compareHashFiles(files), "") << "results differ between ranks";
  }
  for (const std::string& file : files) std::remove(file.c_str());
  rmdir(dir.c_str());
  EXPECT_EQ(leakedShmSegments(shmBefore), std::vector<std::string>{})
      << "shared-memory segments left behind in /dev/shm";
}

}  // namespace loom::test
