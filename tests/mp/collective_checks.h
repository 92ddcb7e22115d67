// SPDX-License-Identifier: Apache-2.0
// Shared by the multi-process collective suites (shm and socket): the case matrix, the per-rank
// runner that walks it inside ONE communicator (fork once per rank count, loop inside), and the
// parent-side checks (every rank exited cleanly, identical results, no leaked /dev/shm segments).
// Compiled once, into the tests' support library (collective_checks.cc): its loops over every
// element run at the build's optimisation, also where the test programs' own code has none.
#pragma once

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

// ---- Cases ----------------------------------------------------------------------------------
enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce };

struct Case {
  Coll coll;
  loomDataType_t type;
  loomRedOp_t op;  // reducing collectives only
  bool inPlace;
  size_t count;                // per-rank count (NCCL's count / sendcount / recvcount)
  int root;                    // broadcast / reduce only
  bool nullOnNonRoot = false;  // reduce: recvbuff NULL off root; broadcast: sendbuff NULL off root

  bool reducing() const { return coll != Coll::AllGather && coll != Coll::Broadcast; }
  bool rooted() const { return coll == Coll::Broadcast || coll == Coll::Reduce; }
  // Every rank ends with the same bytes (compared across ranks by the parent).
  bool replicated() const { return coll != Coll::ReduceScatter && coll != Coll::Reduce; }
  std::string name() const {
    static const char* const colls[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                        "reduce"};
    std::string s = std::string(colls[int(coll)]) + "/" + typeName(type);
    if (reducing()) s += std::string("/") + opName(op);
    if (rooted()) s += "/root" + std::to_string(root);
    s += inPlace ? "/inplace" : "/outofplace";
    if (nullOnNonRoot) s += "/null-off-root";
    return s + "/count" + std::to_string(count);
  }
};

// What to run: the full matrix at `smallCounts` and a reduced one at `bigCount` (0 = none).
struct MatrixOptions {
  std::vector<size_t> smallCounts{0, 1, 7, 1000};
  size_t bigCount = 1000003;
  std::vector<loomDataType_t> smallTypes = allTypes();
};

// ---- Buffers with guard zones: a collective must write exactly its output range --------------
// The storage is an arena reused from case to case: fresh allocations of tens of MB per case
// cost more in page faults than the collectives themselves.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kFill = 0xA5;  // what an untouched output byte holds
  // `fill`: set the body to kFill (skipped for buffers the caller overwrites entirely).
  GuardedBuffer(std::vector<uint8_t>& arena, size_t bytes, bool fill = true)
      : bytes_(bytes), storage_(arena) {
    if (storage_.size() < bytes + 2 * kGuard) storage_.resize(bytes + 2 * kGuard);
    std::memset(storage_.data(), 0xEE, kGuard);
    if (fill) std::memset(storage_.data() + kGuard, kFill, bytes);
    std::memset(storage_.data() + kGuard + bytes, 0xEE, kGuard);
  }
  uint8_t* data() { return storage_.data() + kGuard; }
  size_t bytes() const { return bytes_; }
  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (storage_[i] != 0xEE || storage_[kGuard + bytes_ + i] != 0xEE) return false;
    }
    return true;
  }

 private:
  size_t bytes_;
  std::vector<uint8_t>& storage_;
};

// The three root positions a rooted collective is tried at: first, middle, last.
std::vector<int> rootsFor(int n);
// Every case of the matrix `options` names, for n ranks.
std::vector<Case> buildCases(int n, const MatrixOptions& options);

// This thread's buffers, reused by every case (send, recv, copy of send).
std::array<std::vector<uint8_t>, 3>& caseArenas();
// Sizes the arenas once for the largest case: growing them case by case costs a memset and a
// round of page faults per step.
void reserveCaseArenas(const std::vector<Case>& cases, int n);

uint64_t hashBytes(const void* data, size_t bytes);

// Runs one case on this rank; returns "" on success or a description of what was wrong. A
// collective that returns an error throws: the ranks can no longer stay in step.
std::string runCase(const Case& c, uint64_t seed, int rank, int n, loomComm_t comm, uint64_t* hash,
                    double* callSeconds);

// ---- /dev/shm hygiene -----------------------------------------------------------------------
std::vector<std::string> loomShmEntries();
// Segments that appeared since `before` and are still there after a short grace period (other
// test binaries may run concurrently and own short-lived segments of their own).
std::vector<std::string> leakedShmSegments(const std::vector<std::string>& before);

// ---- Per-rank body and parent-side checks ----------------------------------------------------
// One rank: join, run every case in order, write "<case> <hash>" for replicated results to
// hashFile, and throw at the end if any case was wrong (after finishing all, so that the
// other ranks are never left waiting in a collective we skipped).
void runCollectiveRank(int rank, int n, const loomUniqueId& id, const MatrixOptions& options,
                       const std::string& hashFile);
// Returns a description of the first case whose result differs between ranks ("" if none).
std::string compareHashFiles(const std::vector<std::string>& files);
// The parent side of one suite run with n ranks: rendezvous id, fork, collect, compare.
void runCollectiveSuite(int n, const MatrixOptions& options);

}  // namespace loom::test
